"""``bench run`` as a library function: load adapters and scenarios, expand the matrix, run it
against a fresh local provider, write results as cells finish."""

from __future__ import annotations

import asyncio
import fnmatch
import gc
import logging
import shutil
import socket
import sys
import threading
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.core import interrupts
from bench.core.suggest import did_you_mean
from bench.provider import LocalProvider
from bench.provider.server import loopback_bypasses_proxies
from bench.results import sdklog
from bench.results.sdklog import SdkLog
from bench.results.store import (
    ResultsWriter,
    RunLock,
    columns,
    command_line,
    harness_version,
    new_suite_id,
    pause_for_tests,
    point_latest,
    reached_for_tests,
    read_manifest,
    read_table,
    write_manifest,
)
from bench.run import egress, narrowing
from bench.run import request as run_request
from bench.run.narrowing import Named
from bench.run.plan import CellPlan, Filters, expand, in_shard
from bench.run.procs import process_count, run_in_processes
from bench.run.runner import CellRecord, RunLoop, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, SUITE_MEMBERS, Scenario, load_paths
from bench.sdk import registry
from bench.sdk.adapter import Adapter
from bench.sdk.clients import lazy_trust_store

if TYPE_CHECKING:
    from bench.own.typed import TypeRequest
    from bench.releases.envs import Environment
    from bench.releases.pool import WorkerPool
    from bench.releases.spec import ReleaseSpec
from bench.core.vocabulary import Mode, Protocol


class SuiteError(Exception):
    """Bad input to a run (unknown SDK, no cells left after filtering): exit code 2."""


@dataclass(frozen=True)
class SuiteRequest:
    sdks: tuple[str, ...] = ()
    """Empty: every registered adapter whose SDK is installed."""
    filters: Filters = field(default_factory=Filters)
    suite: str = "default"
    scenario_paths: tuple[Path, ...] = (SCENARIO_DIR,)
    reps: int = 1
    seed: int = 0
    options: RunOptions = field(default_factory=RunOptions)
    results_root: Path = Path("results")
    shard: tuple[int, int] | None = None
    """(I, N): run only the I-th of N stable slices of the matrix (for CI job matrices)."""
    agents: tuple[str, ...] | None = None
    """The user's own agents (``--agent``: module:attr or a ``[[tool.bench.agents]]`` name; empty:
    every declared one). None: no own agent, the built-in adapters only."""
    project: Path = Path(".")
    """The user's project: where their pyproject.toml and agent modules are."""
    releases: tuple[str, ...] = ()
    """``--release`` specs (``pydantic-ai==1.0.18``, ``openai-agents@latest``, ``...@pinned``, or a
    bare SDK for its ``[tool.bench.releases]`` list). Empty: the pinned SDKs, in-process."""
    cache_dir: Path | None = None
    """Where release environments are cached; None: :func:`bench.releases.envs.cache_root`."""
    output_type: TypeRequest | None = None
    """``bench pick --type``: every built-in adapter answers the user's own type (``bench.own.typed``)
    instead of each scenario's built-in task. None: the built-in tasks."""
    tasks: str = "builtin"
    """``cassettes`` (``bench run --cassettes DIR --tasks cassettes``): every built-in adapter runs
    on tasks drawn from the folder's recorded answers (:mod:`bench.cassettes.tasks`) instead of
    each scenario's built-in task. ``builtin``: the built-in tasks."""
    procs: int | None = None
    """Processes running cells side by side (``bench.run.procs``); None: one per core, fewer for a
    small run. How the run was executed, not what it is: not part of ``request_to_json``."""
    executor: str = "local"
    """Where the cells run: ``local`` (this machine, ``procs`` processes) or ``ray`` (Ray tasks,
    :mod:`bench.run.cluster`). How, not what: not part of ``request_to_json`` either."""


def load_adapters(names: tuple[str, ...], warn: Callable[[str], None]) -> dict[str, Adapter]:
    """Named adapters must load; with no names, uninstalled SDKs are skipped with a warning."""
    chosen = names or tuple(registry.registrations())
    adapters: dict[str, Adapter] = {}
    for name in chosen:
        try:
            adapters[name] = registry.load(name)
        except registry.UnknownAdapter as error:
            raise SuiteError(str(error)) from None
        except registry.AdapterUnavailable as error:
            if names:
                raise SuiteError(f"{name}: {error}") from None
            warn(f"skipping {name}: {error}")
    if not adapters:
        raise SuiteError("no adapter could be loaded; install one with: pip install -e '.[all]'")
    return adapters


def new_runner(adapters: dict[str, Adapter], options: RunOptions, suite_id: str) -> Runner:
    """The run's :class:`Runner`; a ``--cassettes`` folder it cannot use (moved since the run was
    made, on ``--resume`` or ``--rerun``) is one line, exit 2, like a fresh run's."""
    from bench.cassettes import CassetteError

    try:
        return Runner(adapters, options, suite_id)
    except CassetteError as error:
        raise SuiteError(str(error)) from None


