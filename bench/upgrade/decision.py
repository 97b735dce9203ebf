"""``bench upgrade``: should I take this release? The agent (or the built-in adapter) run under the
release it has and the one it would take, on the default suite, and the answer a caller needs,
first screen first: what changes per behaviour (cell counts, not one row per protocol and stream),
which ``except`` clauses stop catching, and the cost old vs new.

A handler is judged on the class each release actually raised (its lineage, recorded where it was
raised: ``exception_mro``), by ``issubclass`` in that release's own environment
(:func:`bench.report.handlers.check_raised`). The user's own ``try`` blocks (read with ``ast``,
:mod:`bench.upgrade.excepts`) are each named once, ``file:line``, with every cell whose new
exception escapes all the block's clauses where the old outcome did not escape them (it returned,
or raised something a clause caught): a refusal that was recovered and now raises is a regression
of the handler as much as one that raised another class before.

The decision is read from the run's folder (:func:`decide`), so it can be recomputed without
running anything; :func:`run_upgrade` makes that run. The verdict maps to the gate's exit codes
(``bench.cli.exit_codes``): nothing worse, worse (a cell, or a handler that stops catching),
inconclusive (cells that could not be compared, a class that could not be checked).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.releases.spec import LATEST, PINNED, ReleaseSpec, ReleaseSpecError, parse
from bench.report.handlers import Compatibility, Raised, check_raised, short
from bench.report.matrix import outcome_rank
from bench.results.store import read_manifest, read_table
from bench.upgrade.excepts import UserHandler, find_handlers

CELL = ["agent", "sdk", "mode", "variant", "protocol", "stream", "scenario"]


class UpgradeError(Exception):
    """Bad input (``--to``/``--from`` that do not parse or name two SDKs): exit code 2."""


class Verdict(StrEnum):
    SAFE = "nothing got worse"
    WORSE = "worse"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Sides:
    sdk: str
    old: ReleaseSpec
    new: ReleaseSpec


def sides(to: str, from_: str | None) -> Sides:
    """``--to SDK==V`` and ``--from SDK==V|SDK@pinned|@pinned`` (default: the pinned release)."""
    try:
        new = parse(to)
        old = parse(f"{new.sdk}{from_}" if from_ and from_.startswith("@") else (from_ or f"{new.sdk}@{PINNED}"))
    except ReleaseSpecError as error:
        raise UpgradeError(str(error).replace("--release", "--to/--from")) from None
    if new.version is None or old.version is None:
        raise UpgradeError("--to and --from take SDK==VERSION, SDK@latest or SDK@pinned, e.g. --to pydantic-ai==2.0.0")
    if new.sdk != old.sdk:
        raise UpgradeError(f"--from {old} and --to {new} name two SDKs; an upgrade is within one")
    if new == old:
        raise UpgradeError(f"--from and --to are the same release ({new})")
    return Sides(new.sdk, old, new)


@dataclass(frozen=True)
class Behaviour:
    outcome: str
    calls: int
    exception: str | None
    lineage: tuple[str, ...] = field(default=(), compare=False)
    """The raised class's MRO as recorded (``exception_mro``); empty before schema 5."""

    @property
    def severity(self) -> int:
        """How bad it is for the caller: the outcome order the matrix and pick use
        (:func:`bench.report.matrix.outcome_rank`). A cell is worse when this goes up, or when
        it stays and the cell takes more model calls."""
        return outcome_rank(self.outcome)

    @property
    def raised(self) -> bool:
        return self.outcome == Outcome.RAISED and bool(self.exception)

    def phrase(self) -> str:
        """What the caller sees: ``recovered (2 calls)``, ``raises ContentFilterError (1 call)``."""
        calls = f"({self.calls} call{'s' if self.calls != 1 else ''})"
        if self.outcome == Outcome.RAISED:
            return f"raises {short(self.exception or '?')} {calls}"
        if self.outcome in (Outcome.WRONG, Outcome.EMPTY):
            return f"hands over a {self.outcome.upper()} answer {calls}"
        return f"{self.outcome} {calls}"


@dataclass
class BehaviourChange:
    """One scenario (a behaviour of the fake model) across its cells."""

    scenario: str
    family: str
    cells: int
    changed: int = 0
    worse: int = 0
    was: Counter[str] = field(default_factory=Counter)
    now: Counter[str] = field(default_factory=Counter)
    cost: dict[str, tuple[float, float]] = field(default_factory=dict)
    """``old``/``new`` -> (mean model calls, mean billed tokens)."""

    def line(self) -> str:
        mark = f"; {self.worse} worse" if self.worse else ""
        return (
            f"{self.scenario}: {_summary(self.was)} -> {_summary(self.now)}, {self.changed} of {self.cells} cells{mark}"
        )


