"""The failure-handling changelog of a run with several releases of an SDK.

Per SDK, releases are ordered by version; for each release and the one before it, every cell
(mode, variant, protocol, stream, scenario) whose outcome, model calls or exception type changed
is a change. A cell only one of the two releases can express is not a behaviour change: it is
counted as newly (or no longer) expressible.

Each change is marked worse, better or neutral for the caller (:func:`direction`), by the outcome
order the pick and the gate use (:data:`bench.report.matrix.OUTCOME_ORDER`), and a step tells its
worse changes first.

What a reader is told is grouped, because the question is "what changes for my code", not which
protocol and stream: a step's changes are grouped by scenario (under its fault family) and
transition, with how many of the scenario's cells moved (:class:`Group`); a change of exception
class is told once per class pair, with whether an ``except`` for the old class still catches the
new one (:class:`Rename`, decided on the real classes by :mod:`bench.report.handlers`). The
release x scenario grid counts the SDK's supported cells per behaviour (:class:`Tally`): a cell
whose cells disagree shows each behaviour with its count, so no tie is ever shown as a majority.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import pairwise

import pandas as pd
from packaging.version import Version

from bench.core.vocabulary import Outcome
from bench.report.handlers import Compatibility, Raised, check_raised, short
from bench.report.matrix import OUTCOME_ORDER, family_rank, fault_family, majority, outcome_rank, scenario_order
from bench.report.terminal import token

KEY = ["mode", "variant", "protocol", "stream", "scenario"]
WIDTH = 120
"""Every line of the markdown fits this many columns (a test holds the published changelog to it)."""


@dataclass(frozen=True)
class Behaviour:
    """What one cell did on one release (the majority over repetitions)."""

    outcome: str
    model_calls: int | None
    exception_type: str | None

    def __str__(self) -> str:
        calls = "" if self.model_calls is None else f" ({self.model_calls})"
        exception = f" {self.exception_type.rsplit('.', 1)[-1]}" if self.exception_type else ""
        return f"{self.outcome}{exception}{calls}"

    def phrase(self) -> str:
        """What the caller sees, as the changelog says it: ``raises ContentFilterError (1 call)``."""
        text = f"raises {short(self.exception_type or '?')}" if self.outcome == Outcome.RAISED else self.outcome
        if self.model_calls is None:
            return text
        return f"{text} ({self.model_calls} call{'' if self.model_calls == 1 else 's'})"

    def token(self, letters: dict[str, str]) -> str:
        """The grid's short form: the terminal's token (``r2``, ``x1``), then the letter of the
        exception in ``letters`` (``x1B``)."""
        text = token({"outcome": self.outcome, "model_calls": self.model_calls})
        if self.outcome == Outcome.OK and self.model_calls is not None:
            text += str(self.model_calls)  # a tool scenario's ok takes 2 calls: ok1 and ok2 must differ
        return text + (letters.get(self.exception_type, "?") if self.exception_type else "")


class Direction(StrEnum):
    """What a change is for the caller; told in this order (the worse changes lead)."""

    WORSE = "worse"
    BETTER = "better"
    NEUTRAL = "neutral"


DIRECTIONS = list(Direction)


def direction(was: Behaviour, now: Behaviour) -> Direction:
    """Worse when the outcome moved down :data:`bench.report.matrix.OUTCOME_ORDER` (``outcome_rank``,
    as the pick's worst cell of a family and the gate's regressions read it: ``raises X -> empty``
    is worse), or stayed and took more model calls; better the reverse; neutral when outcome and
    calls are the same (only the exception class changed: told with its handler compatibility)."""
    before, after = outcome_rank(was.outcome), outcome_rank(now.outcome)
    if before != after:
        return Direction.WORSE if after > before else Direction.BETTER
    if was.model_calls is None or now.model_calls is None or was.model_calls == now.model_calls:
        return Direction.NEUTRAL
    return Direction.WORSE if now.model_calls > was.model_calls else Direction.BETTER


DIRECTION_LEGEND = (
    "Each release step tells its changes worse first. worse: the caller now gets an outcome further along "
    + ", ".join(o for o in OUTCOME_ORDER if o not in (Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR))
    + " (the order `bench pick` and `bench gate` rank by), or the same outcome after more model calls; better: "
    "the reverse; neutral: the same outcome and calls (only the exception class changed: listed under "
    "exception class changes, with whether an existing handler still catches the new class)."
)


@dataclass(frozen=True)
class Change:
    sdk: str
    before: str
    after: str
    cell: str
    """``mode / variant / protocol`` (``/ stream`` when streamed)."""
    scenario: str
    was: Behaviour
    now: Behaviour
    key: tuple = ()
    """The cell's (mode, variant, protocol, stream, scenario)."""