def select_scenarios(request: SuiteRequest, adapters: dict[str, Adapter] | None = None) -> list[Scenario]:
    """The suite's scenarios; a filter naming none of them (nor one an adapter adds) is a typo."""
    every = load_paths(list(request.scenario_paths))
    scenarios = [s for s in every if s.suite in SUITE_MEMBERS[request.suite]]
    kept = {s.name for adapter in (adapters or {}).values() for s in adapter.scenarios(scenarios)}
    known = kept | {s.name for s in scenarios}
    patterns = sorted(request.filters.scenarios or frozenset())
    unknown = [pattern for pattern in patterns if not fnmatch.filter(known, pattern)]
    if unknown:
        raise SuiteError(_unknown_scenarios(unknown, known, every, request.suite))
    if adapters and (dropped := [pattern for pattern in patterns if not fnmatch.filter(kept, pattern)]):
        raise SuiteError(_dropped_scenarios(dropped, adapters, sorted(kept - {s.name for s in scenarios})))
    return scenarios


def _dropped_scenarios(dropped: list[str], adapters: dict[str, Adapter], derived: list[str]) -> str:
    """One line: the scenarios exist but no chosen adapter runs them (a built-in tool scenario
    asked of a user's agent, whose tool scenarios are derived from its own tools instead)."""
    instead = f"its derived ones: {', '.join(derived)}" if derived else "it declares no tools"
    return (
        f"scenario(s) {', '.join(dropped)} run on no chosen adapter ({', '.join(sorted(adapters))}): "
        f"a user's agent runs tool scenarios derived from its own tools, not the built-in ones ({instead})"
    )


def _unknown_scenarios(unknown: list[str], known: set[str], every: list[Scenario], suite: str) -> str:
    """One line: a name of another suite says which suite; a typo gets the closest name."""
    elsewhere = {s.name: s.suite for s in every if s.name not in known}
    other = sorted({elsewhere[name] for pattern in unknown for name in fnmatch.filter(elsewhere, pattern)})
    if other and all(fnmatch.filter(elsewhere, pattern) for pattern in unknown):
        suites = " or ".join(repr(o) for o in other)
        return f"scenario(s) {', '.join(unknown)} belong to suite {suites}, not {suite!r}: add --suite {other[0]}"
    hints = "".join(did_you_mean(pattern, known) for pattern in unknown[:1])
    return f"unknown scenario(s) {', '.join(unknown)} in suite {suite!r}{hints} (see 'bench scenarios list')"


def check_filter_names(filters: Filters, adapters: dict[str, Adapter], scenarios: list[Scenario]) -> None:
    """An unknown mode, variant, protocol or fault is a typo, not an empty selection."""
    cells = [cell for adapter in adapters.values() for cell in adapter.cells()]
    known = {
        "mode": {str(mode) for mode in Mode},
        "variant": {cell.variant for cell in cells},
        "protocol": {str(protocol) for protocol in Protocol},
        "fault": {s.fault_label for s in scenarios} | {s.fault_label.split(":")[0] for s in scenarios},
    }
    given = {"mode": filters.modes, "variant": filters.variants, "protocol": filters.protocols, "fault": filters.faults}
    for name, values in given.items():
        unknown = sorted((values or frozenset()) - known[name])
        if unknown:
            hint = did_you_mean(unknown[0], known[name])
            raise SuiteError(
                f"unknown {name} {', '.join(map(repr, unknown))}{hint or ';'} known: {', '.join(sorted(known[name]))}"
            )


def load_all(request: SuiteRequest, warn: Callable[[str], None]) -> dict[str, Adapter]:
    """The built-in adapters asked for, and the user's own agents; with own agents and no
    ``--sdk``, only the own agents."""
    if request.tasks == "cassettes":
        return _on_cassettes(request, warn)
    if request.output_type is not None:
        return _on_type(request, warn)
    if request.agents is None:
        return load_adapters(request.sdks, warn)
    from bench.own.adapter import load_agents
    from bench.own.config import OwnAgentError

    try:
        own: dict[str, Adapter] = dict(load_agents(list(request.agents), request.project))
    except OwnAgentError as error:
        raise SuiteError(str(error)) from None
    builtin = load_adapters(request.sdks, warn) if request.sdks else {}
    if clash := sorted(set(own) & set(builtin)):
        raise SuiteError(f"agent name {clash[0]!r} is also an SDK name; rename it in [[tool.bench.agents]]")
    return builtin | own


def _on_type(request: SuiteRequest, warn: Callable[[str], None]) -> dict[str, Adapter]:
    """The built-in adapters asked for, each answering the user's type (``bench pick --type``)."""
    from bench.own.config import OwnAgentError
    from bench.own.typed import on_type

    assert request.output_type is not None
    if request.agents is not None or request.releases:
        raise SuiteError("--type runs the built-in adapters, in-process: it does not take --agent or --release")
    try:
        return on_type(load_adapters(request.sdks, warn), request.output_type, request.project)
    except OwnAgentError as error:
        raise SuiteError(str(error)) from None


def _on_cassettes(request: SuiteRequest, warn: Callable[[str], None]) -> dict[str, Adapter]:
    """The built-in adapters asked for, each on the tasks drawn from the ``--cassettes`` folder."""
    from bench.cassettes import Library, Redaction, load_cassettes
    from bench.cassettes.tasks import draw_tasks, on_drawn

    if request.options.cassettes is None:
        raise SuiteError("--tasks cassettes draws the tasks from a cassette folder: give --cassettes DIR")
    if request.agents is not None or request.releases or request.output_type is not None:
        raise SuiteError("--tasks cassettes runs the built-in adapters, in-process: it does not take --agent, "
                         "--release or --type")  # fmt: skip
    folder = Path(request.options.cassettes)
    try:
        drawn = draw_tasks(Library(load_cassettes(folder), Redaction(patterns=request.options.redact)))
        adapters = on_drawn(load_adapters(request.sdks, warn), drawn, folder)
    except ValueError as error:  # CassetteError too
        raise SuiteError(f"--cassettes {error}") from None
    for line in drawn.skipped:
        warn(line)
    return adapters


