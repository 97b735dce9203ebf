"""bench.node.adapter in a run: a TypeScript SDK's cells and a Python SDK's side by side in one
Runner, each row with its ``language``, each TypeScript cell run by the run's Node worker pool
(one worker per slot, closed with the run), or ``unsupported`` with the reason where Node is
missing while the Python cells still run."""

from __future__ import annotations

import asyncio

import psutil
import pytest

from adapters.agentmaker.adapter import AgentmakerAdapter
from adapters.ai.adapter import AiAdapter
from bench.node import setup
from bench.provider import LocalProvider
from bench.run.plan import CellPlan, Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.sdk.adapter import Adapter

ONE_CELL = Filters(protocols=frozenset({"openai-chat"}), variants=frozenset({"default"}), modes=frozenset({"native"}))


def plans(adapters: list[Adapter], names: set[str]) -> list[CellPlan]:
    scenarios = [s for s in load_paths([SCENARIO_DIR]) if s.name in names]
    return expand(adapters, scenarios, ONE_CELL)


def run(provider: LocalProvider, adapters: list[Adapter], names: set[str]) -> list[CellRecord]:
    records: list[CellRecord] = []
    runner = Runner({a.name: a for a in adapters}, RunOptions(), "test")
    asyncio.run(runner.run(plans(adapters, names), provider, records.append))
    return records


def node_workers() -> list[psutil.Process]:
    me = psutil.Process()
    return [p for p in me.children(recursive=True) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
@pytest.mark.skipif(setup.unavailable() is not None, reason=str(setup.unavailable()))
def test_typescript_and_python_cells_run_side_by_side_each_row_with_its_language(provider: LocalProvider) -> None:
    records = run(provider, [AiAdapter(), AgentmakerAdapter()], {"valid", "malformed_persistent"})
    rows = {(r.run["sdk"], r.run["scenario"]): r.run for r in records}
    assert {(sdk, row["language"]) for (sdk, _), row in rows.items()} == {
        ("ai", "typescript"),
        ("agentmaker", "python"),
    }
    assert rows["ai", "valid"]["outcome"] == "ok" and rows["ai", "valid"]["sdk_version"] == setup.locked()["ai"]
    malformed = rows["ai", "malformed_persistent"]
    assert (malformed["outcome"], malformed["exception_type"], malformed["model_calls"]) == (
        "raised", "ai.NoObjectGeneratedError", 1,
    )  # fmt: skip
    assert rows["agentmaker", "valid"]["outcome"] == "ok"
    assert node_workers() == []  # the run's pool closed every Node worker


def test_where_node_is_missing_the_typescript_cells_are_unsupported_and_the_python_ones_run(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    records = run(provider, [AiAdapter(), AgentmakerAdapter()], {"valid"})
    rows = {r.run["sdk"]: r.run for r in records}
    assert rows["ai"]["outcome"] == "unsupported" and rows["ai"]["language"] == "typescript"
    assert rows["ai"]["note"] == f"unsupported here: {setup.unavailable()}"
    assert rows["agentmaker"]["outcome"] == "ok"