@dataclass
class Step:
    """From one release of an SDK to the next one in the run."""

    sdk: str
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)
    newly_expressible: int = 0
    no_longer_expressible: int = 0
    compared: dict[str, list[tuple]] = field(default_factory=dict)
    """Scenario -> the cells both releases express (the "of n cells" of a group)."""


@dataclass(frozen=True)
class Group:
    """The cells of one scenario that changed alike from one release to the next."""

    scenario: str
    family: str
    was: Behaviour
    now: Behaviour
    changes: tuple[Change, ...]
    of: int
    """The scenario's cells both releases express."""
    where: str = ""
    """What the changed cells share that the scenario's other cells do not (``streamed``)."""

    @property
    def direction(self) -> Direction:
        return direction(self.was, self.now)

    @property
    def renamed_only(self) -> bool:
        """Only the exception class changed: told once, with the class pair (:class:`Rename`)."""
        was, now = self.was, self.now
        return (was.outcome, was.model_calls) == (
            now.outcome,
            now.model_calls,
        ) and was.exception_type != now.exception_type

    def line(self) -> str:
        where = f" ({self.where})" if self.where else ""
        counts = f"{len(self.changes)} of {n_cells(self.of)}{where}"
        return f"`{self.scenario}`: {self.was.phrase()} -> {self.now.phrase()}, {counts}"


@dataclass(frozen=True)
class Rename:
    """Cells that raised ``old`` on the older release and ``new`` on the newer one."""

    old: str
    new: str
    scenarios: tuple[tuple[str, int], ...]
    """(scenario, cells), in the order the groups are told."""

    @property
    def cells(self) -> int:
        return sum(n for _, n in self.scenarios)


