"""``bench upgrade``: should I take this release? The agent (or the built-in adapter) run under the
release it has and the one it would take, on the default suite, and the answer a caller needs,
first screen first: what changes per behaviour (cell counts, not one row per protocol and stream),
which ``except`` clauses stop catching (the real classes' MRO in the new release's environment, and
the user's own handlers that name the old class, read with ``ast``), and the cost old vs new.

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
from bench.report.handlers import Compatibility, check, short
from bench.results.store import read_manifest, read_table
from bench.upgrade.excepts import UserHandler, find_handlers

CELL = ["agent", "sdk", "mode", "variant", "protocol", "stream", "scenario"]
SEVERITY = {
    Outcome.OK: 0, Outcome.RECOVERED: 0, Outcome.FALLBACK: 1, Outcome.RAISED: 2,
    Outcome.WRONG: 3, Outcome.EMPTY: 3, Outcome.RUNAWAY: 3, Outcome.TIMEOUT: 3,
}  # fmt: skip
"""How bad an outcome is for the caller: a correct object, a fallback, an exception they can
catch, a wrong answer handed over or no answer at all. A cell is worse when this goes up, or
when it stays and the cell takes more model calls."""


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

    @property
    def severity(self) -> int:
        return SEVERITY.get(Outcome(self.outcome), 3) if self.outcome in set(Outcome) else 3

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


@dataclass(frozen=True)
class HandlerBreak:
    """An exception class the new release raises where the old one raised another."""

    compatibility: Compatibility
    scenarios: tuple[str, ...]
    cells: int
    handlers: tuple[UserHandler, ...] = ()

    @property
    def stops_catching(self) -> bool:
        return self.compatibility.verdict in ("misses", "mixed")

    def lines(self) -> list[str]:
        """The user's handlers it affects (``file:line``), then the class pair's own line."""
        c = self.compatibility
        old, new = short(c.old), short(c.new)
        where = f"{', '.join(self.scenarios)} ({self.cells} cell{'s' if self.cells != 1 else ''})"
        reason = {
            "misses": f"{new} is not a subclass",
            "mixed": f"not every class named {new} is a subclass",
            "catches": f"{new} is a subclass",
        }.get(c.verdict, f"{new} could not be checked: not importable ({', '.join(c.missing)})")
        verb = "no longer catches" if self.stops_catching else "still catches" if c.verdict == "catches" else "may miss"
        own = [f"{h.where} except {h.text} {verb} {new} ({reason}): {where}" for h in self.handlers]
        checked = f"checked on {c.where}" if c.where else "not checked"
        detail = f"; caught {', '.join(c.caught)}; not caught {', '.join(c.missed)}" if c.verdict == "mixed" else ""
        return [*own, f"except {old} {verb} {new} ({reason}; {checked}{detail}): {where}"]


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
    uncompared: int = 0
    """Cells run on one side only, or a harness error on either."""

    @property
    def worse_cells(self) -> int:
        return sum(b.worse for b in self.behaviours)

    @property
    def verdict(self) -> Verdict:
        if self.worse_cells or any(b.stops_catching for b in self.breaks):
            return Verdict.WORSE
        if self.uncompared or any(b.compatibility.verdict == "unknown" for b in self.breaks):
            return Verdict.INCONCLUSIVE
        return Verdict.SAFE


def _summary(counts: Counter[str]) -> str:
    """The most common behaviour, and how many cells do something else."""
    if not counts:
        return "-"
    (top, n), rest = counts.most_common(1)[0], sum(counts.values()) - counts.most_common(1)[0][1]
    return top if not rest else f"{top} in {n}, other in {rest}"


def _behaviour(rows: pd.DataFrame) -> Behaviour:
    """A cell's behaviour on one side: the most common (outcome, calls, exception) of its reps."""
    keys = Counter(
        (str(o), int(c) if pd.notna(c) else 0, e if isinstance(e, str) and e else None)
        for o, c, e in zip(rows["outcome"], rows["model_calls"], rows["exception_type"], strict=True)
    )
    return Behaviour(*min(keys, key=lambda k: (-keys[k], str(k))))


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
    renames: dict[tuple[str, str], list[str]] = defaultdict(list)
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
        if was.exception and now.exception and was.exception != now.exception:
            renames[(was.exception, now.exception)].append(scenario)
    for change in by_scenario.values():
        change.cost = {"old": _cost(old, change.scenario), "new": _cost(new, change.scenario)}
    decision.behaviours = sorted(by_scenario.values(), key=lambda c: (-c.worse, -c.changed, c.family, c.scenario))
    decision.breaks = _breaks(renames, _python(manifest, new_name), project)
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


def _breaks(renames: dict[tuple[str, str], list[str]], python: Path, project: Path | None) -> list[HandlerBreak]:
    """Each (old, new) exception class pair, checked by MRO under the new release's interpreter,
    with the user's ``except`` clauses that name the old class and not the new one."""
    compatibility = check(list(renames), python)
    handlers = find_handlers(project) if project is not None else []
    found = []
    for pair, scenarios in sorted(renames.items()):
        mine = tuple(h for h in handlers if h.names(pair[0]) and not h.names(pair[1]))
        found.append(HandlerBreak(compatibility[pair], tuple(sorted(set(scenarios))), len(scenarios), mine))
    return sorted(found, key=lambda b: (not b.handlers, not b.stops_catching, b.compatibility.old))


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
