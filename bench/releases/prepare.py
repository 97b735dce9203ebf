"""From ``--release`` specs to environments: look the version up, build (or reuse) each
environment, and collect the ones that failed, one line each, so the others still run."""

from __future__ import annotations

from collections.abc import Callable

from bench.releases.envs import EnvBuildError, Environment, EnvironmentStore, SdkPackage
from bench.releases.index import IndexLookupError
from bench.releases.spec import LATEST, PINNED, ReleaseSpec
from bench.sdk import registry
from bench.sdk.adapter import Adapter


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
    installed = adapter.installed_version()
    if installed is None:
        hint = registry.registrations()[adapter.name].install_hint if adapter.language == "python" else ""
        raise EnvBuildError(f"{adapter.name}@pinned: {adapter.distribution} is not installed{'; ' * bool(hint)}{hint}")
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
        if adapter.language != "python" and spec.version != PINNED:
            errors.append(
                f"{spec}: release environments are built for Python SDKs only; {spec.sdk} is a {adapter.language} "
                f"SDK, measured at the release node/package-lock.json locks (--release {spec.sdk}@pinned)"
            )
            continue
        try:
            if spec.version == PINNED:
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
