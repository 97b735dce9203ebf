"""Nothing named is dropped in silence: every thing a run's options name (an SDK, an agent, a
release, a mode, a variant, a protocol, a scenario, a fault, the ``--type``, the cassette tasks)
either keeps a cell in the plan or is said in one line naming it and the option that emptied it.

The options that narrow a plan are of two kinds. Some choose the adapters (``--sdk``, ``--agent``,
``--release``, ``--type``, ``--tasks cassettes``) and the scenario set (``--suite``): what is
planned at all. The others filter those cells (``--mode``, ``--variant``, ``--protocol``,
``--scenario``, ``--fault``), and ``--shard`` takes a slice of what is left. A thing named is
*emptied* when the filters, crossed, leave it no cell: ``--agent support`` built on Responses with
``--protocol openai-chat``, say. Its line names the filter alone that empties it (with what the
thing has instead), or the combination when no single filter does.

When every value one option names is emptied, the run is refused (:class:`Emptied`, exit 2): the
user asked for those and would get none of them. Otherwise each emptied value is a warning and the
rest runs. (A ``--stream`` is ``--variant stream``; a ``--cassettes`` replay answers every cell and
narrows nothing.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bench.planner.cells import CellPlan, Filters
from bench.scenarios.files import Scenario
from bench.sdk.adapter import Adapter, Cell


class Emptied(ValueError):
    """Every value of an option is left with no cell: the run is refused (one line)."""


@dataclass(frozen=True)
class Candidate:
    """A cell and a scenario its adapter runs, before any filter: the universe narrowed."""

    cell: Cell
    scenario: Scenario


@dataclass(frozen=True)
class Named:
    """One option's values, as the user gave them, and how a candidate has one."""

    option: str
    """``--protocol``: how the line names the option."""
    values: tuple[str, ...]
    has: Callable[[Candidate, str], bool]
    aspect: str
    """What a candidate has on this option's dimension, as the line says it (``protocol``)."""
    describe: Callable[[Candidate], str]
    filters: bool
    """Whether the option filters the chosen cells (``--mode``), or chooses them (``--sdk``)."""
    none_because: str = ""
    """Why a value with no candidate at all has none (the adapters chosen, the suite)."""

    def keeps(self, candidate: Candidate) -> bool:
        return not self.values or any(self.has(candidate, value) for value in self.values)

    @property
    def label(self) -> str:
        return f"{self.option} {','.join(self.values)}"


def filter_options(filters: Filters, chosen_by: str) -> list[Named]:
    """The filters of the cells and scenarios (``--mode`` to ``--fault``), as named things."""
    cell_aspects: list[tuple[str, frozenset[str] | None, Callable[[Cell], str]]] = [
        ("mode", filters.modes, lambda cell: str(cell.mode)),
        ("variant", filters.variants, lambda cell: str(cell.variant)),
        ("protocol", filters.protocols, lambda cell: str(cell.protocol)),
    ]
    chosen = f"no chosen adapter ({chosen_by})"
    named = [
        Named(f"--{aspect}", tuple(sorted(values)), _on_cell(of), aspect, _described(of), True,
              f"{chosen} has a cell of that {aspect}")
        for aspect, values, of in cell_aspects
        if values
    ]  # fmt: skip
    if filters.scenarios:
        on_name = lambda candidate, pattern: fnmatchcase(candidate.scenario.name, pattern)  # noqa: E731
        scenario = lambda candidate: candidate.scenario.name  # noqa: E731
        named.append(
            Named(
                "--scenario",
                tuple(sorted(filters.scenarios)),
                on_name,
                "scenarios",
                scenario,
                True,
                f"{chosen} runs it",
            )
        )
    if filters.faults:
        fault = lambda candidate: candidate.scenario.fault_label  # noqa: E731
        named.append(
            Named("--fault", tuple(sorted(filters.faults)), _has_fault, "faults", fault, True,
                  f"{chosen} runs a scenario of it")
        )  # fmt: skip
    return named


