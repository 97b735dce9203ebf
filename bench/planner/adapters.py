"""Which adapters a run plans and on what: the built-in SDKs asked for (``--sdk``), the user's own
agents (``--agent``), every built-in one on the user's type (``--type``) or on tasks drawn from
cassettes (``--tasks cassettes``); the suite's scenarios; and the checks that a name given is not
a typo and that the plan fits the limits, before anything is expanded."""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.suggest import did_you_mean
from bench.core.vocabulary import Mode, Protocol
from bench.planner import limits
from bench.planner.cells import Filters
from bench.planner.request import SuiteError, SuiteRequest
from bench.scenarios.files import SUITE_MEMBERS, Scenario, load_paths
from bench.sdk import registry
from bench.sdk.adapter import Adapter

if TYPE_CHECKING:
    from bench.releases.spec import ReleaseSpec


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
    from bench.cassettes import Library, Redaction, load_cassettes, skip_quietly
    from bench.cassettes.tasks import draw_tasks, on_drawn

    if request.options.cassettes is None:
        raise SuiteError("--tasks cassettes draws the tasks from a cassette folder: give --cassettes DIR")
    if request.agents is not None or request.releases or request.output_type is not None:
        raise SuiteError("--tasks cassettes runs the built-in adapters, in-process: it does not take --agent, "
                         "--release or --type")  # fmt: skip
    folder = Path(request.options.cassettes)
    try:
        skip = skip_quietly if request.options.skip_bad else None
        drawn = draw_tasks(Library(load_cassettes(folder, skip), Redaction(patterns=request.options.redact)))
        adapters = on_drawn(load_adapters(request.sdks, warn), drawn, folder)
    except ValueError as error:  # CassetteError too
        raise SuiteError(f"--cassettes {error}") from None
    for line in drawn.skipped:
        warn(line)
    return adapters


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


def check_plan_size(
    adapters: dict[str, Adapter], scenarios: list[Scenario], request: SuiteRequest, specs: Sequence[ReleaseSpec] = ()
) -> None:
    """Count the plan before expanding it (and before any release environment is built): a huge
    ``--reps`` is one line, not a MemoryError. With ``specs`` (``--release``), an SDK's cells
    count once per release environment of it, as :func:`bench.planner.releases.release_plans` expands them."""
    releases = Counter(spec.sdk for spec in set(specs))
    keep = request.filters.keep_cell
    # Once per release of the cell's SDK (a user's agent's cells too: its SDK's releases).
    cells = sum(releases[cell.sdk] if specs else 1 for adapter in adapters.values() for cell in adapter.cells()
                if keep(cell))  # fmt: skip
    kept = sum(1 for scenario in scenarios if request.filters.keep_scenario(scenario))
    try:
        limits.check_plan_size(cells, kept, request.reps)
    except ValueError as error:
        raise SuiteError(str(error)) from None