def _cells(count: int) -> str:
    return f"{count} cell{'s' if count != 1 else ''}"


def _reason(c: Compatibility) -> str:
    """Why ``except old`` catches ``new`` or not, and on which classes that was decided."""
    new = short(c.new)
    if c.verdict == "unknown" and c.missing:
        return f"{new} could not be checked: not importable ({', '.join(c.missing)})"
    if c.verdict == "unknown":  # only the name is known (a run before schema 5)
        return f"unknown: the run recorded the name only, and the class named {new} on {c.where} is not a subclass"
    if c.verdict == "mixed":  # only the name is known (a run before schema 5)
        return (f"unknown: the run recorded the name only, and of the classes named {new} there "
                f"{', '.join(c.caught)} is caught, {', '.join(c.missed)} is not")  # fmt: skip
    kind = "a subclass" if c.verdict == "catches" else "not a subclass"
    checked = f"checked on {c.where}" if c.where else "not checked"
    if c.by_lineage and c.caught:  # a class that takes the name of one of its bases
        return f"raised as {c.caught[0]}, {kind} of {short(c.old)}; {checked}"
    return f"{new} is {kind} of {short(c.old)}; {checked}"


def _verb(verdict: str) -> str:
    return {"misses": "no longer catches", "catches": "still catches"}.get(verdict, "may miss")


@dataclass(frozen=True)
class HandlerBreak:
    """An exception class the new release raises where the old one raised another, and whether
    an ``except`` for the old class catches the class actually raised (in the new release).
    Shown on its own only when none of the user's handlers names the old class (a built-in
    adapter's upgrade has no user's handlers): else the user's block says it, once."""

    compatibility: Compatibility
    scenarios: tuple[str, ...]
    cells: int
    handlers: tuple[UserHandler, ...] = ()
    """The user's clauses that name the old class (shown in their :class:`BlockVerdict`)."""

    @property
    def stops_catching(self) -> bool:
        return self.compatibility.verdict == "misses"

    def lines(self) -> list[str]:
        """The class pair's line, unless a user's handler tells it: then none."""
        if self.handlers:
            return []
        c = self.compatibility
        where = f"{', '.join(self.scenarios)} ({_cells(self.cells)})"
        return [f"except {short(c.old)} {_verb(c.verdict)} {short(c.new)} ({_reason(c)}): {where}"]


@dataclass(frozen=True)
class Escape:
    """The cells of one scenario whose new exception passes a user's ``try`` block."""

    scenario: str
    before: str
    """The old behaviour's phrase (``recovered (2 calls)``, ``raises MaxTurnsExceeded (10 calls)``)."""
    now: Compatibility
    cells: int


@dataclass(frozen=True)
class BlockVerdict:
    """One ``try`` block of the user's (its clauses that name the SDK's classes), told once: the
    cells whose new exception escapes it where the old outcome did not, the class changes it
    still catches, and what could not be decided."""

    handlers: tuple[UserHandler, ...]
    escapes: tuple[Escape, ...] = ()
    kept: tuple[tuple[Compatibility, int, tuple[str, ...]], ...] = ()
    """(compatibility, cells, scenarios) of class changes a clause still catches."""
    unknown: tuple[tuple[Compatibility, int, tuple[str, ...]], ...] = ()

    @property
    def stops_catching(self) -> bool:
        return bool(self.escapes)

    @property
    def where(self) -> str:
        return self.handlers[0].where

    def clause(self) -> str:
        first, *rest = self.handlers
        more = "".join(f" / :{h.where.rsplit(':', 1)[1]} except {h.text}" for h in rest)
        return f"{first.where} except {first.text}{more}"

    def lines(self) -> list[str]:
        """One line: the block, then what no longer reaches it, what it still catches, what is unknown."""
        parts = []
        by_class: dict[str, list[Escape]] = {}
        for escape in self.escapes:
            by_class.setdefault(escape.now.new, []).append(escape)
        for new, escapes in by_class.items():
            cells = ", ".join(f"{e.scenario} ({_cells(e.cells)}; {e.before} before)" for e in escapes)
            parts.append(f"no longer catches {short(new)} ({_reason(escapes[0].now)}): {cells}")
        for c, cells_, scenarios in self.kept:
            parts.append(f"still catches {short(c.new)} ({_reason(c)}): {', '.join(scenarios)} ({_cells(cells_)})")
        for c, cells_, scenarios in self.unknown:
            parts.append(f"may miss {short(c.new)} ({_reason(c)}): {', '.join(scenarios)} ({_cells(cells_)})")
        return [f"{self.clause()} {'; '.join(parts)}"] if parts else []