def with_release(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``release`` column; a pinned in-process row of a version that also ran in
    a release environment keeps its own label, so the two stay apart."""
    frame = runs.copy()
    environment = frame["environment"].fillna("pinned") if "environment" in frame else "pinned"
    frame["release"] = frame["sdk_version"].fillna("?").astype(str)
    pinned = environment == "pinned"
    built = set(frame.loc[~pinned, "release"]) if isinstance(pinned, pd.Series) else set()
    if isinstance(pinned, pd.Series):
        clash = pinned & frame["release"].isin(built)
        frame.loc[clash, "release"] = frame.loc[clash, "release"] + " (pinned)"
    return frame


def releases_of(frame: pd.DataFrame, sdk: str) -> list[str]:
    labels = set(frame.loc[frame["sdk"] == sdk, "release"])
    return sorted(labels, key=release_key)


def release_key(label: str) -> tuple[Version, str]:
    """Releases in version order (``2.68.0 (pinned)`` by its version; a label that is no version first)."""
    try:
        return Version(label.split(" ")[0]), label
    except ValueError:
        return Version("0"), label


def behaviours(frame: pd.DataFrame) -> dict[tuple, Behaviour]:
    """(sdk, release, *KEY) -> the cell's majority behaviour over its repetitions."""
    keys = ["sdk", "release", *KEY]
    out: dict[tuple, Behaviour] = {}
    repeated = frame.duplicated(keys, keep=False)
    for row in frame.loc[~repeated, [*keys, "outcome", "model_calls", "exception_type"]].itertuples(index=False):
        calls, exception = row[-2], row[-1]
        out[tuple(row[: len(keys)])] = Behaviour(
            row[-3], None if pd.isna(calls) else int(calls), None if pd.isna(exception) else exception
        )
    for key, group in frame[repeated].groupby(keys, sort=False):
        outcome = majority(Counter(group["outcome"]), outcome_rank)
        chosen = group[group["outcome"] == outcome]
        calls = chosen["model_calls"].dropna()
        exceptions = chosen["exception_type"].dropna()
        out[key] = Behaviour(
            outcome,
            int(calls.median()) if len(calls) else None,
            majority(Counter(exceptions)) if len(exceptions) else None,
        )
    return out


def steps(runs: pd.DataFrame) -> list[Step]:
    """Every SDK's consecutive release pairs with what changed between them."""
    frame = with_release(runs)
    table = behaviours(frame)
    out = []
    for sdk in sorted(set(frame["sdk"])):
        releases = releases_of(frame, sdk)
        cells = sorted({key[2:] for key in table if key[0] == sdk}, key=str)
        for before, after in pairwise(releases):
            out.append(_step(sdk, before, after, cells, table))
    return out


def _step(sdk: str, before: str, after: str, cells: list[tuple], table: dict[tuple, Behaviour]) -> Step:
    step = Step(sdk, before, after)
    for cell in cells:
        was, now = table.get((sdk, before, *cell)), table.get((sdk, after, *cell))
        if was is None or now is None:
            continue
        if (was.outcome == Outcome.UNSUPPORTED) != (now.outcome == Outcome.UNSUPPORTED):
            if was.outcome == Outcome.UNSUPPORTED:
                step.newly_expressible += 1
            else:
                step.no_longer_expressible += 1
            continue
        if was.outcome == Outcome.UNSUPPORTED:
            continue
        step.compared.setdefault(cell[-1], []).append(cell)
        if was != now:
            step.changes.append(Change(sdk, before, after, cell_name(cell), cell[-1], was, now, tuple(cell)))
    return step


def cell_name(cell: tuple) -> str:
    """``mode / variant / protocol``, with ``/ stream`` when a variant not named so streams."""
    mode, variant, protocol, stream, _ = cell
    return f"{mode} / {variant} / {protocol}" + (" / stream" if stream and variant != "stream" else "")


def families(runs: pd.DataFrame) -> dict[str, str]:
    """Scenario -> fault family (``malformed``, ``refusal``, ``tool``...)."""
    pairs = runs[["scenario", "fault"]].drop_duplicates("scenario")
    return {s: fault_family(f) for s, f in pairs.itertuples(index=False)}


def groups(step: Step, family: dict[str, str]) -> list[Group]:
    """The step's changes by scenario and transition: the worse first (:data:`DIRECTIONS`), then
    families in the matrix's order, the scenario's biggest group first."""
    by: dict[tuple[str, Behaviour, Behaviour], list[Change]] = defaultdict(list)
    for change in step.changes:
        by[(change.scenario, change.was, change.now)].append(change)
    out = [
        Group(scenario, family.get(scenario, "?"), was, now, tuple(changes), len(step.compared[scenario]),
              _where(changes, step.compared[scenario]))
        for (scenario, was, now), changes in by.items()
    ]  # fmt: skip
    return sorted(
        out,
        key=lambda g: (
            DIRECTIONS.index(g.direction), family_rank(g.family), g.family, g.scenario, -len(g.changes), str(g.was),
            str(g.now),
        ),
    )  # fmt: skip


DIMENSIONS = ("mode", "variant", "protocol", "stream")


def _where(changes: list[Change], compared: list[tuple]) -> str:
    """The dimensions the changed cells share and the scenario's other cells do not have alone:
    ``tool mode, streamed`` (empty when every cell changed, or nothing tells them apart)."""
    if len(changes) == len(compared):
        return ""
    parts = []
    for i, name in enumerate(DIMENSIONS):
        values = {change.key[i] for change in changes}
        if name == "stream" and {change.key[1] for change in changes} == {"stream"}:
            continue  # the stream variant streams: "variant stream" says it
        if len(values) == 1 and len({cell[i] for cell in compared}) > 1:
            value = next(iter(values))
            parts.append(
                ("streamed" if value else "not streamed") if name == "stream"
                else f"{value} mode" if name == "mode" else f"{name} {value}"
            )  # fmt: skip
    return ", ".join(parts)


def renames(told: list[Group]) -> list[Rename]:
    """Every exception class pair the step's changes went from and to, once, with the scenarios
    (and cell counts) it covers."""
    pairs: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for group in sorted(told, key=lambda g: (family_rank(g.family), g.family, g.scenario)):  # not worse first
        old, new = group.was.exception_type, group.now.exception_type
        if old and new and old != new:
            pairs[(old, new)][group.scenario] += len(group.changes)
    return [Rename(old, new, tuple(counts.items())) for (old, new), counts in pairs.items()]


@dataclass(frozen=True)
class Tally:
    """The behaviours of an SDK's supported cells on one scenario in one release, most first."""

    counts: tuple[tuple[Behaviour, int], ...]

    @property
    def split(self) -> bool:
        return len(self.counts) > 1

    @property
    def tied(self) -> bool:
        """The two commonest behaviours are equally common: no majority."""
        return len(self.counts) > 1 and self.counts[0][1] == self.counts[1][1]

    def shown(self) -> tuple[list[tuple[Behaviour, int]], int]:
        """The behaviours a cell names (every one tied for the top count; else the top two), and
        how many cells the rest hold."""
        top = [(b, n) for b, n in self.counts if n == self.counts[0][1]]
        named = top if len(top) > 1 else list(self.counts[:2])
        return named, sum(n for _, n in self.counts) - sum(n for _, n in named)

    def others(self) -> list[tuple[Behaviour, int]]:
        """The behaviours the ``N other`` of :meth:`text` stands for, most first."""
        named, _ = self.shown()
        return [item for item in self.counts if item not in named]

    def tokens(self, letters: dict[str, str]) -> str:
        """:meth:`text` in the grid's short form (:meth:`Behaviour.token`)."""
        return self.text(lambda behaviour: behaviour.token(letters))

    def others_tokens(self, letters: dict[str, str]) -> str:
        """What ``N other`` stands for, in the grid's short form: ``3 x1K + 2 r4`` (empty: none)."""
        return " + ".join(f"{n} {behaviour.token(letters)}" for behaviour, n in self.others())

    def text(self, form: Callable[[Behaviour], str]) -> str:
        """``16 r2``; split: ``8 r2 | 8 x2A``, ``+ 3 other`` for the rest."""
        named, rest = self.shown()
        if not self.split:
            behaviour, n = self.counts[0]
            return f"{n} {form(behaviour)}"
        return " | ".join([*(f"{n} {form(b)}" for b, n in named), *([f"{rest} other"] if rest else [])])


def tallies(runs: pd.DataFrame, sdk: str) -> dict[tuple[str, str], Tally]:
    """(release, scenario) -> the tally of the SDK's supported cells there."""
    frame = with_release(runs)
    frame = frame[(frame["sdk"] == sdk) & (frame["outcome"] != Outcome.UNSUPPORTED)]
    seen: dict[tuple[str, str], Counter[Behaviour]] = defaultdict(Counter)
    for key, behaviour in behaviours(frame).items():
        seen[(key[1], key[-1])][behaviour] += 1
    return {
        where: Tally(
            tuple(sorted(counts.items(), key=lambda item: (-item[1], outcome_rank(item[0].outcome), str(item[0]))))
        )
        for where, counts in seen.items()
    }


def grid(runs: pd.DataFrame, sdk: str) -> pd.DataFrame:
    """Rows: the SDK's releases (oldest first); columns: scenarios; cells: the tally of the SDK's
    supported cells, spelled out (``raised ModelRefusalError (1)``; split: ``8 recovered (2) | 8
    raised ValidationError (2)``). The HTML report's grid."""
    frame = with_release(runs)
    counted = tallies(runs, sdk)
    scenarios = sorted({scenario for _, scenario in counted})
    rows: dict[str, dict[str, str]] = {}
    for release in releases_of(frame[frame["outcome"] != Outcome.UNSUPPORTED], sdk):
        for scenario in scenarios:
            if (release, scenario) in counted:
                tally = counted[(release, scenario)]
                text = tally.text(str) if tally.split else str(tally.counts[0][0])
                rows.setdefault(release, {})[scenario] = text
    return pd.DataFrame.from_dict(rows, orient="index", columns=scenarios).fillna("")


def multi_release_sdks(runs: pd.DataFrame) -> list[str]:
    """SDKs the run holds more than one release of (only those have a changelog)."""
    frame = with_release(runs)
    counts = frame.groupby("sdk")["release"].nunique()
    return sorted(counts[counts > 1].index)


Annotate = Callable[[Change], list[str]]
"""Lines explaining a change (its SDK source line or PR); empty: unexplained."""
Handlers = Callable[[list[Raised]], dict[Raised, Compatibility]]
"""Decides handler compatibility of (old, new, new's recorded lineage) exception classes
(:func:`bench.report.handlers.check_raised`: on the lineage where the runs recorded it, else by name)."""


def recorded_lineages(runs: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """Each raised class's lineage (``exception_mro``) where the runs recorded exactly one for its
    name; a name with none (runs before schema 5) or several (a class that took another's name) is
    left out, and decided by name."""
    if "exception_mro" not in runs.columns:
        return {}
    seen: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for name, mro in zip(runs["exception_type"], runs["exception_mro"], strict=True):
        if isinstance(name, str) and mro is not None and len(mro):
            seen[name].add(tuple(mro))
    return {name: next(iter(found)) for name, found in seen.items() if len(found) == 1}


def markdown(
    runs: pd.DataFrame, title: str, annotate: Annotate | None = None,
    preamble: Callable[[str], list[str]] = lambda sdk: [], handlers: Handlers = check_raised,
    appendix: Callable[[str], list[str]] = lambda sdk: [],
) -> str:  # fmt: skip
    """The changelog as markdown, every line within :data:`WIDTH` columns: per SDK,
    ``preamble(sdk)`` lines, the release x scenario grid, its transport retries, ``appendix(sdk)``
    lines (as they are, each within the width), then each release step's changes by
    behaviour, its exception class changes with their handler compatibility (``handlers``), and
    the changes' explanations (when ``annotate`` is given)."""
    lines = [f"# {title}", ""]
    sdks = multi_release_sdks(runs)
    if not sdks:
        return "\n".join([*lines, "(no SDK ran in more than one release: nothing to compare)", ""])
    lines += [*_wrap(DIRECTION_LEGEND), ""]
    family = families(runs)
    told = [(step, groups(step, family)) for step in steps(runs)]
    lineages = recorded_lineages(runs)
    raised = [(r.old, r.new, lineages.get(r.new, ())) for _, found in told for r in renames(found)]
    compatibility = {(old, new): verdict for (old, new, _), verdict in handlers(raised).items()}
    for sdk in sdks:
        intro = [wrapped for line in preamble(sdk) for wrapped in _wrap(line)]
        lines += [f"## {sdk}", "", *intro, *([""] if intro else []), *_grid_block(runs, sdk, family), ""]
        lines += _transport_block(runs, sdk)
        lines += _prose_wrapped(appendix(sdk))
        for step, found in told:
            if step.sdk == sdk:
                lines += _step_markdown(step, found, compatibility, annotate)
    return "\n".join(lines).rstrip() + "\n"


def _prose_wrapped(lines: list[str]) -> list[str]:
    """``lines`` with each line outside a fenced block wrapped to :data:`WIDTH` (a blank one kept),
    and a blank line after them."""
    out, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        out += [line] if fenced or line.startswith("```") or not line else _wrap(line)
    return [*out, ""] if out else []


def _wrap(text: str, first: str = "", rest: str = "") -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False, break_on_hyphens=False
    ) or [first.rstrip()]


def exception_letters(tallied: dict[tuple[str, str], Tally]) -> dict[str, str]:
    """Each exception the SDK raised, a letter (``A``...), in the order of the short names."""
    names = sorted({b.exception_type for t in tallied.values() for b, _ in t.counts if b.exception_type},
                   key=lambda name: (short(name), name))  # fmt: skip
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    tags = [*alphabet, *(a + b for a in alphabet for b in alphabet)]
    return dict(zip(names, tags, strict=False))


GRID_LEGEND = (
    "Each cell counts the SDK's supported cells on the scenario by behaviour: `16 r2` is 16 cells that recovered "
    "after 2 model calls; a split cell names each behaviour with its count (`8 r2 | 8 x2A`: no majority), "
    "the two commonest when there are more, and `N other` counts the cells that did something else (what they "
    "did is under the grid). okN = right first time in N calls, rN = recovered after N calls, "
    "fN = the variant's fallback, xN = raised after N calls (the letter names the exception), WN / EN = a WRONG / "
    "EMPTY answer handed to the caller, LN = runaway at the call cap, T = timeout."
)


def _grid_block(runs: pd.DataFrame, sdk: str, family: dict[str, str]) -> list[str]:
    """The release x scenario grid as a fixed-width block (scenarios down, releases across), the
    scenarios that read the same in every release with every cell alike left out (counted)."""
    tallied = tallies(runs, sdk)
    letters = exception_letters(tallied)
    releases = [r for r in releases_of(with_release(runs), sdk) if any(key[0] == r for key in tallied)]
    order = scenario_order(runs)
    scenarios = sorted({s for _, s in tallied}, key=lambda s: (family_rank(family.get(s, "?")), order.index(s)))
    rows, alike = [], 0
    for scenario in scenarios:
        found = [tallied.get((release, scenario)) for release in releases]
        texts = [t.tokens(letters) if t else "" for t in found]
        if len(set(texts)) == 1 and not any(t is not None and t.split for t in found):
            alike += 1
            continue
        rows.append([scenario, *texts])
    exceptions = ", ".join(f"{tag} {short(name)}" for name, tag in letters.items())
    notes = [
        *_wrap(GRID_LEGEND),
        *(_wrap(f"Exceptions: {exceptions}.") if exceptions else []),
        *([f"{alike} scenario(s) read the same in every release, every cell alike: not shown."] if alike else []),
    ]
    others = []
    for scenario in scenarios:
        found = [tallied.get((release, scenario)) for release in releases]
        if any(t is not None and t.others() for t in found):
            others.append([scenario, *(t.others_tokens(letters) if t else "" for t in found)])
    told = ["", *_block(["N other: what those cells did", *releases], others)] if others else []
    return [*_block(["scenario", *releases], rows), "", *notes, *told]


TRANSPORT_LEGEND = (
    "Transport retries: the same request sent again after a 429 or 5xx, before (and apart from) any "
    "model-level retry; each cell is the median over the scenario's cells of the retries and of the wait "
    "between the failed responses and the requests after them (the client's own backoff or the server's "
    "retry-after). Scenarios no release retried are not shown."
)


def _transport_block(runs: pd.DataFrame, sdk: str) -> list[str]:
    """Release x scenario: how often and how long the SDK's transport layer retried, for the
    scenarios where some release retried at all (a retry count or backoff is what a release can
    change without changing the outcome or the model calls the grid shows)."""
    if "transport_retries" not in runs or "retry_wait_ms" not in runs:
        return []
    frame = with_release(runs)
    frame = frame[(frame["sdk"] == sdk) & frame["transport_retries"].notna()]
    retried = sorted(set(frame.loc[frame["transport_retries"] > 0, "scenario"]), key=scenario_order(runs).index)
    if not retried:
        return []
    releases = [r for r in releases_of(frame, sdk) if r in set(frame.loc[frame["scenario"].isin(retried), "release"])]
    rows = []
    for scenario in retried:
        cells = frame[frame["scenario"] == scenario].groupby("release")
        texts = {release: _retries_text(group) for release, group in cells}
        rows.append([scenario, *(texts.get(release, "") for release in releases)])
    return [*_block(["transport retries", *releases], rows), "", *_wrap(TRANSPORT_LEGEND), ""]


def _retries_text(cells: pd.DataFrame) -> str:
    retries = int(cells["transport_retries"].median())
    if retries == 0:
        return "none"
    seconds = float(cells["retry_wait_ms"].fillna(0).median()) / 1000
    wait = f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"{retries} {'retry' if retries == 1 else 'retries'}, {wait}"


def _block(header: list[str], rows: list[list[str]]) -> list[str]:
    """A fenced fixed-width table; when all releases would pass :data:`WIDTH`, they are shared
    out evenly over the fewest blocks that fit, the scenario column in each."""
    if not rows:
        return ["(no scenario differs between the releases)"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    releases = list(range(1, len(header)))
    for blocks in range(1, len(releases) + 1):
        size = -(-len(releases) // blocks)
        chunks = [releases[i : i + size] for i in range(0, len(releases), size)]
        if all(widths[0] + sum(2 + widths[i] for i in chunk) <= WIDTH for chunk in chunks):
            break
    out = []
    for chunk in chunks:
        lines = ("  ".join(row[i].ljust(widths[i]) for i in [0, *chunk]).rstrip() for row in [header, *rows])
        out += ["```text", *lines, "```"]
    return out


def _step_markdown(
    step: Step, found: list[Group], compatibility: dict[tuple[str, str], Compatibility], annotate: Annotate | None
) -> list[str]:
    lines = [f"### {step.before} -> {step.after}", ""]
    extra = []
    if step.newly_expressible:
        extra.append(f"{step.newly_expressible} cell(s) newly expressible")
    if step.no_longer_expressible:
        extra.append(f"{step.no_longer_expressible} cell(s) no longer expressible")
    if not step.changes:
        tail = f" ({'; '.join(extra)})." if extra else "."
        return [*lines, "No cell changed its outcome, model calls or exception" + tail, ""]
    compared = sum(len(cells) for cells in step.compared.values())
    scenarios = len({g.scenario for g in found})
    by_direction = Counter({d: sum(len(g.changes) for g in found if g.direction == d) for d in DIRECTIONS})
    marks = ", ".join(f"{by_direction[d]} {d}" for d in DIRECTIONS if by_direction[d])
    summary = (
        f"{len(step.changes)} of {n_cells(compared)} both releases express changed ({marks}), "
        f"in {scenarios} scenario(s)"
    )
    lines += [*_wrap(summary + (f"; {'; '.join(extra)}." if extra else ".")), ""]
    listed = [g for g in found if not g.renamed_only]
    for heading in dict.fromkeys((g.direction, g.family) for g in listed):
        lines += [f"**{heading[0]}: {heading[1]}**", ""]
        lines += [w for g in listed if (g.direction, g.family) == heading for w in _wrap(g.line(), "- ", "  ")]
        lines.append("")
    lines += _renames_markdown(renames(found), compatibility)
    if annotate is not None:
        lines += ["Why (each explanation once, with the changed cells it covers):", ""]
        lines += [w for line in _explanations(step, annotate) for w in _wrap(line, "- ", "  ")]
        lines.append("")
    return lines


def _renames_markdown(found: list[Rename], compatibility: dict[tuple[str, str], Compatibility]) -> list[str]:
    if not found:
        return []
    lines = ["**exception class changes** (each pair once; whether an existing handler still catches it)", ""]
    for rename in found:
        where = ", ".join(f"{scenario} {n}" for scenario, n in rename.scenarios)
        verdict = compatibility.get((rename.old, rename.new))
        told = verdict.sentence() if verdict else "handler compatibility not checked"
        text = f"{short(rename.old)} -> {short(rename.new)}, {n_cells(rename.cells)} ({where}): {told}"
        lines += _wrap(text, "- ", "  ")
    return [*lines, ""]


def _explanations(step: Step, annotate: Annotate) -> list[str]:
    """Each distinct explanation once, with the number of changed cells it covers."""
    counts: Counter[str] = Counter()
    for change in step.changes:
        for line in annotate(change) or ["(unexplained)"]:
            counts[line] += 1
    return [f"{line} ({n_cells(n)})" for line, n in counts.items()]


def n_cells(n: int) -> str:
    return f"{n} cell{'' if n == 1 else 's'}"
