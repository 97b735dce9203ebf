"""A run's manifest: the part its plan decides (the same for every run of one plan, what a warm run
reads back from its memo) and the part each run adds (its id, command line, start), and the
cells of a fault family no answer could be derived for, said in both."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from bench.planner import CellPlan, SuiteRequest, builtin_names, request_to_json
from bench.results.store import columns, command_line, harness_version
from bench.run.runner import Runner, new_runner
from bench.sdk import registry
from bench.sdk.adapter import Adapter


def not_measured(adapters: dict[str, Adapter], plans: Sequence[CellPlan], runner: Runner) -> list[dict[str, Any]]:
    """The planned cells of a fault family no answer could be derived for (a user's agent whose
    type gives no ``wrong`` without a check or an example, say), counted by agent (with ``--type``,
    by the user's type), family and reason: recorded in the manifest and said on stderr and in the
    summary, never silent."""
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for plan in plans:
        adapter = adapters[plan.cell.key]
        said = getattr(adapter, "not_measured", None)  # a user's agent, or a built-in one on a user's type
        gap = said(plan.scenario) if said is not None else None
        if gap is not None and not runner.runs(plan):
            counts[(plan.cell.agent, getattr(adapter, "type_reference", ""), *gap)] += 1
    return [
        {"agent": agent, "family": family, "reason": reason, "cells": cells} | ({"type": kind} if kind else {})
        for (agent, kind, family, reason), cells in counts.items()
    ]


def not_measured_line(entry: dict[str, Any]) -> str:
    """One :func:`not_measured` entry as the line ``bench run`` (and ``bench pick``) prints."""
    cells = f"{entry['cells']} cell{'s' if entry['cells'] != 1 else ''}"
    subject = f"type {entry['type']!r}" if entry.get("type") else f"agent {entry['agent']!r}"
    return f"not measured: {subject}: {entry['family']} ({entry['reason']}) x {cells}"


def planned_manifest(request: SuiteRequest, adapters: dict[str, Adapter], plans: Sequence[CellPlan]) -> dict[str, Any]:
    """The part of a manifest its plan decides (the same for every run of the same plan: what a
    warm run served whole reads back from its memo, :mod:`bench.run.warm`)."""
    # An SDK in an environment of its own is its lock's release (registry.sdk_version).
    versions = {name: registry.sdk_version(adapter) for name, adapter in adapters.items()}
    return {
        "python": sys.version.split()[0],
        "sdk_versions": versions,
        "agents": _agents(adapters),
        **_output_type(adapters),
        "seed": request.seed,
        "reps": request.reps,
        "suite": request.suite,
        "scenarios": sorted({p.scenario.name for p in plans}),
        "filters": {k: sorted(v) if v else None for k, v in asdict(request.filters).items()},
        "options": asdict(request.options) | {"redact": list(request.options.redact)},
        "request": request_to_json(request, builtin_names(adapters)),
        "cells_planned": len(plans),
        "not_measured": not_measured(adapters, plans, new_runner(adapters, request.options, "plan")),
        "shard": list(request.shard) if request.shard else None,
        "environments": _environments(plans),
    }


def assembled(suite_id: str, planned: dict[str, Any], env_errors: list[str] | None = None) -> dict[str, Any]:
    """A manifest from its plan's part and this run's (its id, command line, start)."""
    before = ("python", "sdk_versions", "agents", "output_type", "seed", "reps", "suite", "scenarios", "filters",
              "options", "request")  # fmt: skip
    after = ("cells_planned", "not_measured", "shard", "environments")
    return {
        "suite_id": suite_id,
        "schema_version": columns.SCHEMA_VERSION,
        "harness_version": harness_version(),
        **{name: planned[name] for name in before if name in planned},
        "command_line": command_line(),
        **{name: planned[name] for name in after},
        "environment_errors": list(env_errors or []),
        "started_at": datetime.now(UTC).isoformat(),
        "finished_at": None,
        "status": "running",
    }


def _agents(adapters: dict[str, Adapter]) -> dict[str, dict[str, Any]]:
    """The user's own agents in the run: their SDK, reference and derived task (what correct
    means and which faults could be derived), so a reader sees what each agent was measured on."""
    if not any(type(adapter).__module__.startswith("bench.own") for adapter in adapters.values()):
        return {}
    from bench.own.adapter import OwnAgentAdapter

    return {name: adapter.describe() for name, adapter in adapters.items() if isinstance(adapter, OwnAgentAdapter)}


def _output_type(adapters: dict[str, Adapter]) -> dict[str, Any]:
    """``bench pick --type``: ``output_type``, the user's type and the answers derived from it
    (the same for every SDK); nothing for a run of the built-in tasks."""
    typed = [adapter for adapter in adapters.values() if hasattr(adapter, "type_reference")]
    return {"output_type": typed[0].describe()} if typed else {}  # type: ignore[attr-defined]


def _environments(plans: Sequence[CellPlan]) -> list[dict[str, Any]]:
    """Each release environment of the run with its full resolved set (``uv pip freeze``)."""
    seen = {(plan.environment.name, plan.environment.path): plan.environment for plan in plans
            if plan.environment is not None}  # fmt: skip
    return [env.manifest() for env in seen.values()]