@dataclass
class Decision:
    sdk: str
    old: str
    new: str
    subject: str
    """``agent refunds`` or ``the built-in pydantic-ai adapter``."""
    directory: Path
    behaviours: list[BehaviourChange] = field(default_factory=list)
    breaks: list[HandlerBreak] = field(default_factory=list)
    blocks: list[BlockVerdict] = field(default_factory=list)
    """The user's ``try`` blocks an exception of the new release affects, each once."""
    uncompared: int = 0
    """Cells run on one side only, or a harness error on either."""

    @property
    def worse_cells(self) -> int:
        return sum(b.worse for b in self.behaviours)

    @property
    def verdict(self) -> Verdict:
        if self.worse_cells or any(b.stops_catching for b in self.breaks) or any(b.stops_catching for b in self.blocks):
            return Verdict.WORSE
        unknown = any(b.compatibility.verdict in ("unknown", "mixed") for b in self.breaks)
        if self.uncompared or unknown or any(b.unknown for b in self.blocks):
            return Verdict.INCONCLUSIVE
        return Verdict.SAFE

    def handler_lines(self) -> list[str]:
        """Each affected handler once: the user's blocks (``file:line``) first, then the class
        pairs none of them names."""
        return [line for block in self.blocks for line in block.lines()] + [
            line for pair in self.breaks for line in pair.lines()
        ]


def _summary(counts: Counter[str]) -> str:
    """The most common behaviour, and how many cells do something else."""
    if not counts:
        return "-"
    (top, n), rest = counts.most_common(1)[0], sum(counts.values()) - counts.most_common(1)[0][1]
    return top if not rest else f"{top} in {n}, other in {rest}"


def _behaviour(rows: pd.DataFrame) -> Behaviour:
    """A cell's behaviour on one side: the most common (outcome, calls, exception) of its reps."""
    found = [
        (str(o), int(c) if pd.notna(c) else 0, e if isinstance(e, str) and e else None)
        for o, c, e in zip(rows["outcome"], rows["model_calls"], rows["exception_type"], strict=True)
    ]
    keys = Counter(found)
    chosen = min(keys, key=lambda k: (-keys[k], str(k)))
    recorded = rows["exception_mro"] if "exception_mro" in rows else [None] * len(found)
    lineage = next((tuple(m) for k, m in zip(found, recorded, strict=True) if k == chosen and m is not None), ())
    return Behaviour(*chosen, lineage=lineage)


def side_names(manifest: dict, sides_: Sides) -> tuple[str, str]:
    """The ``environment`` column's value of each side: ``pinned`` or ``sdk==version``."""
    built = [env["name"] for env in manifest.get("environments", [])]

    def name(spec: ReleaseSpec, other: ReleaseSpec) -> str:
        if spec.version == PINNED:
            return PINNED
        if spec.version == LATEST:
            return next((n for n in built if other.version == PINNED or n != str(other)), str(spec))
        return str(spec)

    return name(sides_.old, sides_.new), name(sides_.new, sides_.old)


def decide(directory: Path, sides_: Sides, project: Path | None, subject: str) -> Decision:
    """The decision from a run of both releases (``project``: where the user's handlers are)."""
    manifest = read_manifest(directory)
    runs = read_table(directory, "runs").to_pandas()
    runs["agent"] = runs["agent"].fillna("")
    old_name, new_name = side_names(manifest, sides_)
    environment = runs["environment"].fillna(PINNED)
    old, new = runs[environment == old_name], runs[environment == new_name]
    label = {n: str(v) for n, v in zip(environment, runs["sdk_version"], strict=True)}
    decision = Decision(sides_.sdk, label.get(old_name, old_name), label.get(new_name, new_name), subject, directory)
    cells_old = {key: rows for key, rows in old.groupby(CELL, dropna=False)}
    cells_new = {key: rows for key, rows in new.groupby(CELL, dropna=False)}
    by_scenario: dict[str, BehaviourChange] = {}
    compared: list[tuple[str, Behaviour, Behaviour]] = []
    for key in sorted(set(cells_old) | set(cells_new), key=str):
        a, b = cells_old.get(key), cells_new.get(key)
        outcomes = set() if a is None or b is None else set(a["outcome"]) | set(b["outcome"])
        if outcomes == {Outcome.UNSUPPORTED}:
            continue
        if a is None or b is None or Outcome.HARNESS_ERROR in outcomes or Outcome.UNSUPPORTED in outcomes:
            decision.uncompared += 1
            continue
        was, now = _behaviour(a), _behaviour(b)
        scenario = str(key[-1])
        change = by_scenario.setdefault(scenario, BehaviourChange(scenario, str(a["fault"].iloc[0]).split(":")[0], 0))
        change.cells += 1
        change.was[was.phrase()] += 1
        change.now[now.phrase()] += 1
        if was != now:
            change.changed += 1
        if now.severity > was.severity or (now.severity == was.severity and now.calls > was.calls):
            change.worse += 1
        compared.append((scenario, was, now))
    for change in by_scenario.values():
        change.cost = {"old": _cost(old, change.scenario), "new": _cost(new, change.scenario)}
    decision.behaviours = sorted(by_scenario.values(), key=lambda c: (-c.worse, -c.changed, c.family, c.scenario))
    handlers = find_handlers(project) if project is not None else []
    pythons = (_python(manifest, old_name), _python(manifest, new_name))
    decision.breaks, decision.blocks = _handlers(compared, pythons, handlers)
    return decision


