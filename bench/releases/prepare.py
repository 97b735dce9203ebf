"""From ``--release`` specs to environments: look the version up, build (or reuse) each
environment, and collect the ones that failed, one line each, so the others still run."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from bench.releases.envs import MARKER, EnvBuildError, Environment, EnvironmentStore, SdkPackage
from bench.releases.index import IndexLookupError
from bench.releases.spec import LATEST, PINNED, ReleaseSpec
from bench.sdk import registry
from bench.sdk.adapter import Adapter
from bench.sdk.environment import lock_of


def package_of(adapter: Adapter) -> SdkPackage:
    return SdkPackage(
        sdk=adapter.name,
        distribution=adapter.distribution,
        requirement=adapter.requirement or adapter.distribution,
        companions=adapter.companions + adapter.worker_requirements,
        supported=adapter.supported_releases,
    )


def pinned(adapter: Adapter) -> Environment:
    """The harness's own interpreter: the pinned SDK, run in-process."""
    try:
        installed = version(adapter.distribution)
    except PackageNotFoundError:
        hint = registry.registrations()[adapter.name].install_hint
        raise EnvBuildError(f"{adapter.name}@pinned: {adapter.distribution} is not installed; {hint}") from None
    return Environment(adapter.name, installed, adapter.distribution, None)


def resolve_version(spec: ReleaseSpec, adapter: Adapter, store: EnvironmentStore) -> str:
    assert spec.version is not None and spec.version != PINNED
    if spec.version != LATEST:
        return spec.version
    try:
        return store.index.latest(adapter.distribution).version
    except IndexLookupError as error:
        raise EnvBuildError(f"{spec}: {error}") from None


def prepare(
    specs: list[ReleaseSpec], adapters: dict[str, Adapter], store: EnvironmentStore,
    progress: Callable[[str], None] = lambda message: None,
) -> tuple[list[Environment], list[str]]:  # fmt: skip
    """The environments for ``specs`` (in order, duplicates dropped) and one error line per
    release that could not be built."""
    envs: dict[tuple[str, str], Environment] = {}
    errors: list[str] = []
    for spec in specs:
        adapter = adapters[spec.sdk]
        try:
            if spec.version == PINNED and (lock := lock_of(adapter)) is not None:  # the SDK's own environment
                if not (store.locked_path(spec.sdk, lock) / MARKER).exists():
                    progress(f"building {spec.sdk}'s own environment from {lock.name}")
                env = store.build_locked(package_of(adapter), lock)
            elif spec.version == PINNED:
                env = pinned(adapter)
            else:
                wanted = resolve_version(spec, adapter, store)
                if store.cached(spec.sdk, wanted) is None:
                    progress(f"building the environment for {spec.sdk}=={wanted}")
                env = store.build(package_of(adapter), wanted)
        except EnvBuildError as error:
            errors.append(str(error))
            continue
        envs.setdefault((env.sdk, env.name), env)  # every SDK's in-process one is named pinned
    return list(envs.values()), errors
