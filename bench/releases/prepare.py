"""From ``--release`` specs to environments: look every version up on the package index first
(a release it does not have, has yanked, or that is for another Python stops everything, in one
line naming the nearest releases: :class:`ReleaseUnavailable`), then build (or reuse) each
environment, within :func:`bench.releases.envs.build_timeout_s`, and collect the ones that failed
to build, one line each, so the others still run."""

from __future__ import annotations

from collections.abc import Callable

from bench.releases.envs import MARKER, EnvBuildError, Environment, EnvironmentStore, SdkPackage, build_timeout_s
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
    installed = adapter.installed_version()
    if installed is None:
        hint = registry.registrations()[adapter.name].install_hint if adapter.language == "python" else ""
        raise EnvBuildError(f"{adapter.name}@pinned: {adapter.distribution} is not installed{'; ' * bool(hint)}{hint}")
    return Environment(adapter.name, installed, adapter.distribution, None)


class ReleaseUnavailable(EnvBuildError):
    """A release the index does not have, has yanked, or that excludes our Python: bad input,
    refused before anything is built or run (exit 2)."""


def resolve_version(spec: ReleaseSpec, adapter: Adapter, store: EnvironmentStore) -> str:
    assert spec.version is not None and spec.version != PINNED
    if spec.version != LATEST:
        return spec.version
    try:
        return store.index.latest(adapter.distribution).version
    except IndexLookupError as error:
        raise ReleaseUnavailable(f"{spec}: {error}") from None


def check_available(
    specs: list[ReleaseSpec], adapters: dict[str, Adapter], store: EnvironmentStore
) -> dict[ReleaseSpec, str]:
    """Each non-pinned spec's version, once the index says it can be installed here (a cached
    environment needs no asking); the first that cannot is :class:`ReleaseUnavailable`."""
    from bench.releases.index import ReleaseUnavailable as NotOnIndex

    versions: dict[ReleaseSpec, str] = {}
    for spec in specs:
        adapter = adapters[spec.sdk]
        if spec.version == PINNED or adapter.language != "python":  # a TypeScript release: prepare says why not
            continue
        wanted = resolve_version(spec, adapter, store)
        if store.cached(spec.sdk, wanted) is None:
            try:
                store.index.available(adapter.distribution, wanted)
            except NotOnIndex as error:
                raise ReleaseUnavailable(f"{spec.sdk}=={wanted}: {error}") from None
            except IndexLookupError:  # the index cannot be read: that release's build says so, one line
                pass
        versions[spec] = wanted
    return versions


def prepare(
    specs: list[ReleaseSpec], adapters: dict[str, Adapter], store: EnvironmentStore,
    progress: Callable[[str], None] = lambda message: None,
) -> tuple[list[Environment], list[str]]:  # fmt: skip
    """The environments for ``specs`` (in order, duplicates dropped) and one error line per
    release that could not be built; :class:`ReleaseUnavailable` before any is built when the
    index cannot give one."""
    versions = check_available(specs, adapters, store)
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
            if spec.version == PINNED and (lock := lock_of(adapter)) is not None:  # the SDK's own environment
                if not (store.locked_path(spec.sdk, lock) / MARKER).exists():
                    progress(f"building {spec.sdk}'s own environment from {lock.name}")
                env = store.build_locked(package_of(adapter), lock)
            elif spec.version == PINNED:
                env = pinned(adapter)
            else:
                wanted = versions[spec]
                if store.cached(spec.sdk, wanted) is None:
                    progress(f"building the environment for {spec.sdk}=={wanted} (at most {build_timeout_s():.0f} s)")
                env = store.build(package_of(adapter), wanted)
        except EnvBuildError as error:
            errors.append(str(error))
            continue
        envs.setdefault((env.sdk, env.name), env)  # every SDK's in-process one is named pinned
    return list(envs.values()), errors