def plan_suite(
    request: SuiteRequest, warn: Callable[[str], None], env_errors: list[str] | None = None
) -> tuple[dict[str, Adapter], list[CellPlan]]:
    """Adapters and the cells to run. With ``request.releases``, one copy of each SDK's cells
    per release environment (built or reused first); a release whose environment cannot be
    built adds one line to ``env_errors`` and the others still run."""
    specs = _release_specs(request)
    given = request
    if specs and not request.sdks and request.agents is None:  # with --agent: the agents' releases
        request = replace(request, sdks=tuple(dict.fromkeys(spec.sdk for spec in specs)))
    adapters = load_all(request, warn)
    scenarios = select_scenarios(request, adapters)
    check_filter_names(request.filters, adapters, scenarios)
    check_plan_size(adapters, scenarios, request, specs)
    named = named_options(given, adapters, specs)
    _said(named, narrowing.emptied(named, narrowing.universe(adapters, scenarios)), warn)
    reached_for_tests("expanding")
    if not specs:
        plans = [plan for adapter in adapters.values() for plan in _expand(adapter, scenarios, request)]
    else:
        plans = _release_plans(request, specs, adapters, scenarios, warn, env_errors)
    if request.shard is not None and plans:
        sliced = [plan for plan in plans if in_shard(plan, request.shard)]
        _said(named, narrowing.in_shard_only(named, plans, sliced, "/".join(map(str, request.shard))), warn)
        plans = sliced
    if not plans:
        raise SuiteError("the filters leave no cell to run; see 'bench list' and 'bench scenarios list'")
    runner = new_runner(adapters, request.options, "plan")
    unmeasured = [not_measured_line(entry) for entry in not_measured(adapters, plans, runner)]
    if not any(runner.runs(plan) for plan in plans):
        raise SuiteError(
            f"every cell of the plan is unsupported ({len(plans)} cells): nothing would run; "
            + ("".join(f"{line}; " for line in unmeasured) or "see 'bench list' for what each SDK can express")
        )
    for line in unmeasured:
        warn(line)
    return adapters, plans


def named_options(request: SuiteRequest, adapters: dict[str, Adapter], specs: Sequence[ReleaseSpec]) -> list[Named]:
    """What the run's options name, each a :class:`bench.run.narrowing.Named`: the adapters
    chosen (``--sdk``, ``--agent``, ``--release``, ``--type``, ``--tasks cassettes``) and the
    filters of their cells (``--mode`` to ``--fault``)."""
    own = [name for name, adapter in adapters.items() if name not in builtin_names(adapters)]
    chosen = [f"--sdk {','.join(request.sdks)}"] if request.sdks else []
    chosen += [f"--agent {','.join(own)}"] if request.agents is not None else []
    chosen += [f"--release {','.join(map(str, specs))}"] if specs and not request.sdks else []
    named: list[Named] = []
    on_adapter = lambda candidate, value: candidate.cell.key == value  # noqa: E731
    anything = lambda candidate, value: True  # noqa: E731
    if request.sdks:
        named.append(narrowing.adapter_option("--sdk", request.sdks, on_adapter, request.suite))
    if request.agents is not None:
        named.append(narrowing.adapter_option("--agent", own, on_adapter, request.suite))
    if specs:
        sdk_of = {str(spec): spec.sdk for spec in specs}
        on_release = lambda candidate, value: candidate.cell.sdk == sdk_of[value]  # noqa: E731
        named.append(narrowing.adapter_option("--release", sdk_of, on_release, request.suite))
    if request.output_type is not None:
        named.append(narrowing.adapter_option("--type", [request.output_type.reference], anything, request.suite))
    if request.tasks == "cassettes":
        folder = str(request.options.cassettes)
        named.append(narrowing.adapter_option("--tasks cassettes --cassettes", [folder], anything, request.suite))
    return named + narrowing.filter_options(request.filters, " ".join(chosen) or "every installed SDK")


def _said(named: list[Named], lines: dict[str, list[str]], warn: Callable[[str], None]) -> None:
    try:
        narrowing.said(named, lines, warn)
    except narrowing.Emptied as error:
        raise SuiteError(str(error)) from None


def not_measured(adapters: dict[str, Adapter], plans: list[CellPlan], runner: Runner) -> list[dict[str, Any]]:
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


def _expand(
    adapter: Adapter, scenarios: list[Scenario], request: SuiteRequest, environment: Environment | None = None
) -> list[CellPlan]:
    """One adapter's cells x the scenarios it runs (:meth:`Adapter.scenarios`: a user's agent
    adds its own) x reps, in-process or in a release ``environment``: the one way to expand."""
    return expand([adapter], adapter.scenarios(scenarios), request.filters, request.reps, request.seed, environment)


def _release_specs(request: SuiteRequest) -> list[ReleaseSpec]:
    from bench.releases import spec

    if not request.releases:
        return []
    try:
        parsed = [spec.parse(text) for text in request.releases]
        expanded = spec.expand(parsed, spec.configured() if any(p.version is None for p in parsed) else {})
    except spec.ReleaseSpecError as error:
        raise SuiteError(str(error)) from None
    # With --agent, a release may be an agent's SDK's: _release_plans checks that each is used.
    outside = sorted({p.sdk for p in expanded} - set(request.sdks)) if request.sdks and request.agents is None else []
    if outside:
        raise SuiteError(f"--release names {', '.join(outside)}, which --sdk leaves out")
    return expanded


