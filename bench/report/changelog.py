"""The failure-handling changelog of a run with several releases of an SDK.

Per SDK, releases are ordered by version; for each release and the one before it, every cell
(mode, variant, protocol, stream, scenario) whose outcome, model calls or exception type changed
is a change. A cell only one of the two releases can express is not a behaviour change: it is
counted as newly (or no longer) expressible. The release x scenario grid shows, per release and
scenario, the behaviour most of the SDK's supported cells had (``*`` when they disagree).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import pandas as pd
from packaging.version import Version

from bench.core.vocabulary import Outcome
from bench.report.matrix import majority, outcome_rank

KEY = ["mode", "variant", "protocol", "stream", "scenario"]


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


@dataclass
class Step:
    """From one release of an SDK to the next one in the run."""

    sdk: str
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)
    newly_expressible: int = 0
    no_longer_expressible: int = 0


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
    return sorted(labels, key=lambda label: (_version(label), label))


def _version(label: str) -> Version:
    try:
        return Version(label.split(" ")[0])
    except ValueError:
        return Version("0")


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
        if was != now and was.outcome != Outcome.UNSUPPORTED:
            step.changes.append(Change(sdk, before, after, cell_name(cell), cell[-1], was, now))
    return step


def cell_name(cell: tuple) -> str:
    """``mode / variant / protocol``, with ``/ stream`` when a variant not named so streams."""
    mode, variant, protocol, stream, _ = cell
    return f"{mode} / {variant} / {protocol}" + (" / stream" if stream and variant != "stream" else "")


def grid(runs: pd.DataFrame, sdk: str) -> pd.DataFrame:
    """Rows: the SDK's releases (oldest first); columns: scenarios; cells: the behaviour most of
    the SDK's supported cells had on that scenario (``*`` when they disagree)."""
    frame = with_release(runs)
    frame = frame[(frame["sdk"] == sdk) & (frame["outcome"] != Outcome.UNSUPPORTED)]
    table = behaviours(frame)
    scenarios = sorted(set(frame["scenario"]))
    rows: dict[str, dict[str, str]] = {}
    for release in releases_of(frame, sdk):
        for scenario in scenarios:
            seen = Counter(b for key, b in table.items() if key[1] == release and key[-1] == scenario)
            if seen:
                text = str(majority(seen)) + ("*" if len(seen) > 1 else "")
                rows.setdefault(release, {})[scenario] = text
    return pd.DataFrame.from_dict(rows, orient="index", columns=scenarios).fillna("")


def multi_release_sdks(runs: pd.DataFrame) -> list[str]:
    """SDKs the run holds more than one release of (only those have a changelog)."""
    frame = with_release(runs)
    counts = frame.groupby("sdk")["release"].nunique()
    return sorted(counts[counts > 1].index)


Annotate = Callable[[Change], list[str]]
"""Lines explaining a change (its SDK source line or PR); empty: unexplained."""


def markdown(
    runs: pd.DataFrame, title: str, annotate: Annotate | None = None,
    preamble: Callable[[str], list[str]] = lambda sdk: [],
) -> str:  # fmt: skip
    """The changelog as markdown: per SDK, ``preamble(sdk)`` lines, the release x scenario grid,
    then each release step with its changed cells (and their explanations, when ``annotate`` is
    given)."""
    lines = [f"# {title}", ""]
    sdks = multi_release_sdks(runs)
    if not sdks:
        return "\n".join([*lines, "(no SDK ran in more than one release: nothing to compare)", ""])
    all_steps = steps(runs)
    for sdk in sdks:
        intro = preamble(sdk)
        lines += [f"## {sdk}", "", *intro, *([""] if intro else []), *_grid_markdown(_narrow(grid(runs, sdk))), ""]
        for step in (s for s in all_steps if s.sdk == sdk):
            lines += _step_markdown(step, annotate)
    return "\n".join(lines).rstrip() + "\n"


WIDE = 12
"""Past this many scenarios, the grid shows only those where the releases differ."""


def _narrow(table: pd.DataFrame) -> pd.DataFrame:
    if len(table.columns) <= WIDE:
        return table
    varying = [name for name in table.columns if table[name].nunique() > 1]
    return table[varying].rename_axis(f"release ({len(table.columns) - len(varying)} scenarios alike omitted)")


def _grid_markdown(table: pd.DataFrame) -> list[str]:
    header = [table.index.name or "release", *table.columns]
    rows = [[str(index), *(str(v) for v in row)] for index, row in table.iterrows()]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _step_markdown(step: Step, annotate: Annotate | None) -> list[str]:
    lines = [f"### {step.before} -> {step.after}", ""]
    extra = []
    if step.newly_expressible:
        extra.append(f"{step.newly_expressible} cell(s) newly expressible")
    if step.no_longer_expressible:
        extra.append(f"{step.no_longer_expressible} cell(s) no longer expressible")
    if not step.changes:
        tail = f" ({'; '.join(extra)})." if extra else "."
        lines.append("No cell changed its outcome, model calls or exception" + tail)
        return [*lines, ""]
    lines += ["| cell | scenario | before | after |", "|---|---|---|---|"]
    for change in step.changes:
        lines.append(f"| {change.cell} | {change.scenario} | {change.was} | {change.now} |")
    if extra:
        lines += ["", "; ".join(extra).capitalize() + "."]
    if annotate is not None:
        lines += ["", *_explanations(step, annotate)]
    return [*lines, ""]


def _explanations(step: Step, annotate: Annotate) -> list[str]:
    """Each distinct explanation once, with the number of changed cells it covers."""
    counts: Counter[str] = Counter()
    for change in step.changes:
        for line in annotate(change) or ["(unexplained)"]:
            counts[line] += 1
    return [f"- {line} ({n} cell{'s' if n > 1 else ''})" for line, n in counts.items()]
