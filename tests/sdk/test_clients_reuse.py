"""A run reuses one agent per configuration across its cells (bench.sdk.clients.reused), and
each cell still reaches only its own provider run and its own harness tool: the rows of cells
run at once on reused agents equal those of the same cells each built for itself."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="pip install 'misfit-bench[pydantic-ai]'")

from adapters.pydantic_ai.adapter import PydanticAIAdapter
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.provider import LocalProvider
from bench.run.plan import CellPlan
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import default_scenarios
from bench.sdk import clients

ADAPTER = PydanticAIAdapter()
CELLS = [
    c
    for c in ADAPTER.cells()
    if c.mode is Mode.TOOL and c.protocol is Protocol.CHAT and c.variant in (Variant.DEFAULT, Variant.HARDENED)
]
SCENARIOS = ("tool_ok", "tool_permission_denied", "tool_upstream_timeout_then_ok", "tool_bad_args_then_ok", "valid")
COMPARED = ("sdk", "variant", "scenario", "rep", "outcome", "model_calls", "exception_type", "tool_errors")


def plans() -> list[CellPlan]:
    scenarios = [s for s in default_scenarios() if s.name in SCENARIOS]
    return [CellPlan(cell, scenario, rep=rep, seed=0) for cell in CELLS for scenario in scenarios for rep in (0, 1)]


def compared(records: list[CellRecord]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.run.get(k) for k in COMPARED) for r in records)


def own_paths_only(records: list[CellRecord]) -> bool:
    """Every request of every cell went to its own run's prefix."""
    return all(a["path"].startswith(f"/runs/{a['run_id']}/v1/") for r in records for a in r.attempts)


@pytest.mark.asyncio
async def test_reused_agents_give_the_rows_of_agents_built_per_cell(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    real_reused = clients.reused

    def counting(key: Any, factory: Any) -> Any:
        def build() -> Any:
            built.append(key)
            return factory()

        return real_reused(key, build)

    monkeypatch.setattr(clients, "reused", counting)
    runner = Runner({ADAPTER.name: ADAPTER}, RunOptions(concurrency=4), suite_id="reuse")
    shared: list[CellRecord] = []
    await asyncio.wait_for(runner.run(plans(), provider, shared.append), 120)
    # Outside a run's sharing block every cell builds its own agent and client, as before.
    alone = [await asyncio.wait_for(runner.run_cell(plan, provider), 30) for plan in plans()]

    assert len(shared) == len(alone) == len(plans())
    assert compared(shared) == compared(alone)
    assert own_paths_only(shared) and own_paths_only(alone)
    # One agent per (cell, task): the tool task and the person task, for each of the two cells.
    assert len(built) == len(set(built)) == 2 * len(CELLS)
    assert {r.run["outcome"] for r in shared if r.run["scenario"] == "tool_permission_denied"} != {"ok"}


@pytest.mark.asyncio
async def test_a_user_type_with_and_without_the_harness_tool_gets_two_agents(
    provider: LocalProvider, tmp_path: Path
) -> None:
    """`bench pick --type`: the tool scenarios answer the same task name and type with the harness
    tool added, so the tool is part of the reuse key; run together, in either order, each scenario
    gives the row it gives alone (an agent built without the tool cannot call it)."""
    from bench.own.typed import TypeRequest, on_type
    from tests.ticket_agent import TICKET_MODEL

    (tmp_path / "reuseapp").mkdir()
    (tmp_path / "reuseapp" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "reuseapp" / "models.py").write_text(TICKET_MODEL, encoding="utf-8")
    typed = on_type({ADAPTER.name: ADAPTER}, TypeRequest("reuseapp.models:Ticket"), tmp_path)[ADAPTER.name]
    scenarios = [s for s in default_scenarios() if s.name in ("valid", "tool_ok")]
    cell = CELLS[0]
    runner = Runner({ADAPTER.name: typed}, RunOptions(concurrency=1), suite_id="typed-reuse")
    alone = [await asyncio.wait_for(runner.run_cell(CellPlan(cell, s, rep=0, seed=0), provider), 30) for s in scenarios]
    for order in (scenarios, scenarios[::-1]):
        shared: list[CellRecord] = []
        await asyncio.wait_for(
            runner.run([CellPlan(cell, s, rep=0, seed=0) for s in order], provider, shared.append), 60
        )
        assert compared(shared) == compared(alone), order
    assert {r.run["scenario"]: r.run["outcome"] for r in alone} == {"valid": "ok", "tool_ok": "ok"}