def _release_plans(
    request: SuiteRequest, specs: list[ReleaseSpec], adapters: dict[str, Adapter], scenarios: list[Scenario],
    warn: Callable[[str], None], env_errors: list[str] | None,
) -> list[CellPlan]:  # fmt: skip
    """One copy of the cells per release environment: a built-in adapter's (``--sdk``) in the
    release's own environment, a user's agent's in the release with their project's dependencies
    (:func:`_own_environment`); a release no adapter or agent of the run uses is refused."""
    from bench.releases.envs import EnvironmentStore
    from bench.releases.prepare import prepare

    builtin = {name: adapter for name, adapter in adapters.items() if name in request.sdks}
    own = {name: adapter for name, adapter in adapters.items() if name not in builtin}
    own_sdks = {name: adapter.cells()[0].sdk for name, adapter in own.items()}
    for spec in specs:
        if spec.sdk not in builtin and spec.sdk not in own_sdks.values():
            runs_on = ", ".join(f"{name} on {sdk}" for name, sdk in own_sdks.items())
            raise SuiteError(
                f"--release {spec}: no agent of this run uses {spec.sdk} ({runs_on}); "
                f"add --sdk {spec.sdk} to measure the built-in adapter on it"
            )
    named = {spec.sdk for spec in specs}
    for name, sdk in own_sdks.items():
        if sdk not in named:  # never dropped in silence: the run would leave the agent out
            raise SuiteError(f"agent {name!r} runs on {sdk}, which no --release names; add --release {sdk}@pinned")
    packages = {spec.sdk: builtin.get(spec.sdk) or _builtin(spec.sdk) for spec in specs}
    store = EnvironmentStore(request.cache_dir)
    envs, errors = prepare(specs, packages, store, progress=warn)
    plans = []
    for env in envs:
        if env.sdk in builtin:
            plans += _expand(builtin[env.sdk], scenarios, request, None if env.path is None else env)
        for name in (name for name, sdk in own_sdks.items() if sdk == env.sdk):
            try:
                placed = _own_environment(request, store, packages[env.sdk], env, name, warn)
                if placed is not None:
                    _loads_in(own[name], placed, request.project)
            except SuiteError as error:
                errors.append(str(error))
                continue
            plans += _expand(own[name], scenarios, request, placed)
    if env_errors is not None:
        env_errors.extend(errors)
    if not plans:
        raise SuiteError("; ".join(errors) or "no release environment to run")
    return plans


def _builtin(sdk: str) -> Adapter:
    """The built-in adapter of ``sdk``: what a release of it installs (a user's agent's too)."""
    try:
        return registry.load(sdk)
    except (registry.UnknownAdapter, registry.AdapterUnavailable) as error:
        raise SuiteError(f"--release {sdk}: {error}") from None


def _own_environment(
    request: SuiteRequest, store: Any, base: Adapter, env: Environment, agent: str, warn: Callable[[str], None]
) -> Environment | None:
    """Where a user's agent runs on the release ``env``: in-process for ``@pinned`` (the user's
    interpreter, their dependencies installed as they are); else the release's environment with
    the project's own dependencies resolved against the release's pins, built once and cached.
    A conflict is one line naming the agent, the release and the resolver's reason."""
    from bench.own.adapter import WORKER_REQUIREMENTS
    from bench.own.config import OwnAgentError, project_requirements
    from bench.releases.envs import EnvBuildError
    from bench.releases.prepare import package_of

    if env.path is None:
        return None
    try:
        extra = [*project_requirements(request.project), *WORKER_REQUIREMENTS]
        label = f"agent {agent!r}"
        return store.build_with(package_of(base), env.version, extra, label)
    except (OwnAgentError, EnvBuildError) as error:
        raise SuiteError(str(error)) from None


def _loads_in(adapter: Adapter, env: Environment, project: Path) -> None:
    """The user's agent loads in the release environment (its module's imports resolve there),
    checked once before its cells are planned: else one line, the user's (exit 2)."""
    from bench.own.adapter import OwnAgentAdapter, check_in_environment
    from bench.own.config import OwnAgentError

    assert isinstance(adapter, OwnAgentAdapter)
    try:
        check_in_environment(adapter, env.python, project, env.name)
    except OwnAgentError as error:
        raise SuiteError(str(error)) from None


def check_settings(request: SuiteRequest) -> None:
    """The run's settings within :mod:`bench.run.request`'s limits (one line naming the flag)."""
    try:
        run_request.check(request_to_json(request, request.sdks))
    except ValueError as error:
        raise SuiteError(str(error)) from None
    check_executor(request.executor)


def check_executor(executor: str) -> None:
    """``ray`` needs Ray installed: one line with the install hint, before any run folder exists."""
    if executor == "ray":
        from bench.run.cluster import RayUnavailable, import_ray

        try:
            import_ray()
        except RayUnavailable as error:
            raise SuiteError(str(error)) from None