def _cost(rows: pd.DataFrame, scenario: str) -> tuple[float, float]:
    ran = rows[(rows["scenario"] == scenario) & (rows["outcome"] != Outcome.UNSUPPORTED)]
    tokens = ran["input_tokens_billed"].fillna(0) + ran["output_tokens_billed"].fillna(0)
    return (float(ran["model_calls"].mean()), float(tokens.mean())) if len(ran) else (0.0, 0.0)


def _python(manifest: dict, name: str) -> Path:
    """The new side's interpreter: its release environment's, else this one (``@pinned``)."""
    for env in manifest.get("environments", []):
        if env.get("name") == name and env.get("path"):
            return Path(env["path"]) / "bin" / "python"
    return Path(sys.executable)


def _handlers(
    compared: list[tuple[str, Behaviour, Behaviour]], pythons: tuple[Path, Path], handlers: list[UserHandler]
) -> tuple[list[HandlerBreak], list[BlockVerdict]]:
    """The class pairs (an ``except`` for the old class and the class the new release raised)
    and the user's ``try`` blocks, every question asked of each side's own interpreter."""
    blocks: dict[str, list[UserHandler]] = defaultdict(list)
    for handler in handlers:
        blocks[handler.block].append(handler)
    old_q: set[Raised] = set()
    new_q: set[Raised] = set()
    for _, was, now in compared:
        if was.raised and now.raised and was.exception != now.exception:
            new_q.add((str(was.exception), str(now.exception), now.lineage))
        for clauses in blocks.values():
            if now.raised and _concerns(clauses, str(now.exception)):
                new_q |= {(path, str(now.exception), now.lineage) for h in clauses for path in h.paths}
                if was.raised:
                    old_q |= {(path, str(was.exception), was.lineage) for h in clauses for path in h.paths}
    old_side, new_side = check_raised(sorted(old_q), pythons[0]), check_raised(sorted(new_q), pythons[1])
    pairs: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    for scenario, was, now in compared:
        if was.raised and now.raised and was.exception != now.exception:
            pairs[(str(was.exception), str(now.exception))].append((scenario, now.lineage))
    breaks = [_pair(pair, cells, new_side, handlers) for pair, cells in sorted(pairs.items())]
    verdicts = [_block(tuple(clauses), compared, old_side, new_side) for clauses in blocks.values()]
    found = [v for v in verdicts if v.lines()]
    found.sort(key=lambda v: (not v.stops_catching, v.where))
    return sorted(breaks, key=lambda b: (not b.stops_catching, b.compatibility.old)), found


def _concerns(clauses: list[UserHandler], exception: str) -> bool:
    """Whether a block is about the SDK that raised ``exception``: a clause names a class of
    the same top-level package (``agents``, ``pydantic_ai``)."""
    top = exception.split(".")[0]
    return any(name.split(".")[0] == top for h in clauses for name in h.classes)


def _pair(
    pair: tuple[str, str], cells: list[tuple[str, tuple[str, ...]]], new_side: dict[Raised, Compatibility],
    handlers: list[UserHandler],
) -> HandlerBreak:  # fmt: skip
    """One class pair over its cells: catches when every raised class is caught, misses when
    one is not, else what could not be decided."""
    verdicts = [new_side[(pair[0], pair[1], lineage)] for lineage in sorted({lineage for _, lineage in cells})]
    verdict = next((v for v in verdicts if v.verdict == "misses"), None)
    verdict = verdict or next((v for v in verdicts if v.verdict != "catches"), verdicts[0])
    mine = tuple(h for h in handlers if h.names(pair[0]))
    return HandlerBreak(verdict, tuple(sorted({s for s, _ in cells})), len(cells), mine)


