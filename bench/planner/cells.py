"""What a run sets out to do: adapter cells x scenarios x reps expanded into cell plans, the
filters that narrow them and the shard a machine takes.

Planning decides nothing about how a cell runs (bench.run.runner drives it) or what its outcome is
(bench.run.classify); a plan's ``cell_id`` is the stable key every table and every run shares.
(``bench.run.runplan`` is the other direction: what a finished run planned, read back from its
manifest.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bench.releases.envs import PINNED, Environment
from bench.scenarios.files import Scenario
from bench.sdk.adapter import Adapter, Cell


@dataclass(frozen=True)
class CellPlan:
    """One row to produce: an adapter cell, a scenario, a repetition."""

    cell: Cell
    scenario: Scenario
    rep: int
    seed: int
    environment: Environment | None = None
    """A release environment, run by a worker; None: in-process, the pinned SDK."""
    answers: str = ""
    """Where the provider's answers come from (:meth:`Adapter.answers_for`: the built-in task,
    a user's agent or type, a drawn task; a ``--cassettes`` replay adds its folder). Not part of
    :attr:`cell_id`: the adapter and scenario already decide it."""

    @property
    def cell_id(self) -> str:
        """Stable across runs and machines: derived from the parameters only (a release
        environment's name included; in-process cells keep the ids they always had)."""
        c = self.cell
        key = f"{c.sdk}|{c.mode}|{c.variant}|{c.protocol}|{int(c.stream)}|{self.scenario.name}|{self.rep}|{self.seed}"
        if c.agent:  # built-in cells keep the ids they always had
            key = f"{c.agent}|{key}"
        if self.environment is not None:  # so do in-process ones
            key += f"|{self.environment.name}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    @property
    def environment_name(self) -> str:
        return PINNED if self.environment is None else self.environment.name

    @property
    def pool_name(self) -> str:
        """Which worker pool runs the cell: its environment's, and for a user's agent one of its
        own (the release with the user's dependencies, the worker loading their agent)."""
        return f"{self.environment_name}|{self.cell.agent}" if self.cell.agent else self.environment_name

    @property
    def unit_seed(self) -> int:
        """Same for every SDK on the same (scenario, seed, rep): stochastic draws pair up."""
        digest = hashlib.sha256(f"{self.seed}|{self.scenario.name}|{self.rep}".encode()).digest()
        return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class Filters:
    """``None`` means everything; otherwise the allowed values."""

    modes: frozenset[str] | None = None
    variants: frozenset[str] | None = None
    protocols: frozenset[str] | None = None
    scenarios: frozenset[str] | None = None
    faults: frozenset[str] | None = None

    def keep_cell(self, cell: Cell) -> bool:
        return (
            _allowed(self.modes, cell.mode)
            and _allowed(self.variants, cell.variant)
            and _allowed(self.protocols, cell.protocol)
        )

    def keep_scenario(self, scenario: Scenario) -> bool:
        fault = scenario.fault_label
        fault_ok = self.faults is None or fault in self.faults or fault.split(":")[0] in self.faults
        return _matches_any(self.scenarios, scenario.name) and fault_ok


def _allowed(allowed: frozenset[str] | None, value: str) -> bool:
    return allowed is None or str(value) in allowed


def _matches_any(patterns: frozenset[str] | None, name: str) -> bool:
    """Scenario filters are names or shell globs (``tool_*``)."""
    return patterns is None or any(fnmatchcase(name, pattern) for pattern in patterns)


def expand(
    adapters: Iterable[Adapter], scenarios: list[Scenario], filters: Filters, reps: int = 1, seed: int = 0,
    environment: Environment | None = None,
) -> list[CellPlan]:  # fmt: skip
    plans: list[CellPlan] = []
    for adapter in adapters:
        for cell in adapter.cells():
            if not filters.keep_cell(cell):
                continue
            for scenario in scenarios:
                if filters.keep_scenario(scenario):
                    answers = adapter.answers_for(scenario)
                    plans.extend(CellPlan(cell, scenario, rep, seed, environment, answers) for rep in range(reps))
    return plans


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); shards are numbered from 1."""
    index, _, total = text.partition("/")
    try:
        i, n = int(index), int(total)
    except ValueError:
        raise ValueError(f"--shard takes I/N with whole numbers, e.g. 2/4; got {text!r}") from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text}: I must be between 1 and N")
    return i, n


def in_shard(plan: CellPlan, shard: tuple[int, int] | None) -> bool:
    """A stable slice of the matrix: by a hash of the cell's parameters, so every machine and
    every run puts a cell in the same shard."""
    return shard is None or shard_of(plan.cell_id, shard[1]) == shard[0]


def shard_of(cell_id: str, total: int) -> int:
    """The shard (1..``total``) a cell id falls in: the one rule, read by planning
    (:func:`in_shard`) and by the gate (``bench.run.runplan``: which baseline cells a shard ran)."""
    return int(cell_id, 16) % total + 1