def check_plan_size(
    adapters: dict[str, Adapter], scenarios: list[Scenario], request: SuiteRequest, specs: Sequence[ReleaseSpec] = ()
) -> None:
    """Count the plan before expanding it (and before any release environment is built): a huge
    ``--reps`` is one line, not a MemoryError. With ``specs`` (``--release``), an SDK's cells
    count once per release environment of it, as :func:`_release_plans` expands them."""
    releases = Counter(spec.sdk for spec in set(specs))
    keep = request.filters.keep_cell
    # Once per release of the cell's SDK (a user's agent's cells too: its SDK's releases).
    cells = sum(releases[cell.sdk] if specs else 1 for adapter in adapters.values() for cell in adapter.cells()
                if keep(cell))  # fmt: skip
    kept = sum(1 for scenario in scenarios if request.filters.keep_scenario(scenario))
    try:
        run_request.check_plan_size(cells, kept, request.reps)
    except ValueError as error:
        raise SuiteError(str(error)) from None


def builtin_names(adapters: dict[str, Adapter]) -> tuple[str, ...]:
    """The built-in (registered) adapters of a run; a user's own agents are recorded under
    ``agents``, and re-loaded from there (by a resume, by a shard process)."""
    return tuple(name for name, adapter in adapters.items() if not type(adapter).__module__.startswith("bench.own"))


def request_to_json(request: SuiteRequest, sdks: tuple[str, ...]) -> dict[str, Any]:
    """Everything needed to expand the same plan again (``--resume``)."""
    recorded = {
        "sdks": list(sdks),
        "filters": {k: sorted(v) if v else None for k, v in asdict(request.filters).items()},
        "suite": request.suite,
        "scenario_paths": [_portable(path) for path in request.scenario_paths],
        "reps": request.reps,
        "seed": request.seed,
        "options": asdict(request.options) | {"redact": list(request.options.redact)},
        "shard": list(request.shard) if request.shard else None,
        "agents": list(request.agents) if request.agents is not None else None,
        "project": str(request.project) if request.agents is not None or request.output_type is not None else None,
        "releases": list(request.releases),
    }
    if request.output_type is not None:
        recorded["output_type"] = request.output_type.to_json()
    if request.tasks != "builtin":  # written only when set: a run of the built-in tasks reads as before
        recorded["tasks"] = request.tasks
    return recorded


PROJECT_DIR = SCENARIO_DIR.parent


def _portable(path: Path) -> str:
    """A scenario path as the manifest records it: relative to the project when inside it (so a
    committed baseline names ``scenarios``, not the machine's checkout), else absolute."""
    resolved = path.resolve()
    return resolved.relative_to(PROJECT_DIR).as_posix() if resolved.is_relative_to(PROJECT_DIR) else str(resolved)


def request_from_json(data: dict[str, Any], results_root: Path) -> SuiteRequest:
    filters = {k: frozenset(v) if v else None for k, v in data["filters"].items()}
    return SuiteRequest(
        sdks=tuple(data["sdks"]),
        filters=Filters(**filters),
        suite=data["suite"],
        scenario_paths=tuple(PROJECT_DIR / p for p in data["scenario_paths"]),  # absolute p: kept as is
        reps=data["reps"],
        seed=data["seed"],
        options=RunOptions(**data["options"] | {"redact": tuple(data["options"].get("redact", ()))}),
        results_root=results_root,
        shard=(int(data["shard"][0]), int(data["shard"][1])) if data["shard"] else None,
        agents=tuple(data["agents"]) if data.get("agents") is not None else None,
        project=Path(data["project"]) if data.get("project") else Path("."),
        releases=tuple(data.get("releases") or ()),
        output_type=_type_request(data.get("output_type")),
        tasks=data.get("tasks", "builtin"),
    )


def _type_request(data: dict[str, Any] | None) -> TypeRequest | None:
    """The recorded ``--type`` (None for a run of the built-in tasks)."""
    if not data:
        return None
    from bench.own.typed import TypeRequest

    return TypeRequest(**data)


