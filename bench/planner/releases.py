"""``--release``: the specs given, the environments they need (built or reused), and one copy of
the cells per environment; a user's agent runs in its release's environment with the project's own
dependencies, loaded there once before its cells are planned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.planner.cells import CellPlan, expand
from bench.planner.request import SuiteError, SuiteRequest
from bench.scenarios.files import Scenario
from bench.sdk import registry
from bench.sdk.adapter import Adapter

if TYPE_CHECKING:
    from bench.releases.envs import Environment
    from bench.releases.spec import ReleaseSpec


def expand_adapter(
    adapter: Adapter, scenarios: list[Scenario], request: SuiteRequest, environment: Environment | None = None
) -> list[CellPlan]:
    """One adapter's cells x the scenarios it runs (:meth:`Adapter.scenarios`: a user's agent
    adds its own) x reps, in-process or in a release ``environment``: the one way to expand."""
    return expand([adapter], adapter.scenarios(scenarios), request.filters, request.reps, request.seed, environment)


def pinned_plans(
    request: SuiteRequest, adapters: dict[str, Adapter], scenarios: list[Scenario],
    warn: Callable[[str], None], env_errors: list[str] | None,
) -> list[CellPlan]:  # fmt: skip
    """Every adapter's cells in-process, but those of an SDK with an environment of its own
    (bench.sdk.environment) in that environment, built first (or reused): one that cannot be built
    is one line in ``env_errors`` (exit 2) and the rest still run. A user's type or drawn tasks do
    not reach such a worker yet (it answers the built-in tasks): its cells are left out, said so."""
    from bench.sdk.environment import lock_of

    own = {name: adapter for name, adapter in adapters.items() if lock_of(adapter) is not None}
    errors: list[str] = []
    envs: dict[str, Environment] = {}
    if own and (request.output_type is not None or request.tasks == "cassettes"):
        given = "--type" if request.output_type is not None else "--tasks cassettes"
        errors += [f"{name}: runs in an environment of its own, which {given} does not reach: left out" for name in own]
    elif own:
        from bench.releases.envs import EnvironmentStore
        from bench.releases.prepare import prepare
        from bench.releases.spec import PINNED, ReleaseSpec

        built, errors = prepare([ReleaseSpec(name, PINNED) for name in own], own, EnvironmentStore(request.cache_dir),
                                progress=warn)  # fmt: skip
        envs = {env.sdk: env for env in built}
    for line in errors if env_errors is None else ():  # a plan only (--dry-run): said, not recorded
        warn(line)
    if env_errors is not None:
        env_errors.extend(errors)
    runs_here = {name: adapter for name, adapter in adapters.items() if name not in own or name in envs}
    plans = [
        plan
        for name, adapter in runs_here.items()
        for plan in expand_adapter(adapter, scenarios, request, envs.get(name))
    ]
    if not plans and errors:
        raise SuiteError("; ".join(errors))
    return plans


def release_specs(request: SuiteRequest) -> list[ReleaseSpec]:
    from bench.releases import spec

    if not request.releases:
        return []
    try:
        parsed = [spec.parse(text) for text in request.releases]
        expanded = spec.expand(parsed, spec.configured() if any(p.version is None for p in parsed) else {})
    except spec.ReleaseSpecError as error:
        raise SuiteError(str(error)) from None
    # With --agent, a release may be an agent's SDK's: release_plans checks that each is used.
    outside = sorted({p.sdk for p in expanded} - set(request.sdks)) if request.sdks and request.agents is None else []
    if outside:
        raise SuiteError(f"--release names {', '.join(outside)}, which --sdk leaves out")
    return expanded


def check_release_use(request: SuiteRequest, specs: list[ReleaseSpec], adapters: dict[str, Adapter]) -> None:
    """Every release is used by an adapter or agent of the run, and every agent's SDK has a
    release (else one line, before anything is narrowed or built). Without ``--release``: nothing."""
    if not specs:
        return
    builtin = {name for name in adapters if name in request.sdks}
    own_sdks = {name: adapter.cells()[0].sdk for name, adapter in adapters.items() if name not in builtin}
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


def release_plans(
    request: SuiteRequest, specs: list[ReleaseSpec], adapters: dict[str, Adapter], scenarios: list[Scenario],
    warn: Callable[[str], None], env_errors: list[str] | None,
) -> list[CellPlan]:  # fmt: skip
    """One copy of the cells per release environment (the releases checked by
    :func:`check_release_use`): a built-in adapter's (``--sdk``) in the release's own environment,
    a user's agent's in the release with their project's dependencies (:func:`_own_environment`)."""
    from bench.releases.envs import EnvironmentStore
    from bench.releases.prepare import ReleaseUnavailable, prepare

    builtin = {name: adapter for name, adapter in adapters.items() if name in request.sdks}
    own = {name: adapter for name, adapter in adapters.items() if name not in builtin}
    own_sdks = {name: adapter.cells()[0].sdk for name, adapter in own.items()}
    packages = {spec.sdk: builtin.get(spec.sdk) or _builtin(spec.sdk) for spec in specs}
    store = EnvironmentStore(request.cache_dir)
    try:
        envs, errors = prepare(specs, packages, store, progress=warn)
    except ReleaseUnavailable as error:  # bad input: nothing is built or run
        raise SuiteError(str(error)) from None
    plans = []
    for env in envs:
        if env.sdk in builtin:
            plans += expand_adapter(builtin[env.sdk], scenarios, request, None if env.path is None else env)
        for name in (name for name, sdk in own_sdks.items() if sdk == env.sdk):
            try:
                placed = _own_environment(request, store, packages[env.sdk], env, name, warn)
                if placed is not None:
                    _loads_in(own[name], placed, request.project)
            except SuiteError as error:
                errors.append(str(error))
                continue
            plans += expand_adapter(own[name], scenarios, request, placed)
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