def _caught(clauses: tuple[UserHandler, ...], entry: tuple[str, tuple[str, ...]], side: dict[Raised, Compatibility]
            ) -> tuple[str, Compatibility]:  # fmt: skip
    """Whether one of a block's clauses catches what was raised (``catches``), none does
    (``misses``), or it could not be told (``unknown``), with the deciding compatibility."""
    answers = [side[(path, *entry)] for h in clauses for path in h.paths]
    caught = next((a for a in answers if a.verdict == "catches"), None)
    if caught is not None:
        return "catches", caught
    if all(a.verdict == "misses" for a in answers):
        return "misses", next((a for a in answers if not a.old.startswith("builtins.")), answers[0])
    return "unknown", next(a for a in answers if a.verdict != "misses")


def _block(
    clauses: tuple[UserHandler, ...], compared: list[tuple[str, Behaviour, Behaviour]],
    old_side: dict[Raised, Compatibility], new_side: dict[Raised, Compatibility],
) -> BlockVerdict:  # fmt: skip
    """A user's ``try`` block over every compared cell whose new release raised a class of the
    block's SDK: escaped now and not before (it returned, or a clause caught what it raised),
    still caught after a class change, or not decidable."""
    escapes: dict[tuple[str, str, str], list[Compatibility]] = defaultdict(list)
    kept: dict[tuple[str, str], list[tuple[str, Compatibility]]] = defaultdict(list)
    unknown: dict[tuple[str, str], list[tuple[str, Compatibility]]] = defaultdict(list)
    for scenario, was, now in compared:
        if not now.raised or not _concerns(list(clauses), str(now.exception)):
            continue
        verdict, deciding = _caught(clauses, (str(now.exception), now.lineage), new_side)
        before = _caught(clauses, (str(was.exception), was.lineage), old_side)[0] if was.raised else "returned"
        if verdict == "misses" and before in ("returned", "catches"):
            escapes[(scenario, was.phrase(), deciding.new)].append(deciding)
        elif verdict == "catches" and was.raised and was.exception != now.exception:
            kept[(deciding.old, deciding.new)].append((scenario, deciding))
        elif verdict == "unknown" and before != "misses":
            unknown[(deciding.old, deciding.new)].append((scenario, deciding))
    return BlockVerdict(
        clauses,
        tuple(Escape(scenario, phrase, found[0], len(found)) for (scenario, phrase, _), found in escapes.items()),
        tuple((found[0][1], len(found), tuple(sorted({s for s, _ in found}))) for found in kept.values()),
        tuple((found[0][1], len(found), tuple(sorted({s for s, _ in found}))) for found in unknown.values()),
    )


@dataclass(frozen=True)
class UpgradeRequest:
    sides: Sides
    agents: tuple[str, ...] | None
    """The user's agents (``--agent``; empty: every declared one); None: the built-in adapter."""
    project: Path = Path(".")
    results_root: Path = Path("results")
    cache_dir: Path | None = None


def run_upgrade(request: UpgradeRequest, warn: Callable[[str], None] = lambda message: None) -> Decision:
    """Run both releases on the default suite (an own agent's derived faults included) and
    decide. A release that cannot be built is :class:`UpgradeError`: no half decision."""
    from bench.run.runner import RunOptions
    from bench.run.suite import SuiteError, SuiteRequest, run_suite

    s = request.sides
    suite = SuiteRequest(
        sdks=() if request.agents is not None else (s.sdk,), agents=request.agents, project=request.project,
        releases=(str(s.old), str(s.new)), options=RunOptions(record_bodies=False),
        results_root=request.results_root, cache_dir=request.cache_dir,
    )  # fmt: skip
    try:
        directory = run_suite(suite, warn=warn)
    except SuiteError as error:
        raise UpgradeError(str(error)) from None
    if errors := read_manifest(directory).get("environment_errors"):
        raise UpgradeError("; ".join(errors))
    agents = sorted({a for a in read_table(directory, "runs").column("agent").to_pylist() if a})
    subject = f"agent {', '.join(agents)}" if agents else f"the built-in {s.sdk} adapter"
    return decide(directory, s, request.project if request.agents is not None else None, subject)
