"""The one planning step: a run's options in, its adapters and cell plans out (:func:`plan_cells`),
every thing an option names kept or said (:mod:`bench.planner.narrowing`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bench.planner import narrowing
from bench.planner.adapters import check_filter_names, check_plan_size, load_all, select_scenarios
from bench.planner.cells import CellPlan, in_shard
from bench.planner.narrowing import Named
from bench.planner.releases import check_release_use, pinned_plans, release_plans, release_specs
from bench.planner.request import SuiteError, SuiteRequest, builtin_names
from bench.results.store import reached_for_tests
from bench.sdk.adapter import Adapter

if TYPE_CHECKING:
    from bench.releases.spec import ReleaseSpec


def plan_cells(
    request: SuiteRequest, warn: Callable[[str], None], env_errors: list[str] | None = None
) -> tuple[dict[str, Adapter], tuple[CellPlan, ...]]:
    """The adapters and the cells to run, in the order a run writes them: a finished, immutable
    plan (a tuple of frozen :class:`CellPlan`), which a run drives and never changes. With ``request.releases``,
    one copy of each SDK's cells per release environment (built or reused first); a release whose
    environment cannot be built adds one line to ``env_errors`` and the others still run."""
    specs = release_specs(request)
    given = request
    request = _with_release_sdks(request, specs)
    adapters = load_all(request, warn)
    scenarios = select_scenarios(request, adapters)
    check_filter_names(request.filters, adapters, scenarios)
    check_plan_size(adapters, scenarios, request, specs)
    check_release_use(request, specs, adapters)
    named = named_options(given, adapters, specs)
    _said(named, narrowing.emptied(named, narrowing.universe(adapters, scenarios)), warn)
    reached_for_tests("expanding")
    if not specs:
        plans = pinned_plans(request, adapters, scenarios, warn, env_errors)
    else:
        plans = release_plans(request, specs, adapters, scenarios, warn, env_errors)
    if request.options.cassettes is not None:  # every cell answers from the recordings (bench.cassettes.replay)
        recorded = f"recorded in {request.options.cassettes}"
        plans = [replace(plan, answers=f"{plan.answers}, {recorded}") for plan in plans]
    if request.shard is not None and plans:
        sliced = [plan for plan in plans if in_shard(plan, request.shard)]
        _said(named, narrowing.in_shard_only(named, plans, sliced, "/".join(map(str, request.shard))), warn)
        plans = sliced
    if not plans:
        raise SuiteError("the filters leave no cell to run; see 'bench list' and 'bench scenarios list'")
    return adapters, tuple(plans)


def _with_release_sdks(request: SuiteRequest, specs: Sequence[ReleaseSpec]) -> SuiteRequest:
    """``--release`` without ``--sdk`` chooses the releases' SDKs (with ``--agent``: the agents')."""
    if specs and not request.sdks and request.agents is None:
        return replace(request, sdks=tuple(dict.fromkeys(spec.sdk for spec in specs)))
    return request


def drive_here(
    request: SuiteRequest, plans: Sequence[CellPlan], warn: Callable[[str], None]
) -> tuple[dict[str, Adapter], tuple[CellPlan, ...]]:
    """What an executor (a ``--procs`` child, a Ray task) drives the finished plans it was sent
    with: the adapters they name, loaded as :func:`plan_cells` loads them (a user's agent, type or
    drawn tasks around theirs), and each plan's environment one this machine has. On the machine
    that planned (every ``--procs`` child) the environments are the ones it built; a Ray node that
    lacks one prepares it as planning does, for the releases those plans name only (built or
    reused; one it cannot build fails the unit, as it would fail the run there)."""
    adapters = load_all(_with_release_sdks(request, release_specs(request)), warn)
    if lost := sorted({plan.cell.key for plan in plans} - set(adapters)):
        raise SuiteError(f"the plans sent name an adapter this machine does not load: {lost[0]}")
    missing = {plan.environment.name for plan in plans if plan.environment is not None
               and plan.environment.path is not None and not plan.environment.python.exists()}  # fmt: skip
    if not missing:
        return adapters, tuple(plans)
    # An environment's name (sdk==version) is a release spec: only those missing are prepared.
    releases = tuple(sorted(missing)) if request.releases and request.agents is None else request.releases
    _, prepared = plan_cells(replace(request, releases=releases, shard=None), warn)
    here = {plan.pool_name: plan.environment for plan in prepared}
    if lost := sorted({plan.pool_name for plan in plans} - set(here)):
        raise SuiteError(f"this machine could not prepare the environment {lost[0]} the plans sent run in")
    return adapters, tuple(replace(plan, environment=here[plan.pool_name]) for plan in plans)


def named_options(request: SuiteRequest, adapters: dict[str, Adapter], specs: Sequence[ReleaseSpec]) -> list[Named]:
    """What the run's options name, each a :class:`bench.planner.narrowing.Named`: the adapters
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