def manifest(
    request: SuiteRequest, suite_id: str, adapters: dict[str, Adapter], plans: list[CellPlan],
    env_errors: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    versions: dict[str, str | None] = {}
    for name, adapter in adapters.items():
        try:
            versions[name] = version(adapter.distribution)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "suite_id": suite_id,
        "schema_version": columns.SCHEMA_VERSION,
        "harness_version": harness_version(),
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
        "command_line": command_line(),
        "cells_planned": len(plans),
        "not_measured": not_measured(adapters, plans, new_runner(adapters, request.options, "plan")),
        "shard": list(request.shard) if request.shard else None,
        "environments": _environments(plans),
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


def _environments(plans: list[CellPlan]) -> list[dict[str, Any]]:
    """Each release environment of the run with its full resolved set (``uv pip freeze``)."""
    seen = {(plan.environment.name, plan.environment.path): plan.environment for plan in plans
            if plan.environment is not None}  # fmt: skip
    return [env.manifest() for env in seen.values()]


class _SocketTracker:
    """Sockets opened while a run is in progress (the SDKs' HTTP clients, the provider's).

    SDKs cache their HTTP clients in module globals (pydantic-ai's cached client, LangChain's
    default httpx clients), so connections to the provider outlive the run that opened them.
    The run closes what is still open once its event loop has finished: nothing outlives it.
    """

    active: _SocketTracker | None = None

    def __init__(self) -> None:
        self.sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def __enter__(self) -> _SocketTracker:
        _install_socket_audit()
        _SocketTracker.active = self
        return self

    def __exit__(self, *exc: object) -> None:
        _SocketTracker.active = None

    def close_leftovers(self, peer: tuple[str, int]) -> int:
        """Close the still-open client connections to ``peer`` (the provider, now stopped)."""
        closed = 0
        for sock in list(self.sockets):
            try:
                connected_to = sock.getpeername()[:2] if sock.fileno() != -1 else None
            except OSError:
                continue  # not connected (a listening socket, or already shut down)
            if connected_to == peer:
                sock.close()
                closed += 1
        return closed


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """While a run is in progress: track the sockets it opens, and refuse what would leave the
    machine (:func:`bench.run.egress.check` raises in the caller, before anything is sent)."""
    tracker = _SocketTracker.active
    if tracker is None:
        return
    if event == "socket.__new__" and args and isinstance(args[0], socket.socket):
        tracker.sockets.add(args[0])
    elif event.startswith("socket."):
        egress.check(event, args)


_AUDIT_INSTALLED: list[bool] = []


def _install_socket_audit() -> None:
    if not _AUDIT_INSTALLED:  # audit hooks cannot be removed: install one, switched by `active`
        sys.addaudithook(_audit)
        _AUDIT_INSTALLED.append(True)


_PREVIOUS_HOOKS: list[Callable[[Any], Any]] = []


_PREVIOUS_STREAMS: list[tuple[Any, Any, Any]] = []
"""sys.stdout and sys.stderr as they were before each nested capture, with the log stream."""


def _capture_sdk_logs(directory: Path) -> logging.Handler:
    """SDKs log their own failures ("Error getting response") and warn; during a run those are
    data, not terminal noise: they go to ``sdk.log`` in the run folder, stderr stays for progress,
    through one :class:`bench.results.sdklog.SdkLog` (bounded per cell and per run)."""
    # What in-process SDKs print (pydantic-ai's first-run banner and its Logfire advertisement,
    # pydantic_ai/_display.py display_agent_banner, written to sys.stderr when it is a terminal;
    # agentmaker's prints; the Claude CLI's stderr lines the adapter forwards) goes to sdk.log
    # too: the terminal is the progress line's. Callers that print during a run hold their own
    # stream (the CLI's console is bound to the real stderr).
    stream = SdkLog(directory / "sdk.log")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.captureWarnings(True)
    _PREVIOUS_HOOKS.append(sys.unraisablehook)
    sys.unraisablehook = _unraisable_logger(stream, directory / "sdk.log")
    _PREVIOUS_STREAMS.append((sys.stdout, sys.stderr, stream))
    sys.stdout = sys.stderr = stream
    return handler


def _unraisable_logger(stream: SdkLog, path: Path) -> Callable[[Any], None]:
    """Errors in SDK finalisers (coroutines closed by a cancelled cell, collected whenever the
    garbage collector gets to them, even after an interrupt) go to sdk.log, not the terminal:
    through the run's stream while it is open, after it only while the file is under its limit."""

    def hook(unraisable: Any) -> None:
        line = f"{unraisable.err_msg or 'Exception ignored'}: {unraisable.exc_value!r} in {unraisable.object!r}\n"
        if not stream.closed:
            stream.write(line)
        elif not path.exists() or path.stat().st_size < sdklog.RUN_LIMIT:
            with path.open("a", encoding="utf-8") as log:
                log.write(line)

    return hook


def _release_sdk_logs(handler: logging.Handler, completed: bool) -> None:
    if _PREVIOUS_STREAMS:
        sys.stdout, sys.stderr, stream = _PREVIOUS_STREAMS.pop()
        stream.close()
    previous = _PREVIOUS_HOOKS.pop() if _PREVIOUS_HOOKS else sys.__unraisablehook__
    if completed:  # after an interrupt, finalisers keep running until exit: keep them quiet
        # The caller's own hook comes back (pytest's, when a run happens inside a test).
        sys.unraisablehook = previous
    logging.captureWarnings(False)
    logging.getLogger().removeHandler(handler)
    handler.close()


def run_suite(
    request: SuiteRequest,
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
) -> Path:
    """Run the matrix; returns the results directory. Interrupted runs keep what finished."""
    check_settings(request)
    env_errors: list[str] = []
    adapters, plans = plan_suite(request, warn, env_errors)
    suite_id = new_suite_id()
    directory = request.results_root / suite_id
    directory.mkdir(parents=True)
    lock = RunLock(directory)
    try:
        lock.acquire()
        meta = manifest(request, suite_id, adapters, plans, env_errors) | {"status": "running"}
        pause_for_tests("created")
        write_manifest(directory, meta)
    except BaseException:  # an interrupt before the manifest: no run yet, so no folder either
        lock.release()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return _execute(request, adapters, plans, directory, meta, on_record, on_plan, lock)


INTERRUPT_GRACE_S = 60.0
"""How long an interrupted run's thread is given to record the interruption (flush, manifest,
lock) before the interrupt reaches the caller anyway: a stall, not slowness."""


def in_own_loop[T](call: Callable[[], T]) -> T:
    """``call()`` here when no event loop runs in this thread, else in a joined thread of its own:
    ``asyncio.run`` refuses to nest in a running loop (pytest-asyncio's, a Jupyter kernel's), and
    the run's thread, loop and sockets end before this returns. Interrupted while it waits (a
    notebook's interrupt button), it interrupts the run's thread too, waits for it to write the
    run as ``interrupted``, and raises ``KeyboardInterrupt``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="misfit-run")
    worker.start()
    # Waited for on an event, not Thread.join: a join interrupted by KeyboardInterrupt marks the
    # thread stopped while it still runs (CPython 3.12's _wait_for_tstate_lock), so a second join
    # would return at once and the interpreter would not wait for the run at exit.
    try:
        finished.wait()
    except KeyboardInterrupt:  # the kernel's interrupt: the run stops as a Ctrl-C stops `bench run`
        interrupts.interrupt_thread(worker)
        finished.wait(INTERRUPT_GRACE_S)
        raise
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return cast(T, outcome["value"])


def resume_suite(
    reference: str | Path,
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
    procs: int | None = None,
    executor: str = "local",
) -> Path:
    """Run only the cells an interrupted run is missing, into the same folder: the result is
    the table an uninterrupted run would have written (cell ids are stable). ``procs`` and
    ``executor``: as :class:`SuiteRequest`'s (how to run, not recorded with the request)."""
    directory = Path(reference)
    read_manifest(directory)  # not a run: say so before anything else
    check_executor(executor)
    lock = RunLock(directory).acquire()  # before reading what is done: no other writer adds to it
    try:
        return _resume_locked(directory, lock, on_record, warn, on_plan, procs, executor)
    except BaseException:
        lock.release()
        raise


def _resume_locked(
    directory: Path, lock: RunLock, on_record: Callable[[CellRecord], None], warn: Callable[[str], None],
    on_plan: Callable[[int], None], procs: int | None, executor: str,
) -> Path:  # fmt: skip
    meta = read_manifest(directory)
    request = replace(recorded_request(directory, meta, "resume"), procs=procs, executor=executor)
    adapters, plans = plan_suite(request, warn)
    done = set(read_table(directory, "runs").column("cell_id").to_pylist())
    missing = [plan for plan in plans if plan.cell_id not in done]
    meta["resumed"] = [*meta.get("resumed", []), datetime.now(UTC).isoformat()]
    return _execute(request, adapters, missing, directory, meta, on_record, on_plan, lock)


def recorded_request(directory: Path, meta: Any, action: str) -> SuiteRequest:
    """The request a run's manifest records (``meta``), checked within the same limits as one
    from the command line, to ``action`` (resume, rerun) the run: every problem is one line
    naming the manifest and the field, ending in "cannot <action>"."""
    manifest_path = directory / "manifest.json"
    if isinstance(meta, dict) and "request" not in meta:
        raise SuiteError(f"{directory}: this run's manifest does not say how it was made; cannot {action}")
    if not isinstance(meta, dict):
        raise SuiteError(f"{manifest_path}: not a JSON object; cannot {action}")
    if not isinstance(meta["request"], dict):
        raise SuiteError(f"{manifest_path}: field request: not an object; cannot {action}")
    try:
        run_request.check(meta["request"], str(manifest_path))
        return request_from_json(meta["request"], directory.parent)
    except (KeyError, TypeError, ValueError) as error:
        raise SuiteError(f"{error}; cannot {action}") from None


def _worker_pools(
    adapters: dict[str, Adapter], plans: list[CellPlan], log: Path, project: Path = Path(".")
) -> dict[str, WorkerPool]:
    """A worker pool per release environment in the plan, sized by the adapter's concurrency."""
    from bench.releases.pool import WorkerCommand, WorkerPool

    pools: dict[str, WorkerPool] = {}
    for plan in plans:
        env = plan.environment
        if env is not None and env.path is not None and plan.pool_name not in pools:
            adapter = adapters[plan.cell.key]
            command = _own_worker(adapter, env.python, log, project) if plan.cell.agent else None
            command = command or WorkerCommand(env.python, registry.adapter_target(env.sdk), log)
            pools[plan.pool_name] = WorkerPool(command, adapter.max_concurrency)
    return pools


def _own_worker(adapter: Adapter, python: Path, log: Path, project: Path) -> Any:
    """The worker command for a user's agent in a release environment: their project on the
    path, the agent's entry in the environment (:func:`bench.own.adapter.from_worker_environment`)."""
    from bench.own.adapter import WORKER_TARGET, OwnAgentAdapter, worker_variables
    from bench.releases.pool import WorkerCommand

    assert isinstance(adapter, OwnAgentAdapter)
    root = project.resolve()
    paths = tuple(str(p) for p in (root, root / "src") if p.is_dir())
    return WorkerCommand(python, WORKER_TARGET, log, paths, worker_variables(adapter, root))


async def _run_and_close(
    runner: Runner, plans: list[CellPlan], provider: LocalProvider, record: Callable[[CellRecord], None],
    pools: dict[str, WorkerPool],
) -> None:  # fmt: skip
    try:
        with interrupts.watching():  # inside asyncio.run: its SIGINT handler is the one wrapped
            await runner.run(plans, provider, record)
    finally:
        for pool in pools.values():
            await pool.close()


def _execute(
    request: SuiteRequest, adapters: dict[str, Adapter], plans: list[CellPlan], directory: Path,
    meta: dict[str, Any], on_record: Callable[[CellRecord], None], on_plan: Callable[[int], None], lock: RunLock,
) -> Path:  # fmt: skip
    """Run ``plans`` into ``directory``, whose ``lock`` this call holds and releases."""
    on_plan(len(plans))
    writer = ResultsWriter(directory)
    meta["status"] = "running"
    write_manifest(directory, meta)

    def record(cell: CellRecord) -> None:
        writer.add(cell.run, cell.attempts)
        on_record(cell)

    runner = new_runner(adapters, request.options, meta["suite_id"])
    runnable = sum(map(runner.runs, plans))  # the others are recorded unsupported, in no time
    log_handler = _capture_sdk_logs(directory)
    on_ray = request.executor == "ray"  # release environments are prepared in their Ray task
    pools = {} if on_ray else _worker_pools(adapters, plans, directory / "sdk.log", request.project)
    runner.pools.update(pools)
    # Release environments run in worker processes of their own already: one process drives them.
    meta["procs"] = procs = 1 if pools or on_ray else process_count(request.procs, runnable)
    meta["executor"] = request.executor
    try:
        job = {"request": request_to_json(request, builtin_names(adapters)), "suite_id": meta["suite_id"],
               "directory": str(directory)}  # fmt: skip
        if on_ray:
            closed = _run_on_ray(job, request, plans, runner, record, meta)
        elif procs > 1:
            closed = run_in_processes(job, [plan.cell_id for plan in plans], procs, record)
        else:
            closed = run_plans(runner, plans, request.options, record, pools)
        meta["sockets_closed_after_run"] = closed
        writer.finalize()
        meta["status"] = "complete"
    except BaseException as error:
        # Not complete, whatever stopped it: set first, so a failing flush cannot leave it "running".
        meta["status"] = "interrupted"
        try:
            writer.flush()
        except OSError:
            if not isinstance(error, OSError):  # a full disk fails this flush too: report the first
                raise
        raise
    finally:
        try:
            _release_sdk_logs(log_handler, completed=meta["status"] == "complete")
            _close_manifest(request, directory, meta, pools)
        finally:
            lock.release()
    return directory


def _run_on_ray(
    job: dict[str, Any], request: SuiteRequest, plans: list[CellPlan], runner: Runner,
    record: Callable[[CellRecord], None], meta: dict[str, Any],
) -> int:  # fmt: skip
    """The plan's cells as Ray tasks (:mod:`bench.run.cluster`); what the cluster did goes in the
    manifest (``ray``), even when the run stops."""
    from bench.run import cluster

    job |= {"harness_version": harness_version(), "cache_dir": str(request.cache_dir) if request.cache_dir else None}
    if request.agents is not None:  # a task's working directory is Ray's: the user's project by its full path
        job["request"] = {**job["request"], "project": str(request.project.resolve())}
    report = cluster.ClusterReport()
    try:
        cluster.run_on_ray(job, cluster.units(plans, runner.runs), record, report, run_shard_job)
    except (cluster.RayUnavailable, cluster.ClusterTaskError) as error:
        raise SuiteError(str(error)) from None
    finally:
        meta["ray"] = report.manifest()
    return report.sockets_closed


def _close_manifest(request: SuiteRequest, directory: Path, meta: dict[str, Any], pools: dict[str, WorkerPool]) -> None:
    """The manifest as the run ends (status, counts) and ``latest`` pointed at the run."""
    meta["finished_at"] = datetime.now(UTC).isoformat()
    if pools:  # a killed worker is replaced: more starts than pools means kills
        meta["workers_started"] = {name: pool.started for name, pool in pools.items()}
    meta["cells_written"] = read_table(directory, "runs").num_rows
    write_manifest(directory, meta)
    point_latest(request.results_root, directory)


def run_plans(
    runner: Runner, plans: list[CellPlan], options: RunOptions, record: Callable[[CellRecord], None],
    pools: dict[str, WorkerPool] | None = None,
) -> int:  # fmt: skip
    """Run ``plans`` against a fresh provider in this process (release environments through
    their worker ``pools``); returns the client sockets still open to it afterwards, which it
    closes."""
    with warnings.catch_warnings(), _SocketTracker() as sockets:
        # An SDK's warnings are part of its behaviour, never exceptions: a caller's
        # "warnings are errors" filter (pytest's, say) must not change what is measured.
        warnings.simplefilter("default")
        with (
            loopback_bypasses_proxies(),
            lazy_trust_store(),
            LocalProvider(record_bodies=options.record_bodies) as provider,
        ):
            asyncio.run(_run_and_close(runner, plans, provider, record, pools or {}), loop_factory=RunLoop)
        gc.collect()  # clients the SDKs leaked report here, into sdk.log
        return sockets.close_leftovers((provider.host, provider.port))


def run_shard_job(
    job: dict[str, Any], record: Callable[[CellRecord], None], log_dir: Path | None = None,
    warn: Callable[[str], None] = lambda message: None,
) -> int:  # fmt: skip
    """A shard's work (a ``--procs`` process, ``python -m bench.run.shard``; a Ray task,
    :func:`bench.run.cluster.run_unit`): the job's cells of the run's plan, each handed to ``record``,
    release cells through their environments' workers; the SDKs' logs go to ``sdk.log`` in
    ``log_dir`` (default: the run's folder, as the parent's do). The job may narrow the request's
    releases to the environments its cells need (``releases``: a Ray unit prepares only its own)."""
    directory = Path(job["directory"])
    request = request_from_json(job["request"], directory.parent)
    if job.get("cache_dir"):
        request = replace(request, cache_dir=Path(job["cache_dir"]))
    if job.get("releases") is not None and request.releases and request.agents is None:
        request = replace(request, releases=tuple(job["releases"]))
    adapters, plans = plan_suite(request, warn=warn)
    wanted = set(job["cells"])
    plans = [plan for plan in plans if plan.cell_id in wanted]
    logs = log_dir or directory
    log_handler = _capture_sdk_logs(logs)
    runner = new_runner(adapters, request.options, job["suite_id"])
    pools = _worker_pools(adapters, plans, logs / "sdk.log", request.project)
    runner.pools.update(pools)
    try:
        return run_plans(runner, plans, request.options, record, pools)
    finally:
        _release_sdk_logs(log_handler, completed=True)
