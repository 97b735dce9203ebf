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
    if specs and not request.sdks and request.agents is None:  # with --agent: the agents' releases
        request = replace(request, sdks=tuple(dict.fromkeys(spec.sdk for spec in specs)))
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