def adapter_option(option: str, values: Iterable[str], has: Callable[[Candidate, str], bool], suite: str) -> Named:
    """An option that chooses adapters (``--sdk``, ``--agent``, ``--release``, ``--type``)."""
    adapter = lambda candidate: candidate.cell.key  # noqa: E731
    return Named(
        option, tuple(values), has, "adapter", adapter, False, f"it runs no scenario of suite {suite!r} (--suite)"
    )


def _on_cell(of: Callable[[Cell], str]) -> Callable[[Candidate, str], bool]:
    return lambda candidate, value: of(candidate.cell) == value


def _described(of: Callable[[Cell], str]) -> Callable[[Candidate], str]:
    return lambda candidate: of(candidate.cell)


def _has_fault(candidate: Candidate, fault: str) -> bool:
    label = candidate.scenario.fault_label
    return label == fault or label.split(":")[0] == fault


def universe(adapters: dict[str, Adapter], scenarios: list[Scenario]) -> list[Candidate]:
    """Every chosen adapter's cells x the scenarios it runs, before any filter."""
    return [
        Candidate(cell, scenario)
        for adapter in adapters.values()
        for cell in adapter.cells()
        for scenario in adapter.scenarios(scenarios)
    ]


def emptied(named: Sequence[Named], candidates: Sequence[Candidate]) -> dict[str, list[str]]:
    """The values the filters cross into no cell, one line each, by option."""
    lines: dict[str, list[str]] = {}
    for option in named:
        others = [other for other in named if other.filters and other is not option]
        for value in option.values:
            mine = [c for c in candidates if option.has(c, value)]
            if not mine:
                lines.setdefault(option.option, []).append(f"{option.option} {value}: no cell: {option.none_because}")
            elif not any(all(other.keeps(c) for other in others) for c in mine):
                lines.setdefault(option.option, []).append(f"{option.option} {value}: {_why(mine, others)}")
    return lines


def _why(mine: Sequence[Candidate], others: Sequence[Named]) -> str:
    """The filter that alone leaves none of ``mine`` (with what they have instead), else the
    combination of the filters that narrow them."""
    alone = [other for other in others if not any(other.keeps(c) for c in mine)]
    if alone:
        parts = [f"{other.label} leaves it no cell (its {other.aspect}: {_listed(mine, other)})" for other in alone]
        return "; ".join(parts)
    narrowing = [other for other in others if not all(other.keeps(c) for c in mine)]
    return f"{' with '.join(other.label for other in narrowing)} leave it no cell together"


def _listed(mine: Sequence[Candidate], other: Named, most: int = 6) -> str:
    values = sorted({other.describe(c) for c in mine})
    return ", ".join(values[:most]) + (f" and {len(values) - most} more" if len(values) > most else "")


def in_shard_only(named: Sequence[Named], before: Sequence[CellPlan], after: Sequence[CellPlan],
                  shard: str) -> dict[str, list[str]]:  # fmt: skip
    """The values the filters kept a cell for and ``--shard`` took every one of away."""
    kept = [Candidate(plan.cell, plan.scenario) for plan in after]
    planned = [Candidate(plan.cell, plan.scenario) for plan in before]
    lines: dict[str, list[str]] = {}
    for option in named:
        for value in option.values:
            count = sum(1 for c in planned if option.has(c, value))
            if count and not any(option.has(c, value) for c in kept):
                said = f"--shard {shard} leaves it no cell (its {count} cells are in other shards)"
                lines.setdefault(option.option, []).append(f"{option.option} {value}: {said}")
    return lines


def said(named: Sequence[Named], lines: dict[str, list[str]], warn: Callable[[str], None]) -> None:
    """Refuse when every value of one option is emptied; else warn each emptied value."""
    for option in named:
        if option.option in lines and len(lines[option.option]) == len(option.values):
            every = "the " if len(option.values) == 1 else f"every one of the {len(option.values)} "
            raise Emptied(f"{every}{option.option} named is left with no cell: {'; '.join(lines[option.option])}")
    for option_lines in lines.values():
        for line in option_lines:
            warn(f"left out: {line}")
