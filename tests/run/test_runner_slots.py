"""A worker slot's stable route (bench.run.runner.Slot): the cells of an adapter that asks for one
(agentmaker, whose LLMClient fixes its base URL) reach the provider by one URL per slot, each
still its own run with its own ledger, and a cell that did not return hands the slot a new
route; every other adapter's cells keep their run's own route."""

from __future__ import annotations

import asyncio
import importlib
import re
from typing import Any

import pytest

import adapters.agentmaker.adapter as agentmaker_adapter
from adapters.agentmaker.adapter import AgentmakerAdapter
from bench.core.vocabulary import ModeSupport
from bench.provider import LocalProvider
from bench.run.plan import CellPlan
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import default_scenarios
from bench.sdk import registry
from bench.sdk.adapter import Adapter, Endpoint

STALL_LIMIT_S = 10.0
"""Ends ``slow_first_byte_long`` (an hour before its first byte) as a timeout; the other cells reach
the provider within milliseconds, so this stays far from deciding them on a loaded machine."""


class OneSlot(AgentmakerAdapter):
    """agentmaker in one worker slot, so the cells run one after another in it."""

    max_concurrency = 1


def _records(adapter: Adapter, scenario_names: list[str], provider: LocalProvider) -> list[CellRecord]:
    scenarios = {scenario.name: scenario for scenario in default_scenarios()}
    cell = next(c for c in adapter.cells() if c.mode_support is not ModeSupport.UNSUPPORTED and not c.stream)
    plans = [CellPlan(cell, scenarios[name], rep=rep, seed=0) for rep, name in enumerate(scenario_names)]
    for module in adapter.preload:  # imported at the first call, as a release worker does before its first cell
        importlib.import_module(module)
    runner = Runner({adapter.name: adapter}, RunOptions(time_limit_s=STALL_LIMIT_S), suite_id="slots")
    records: list[CellRecord] = []
    asyncio.run(runner.run(plans, provider, records.append))
    return records


def _routes(record: CellRecord) -> set[str]:
    return {re.match(r"/runs/([^/]+)/", attempt["path"]).group(1) for attempt in record.attempts}  # type: ignore[union-attr]


def test_a_slots_cells_share_its_route_until_one_does_not_return(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def counted(spec: Any, endpoint: Endpoint) -> Any:
        built.append(endpoint.root)
        return build(spec, endpoint)

    build = agentmaker_adapter._client
    monkeypatch.setattr(agentmaker_adapter, "_client", counted)
    names = ["valid", "malformed_then_valid", "slow_first_byte_long", "valid"]
    records = _records(OneSlot(), names, provider)
    assert [r.run["outcome"] for r in records] == ["ok", "recovered", "timeout", "ok"]
    assert [r.run["model_calls"] for r in records] == [1, 2, 1, 1]
    routes = [_routes(r) for r in records]
    assert all(len(route) == 1 for route in routes), routes
    assert routes[0] == routes[1] == routes[2] != routes[3]  # renewed after the timed-out cell
    assert next(iter(routes[0])).startswith("slot-")
    assert [root.rpartition("/")[2] for root in built] == [*routes[0], *routes[3]]  # one LLMClient per route
    run_ids = [r.run["run_id"] for r in records]
    assert len(set(run_ids)) == 4
    assert all({a["run_id"] for a in r.attempts} <= {r.run["run_id"]} for r in records)


def test_an_adapter_that_routes_its_own_requests_keeps_each_runs_own_route(provider: LocalProvider) -> None:
    records = _records(registry.load("pydantic-ai"), ["valid", "valid"], provider)
    assert [_routes(r) for r in records] == [{r.run["run_id"]} for r in records]
