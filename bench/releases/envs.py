"""One environment per (SDK, release), built with uv as of the release's upload date.

Old releases break against today's dependencies (pydantic-ai 1.0.18 with a current
opentelemetry, openai-agents 0.6.9 with a current openai client), so each environment is
resolved with ``--exclude-newer`` set to a day after the release's upload (packages uploaded
with it, like pydantic-graph, are in; anything later is not). The resolved set (``uv pip
freeze``) is stored next to it and copied into every run's manifest. Environments live in the
cache directory (``$MISFIT_BENCH_CACHE``, else ``$XDG_CACHE_HOME/misfit-bench``, else
``~/.cache/misfit-bench``), outside the repo, and are reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from bench.releases.index import PackageIndex, Release

MARKER = "environment.json"
EXCLUDE_NEWER_MARGIN = timedelta(days=1)
BUILD_TIMEOUT_S = 900.0
"""How long one environment's build (uv: venv, install, freeze) may take, unless
``$MISFIT_BENCH_BUILD_TIMEOUT_S`` says otherwise: a stalled index or a resolver lost in
backtracking ends in one line, not a silent wait."""
BUILD_TIMEOUT_VARIABLE = "MISFIT_BENCH_BUILD_TIMEOUT_S"
PINNED = "pinned"
"""The environment name of the harness's own interpreter (in-process, the pinned SDKs)."""


class EnvBuildError(Exception):
    """One release's environment could not be built; the message names the release and gives
    the resolver's reason on one line."""


def build_timeout_s() -> float:
    """:data:`BUILD_TIMEOUT_S`, or ``$MISFIT_BENCH_BUILD_TIMEOUT_S`` (a positive number of seconds)."""
    given = os.environ.get(BUILD_TIMEOUT_VARIABLE, "").strip()
    if not given:
        return BUILD_TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise EnvBuildError(f"${BUILD_TIMEOUT_VARIABLE}={given!r}: expected a positive number of seconds")
    return seconds


def cache_root() -> Path:
    if explicit := os.environ.get("MISFIT_BENCH_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "misfit-bench"


@dataclass(frozen=True)
class SdkPackage:
    """What to install for an SDK, from its adapter's declarations."""

    sdk: str
    distribution: str
    requirement: str
    companions: tuple[str, ...] = ()
    supported: str = ""


@dataclass(frozen=True)
class Environment:
    """A built environment (or the harness's own, ``path`` None): what a worker runs in."""

    sdk: str
    version: str
    distribution: str
    path: Path | None
    exclude_newer: str | None = None
    freeze: tuple[str, ...] = ()
    build_s: float | None = None

    @property
    def name(self) -> str:
        return PINNED if self.path is None else f"{self.sdk}=={self.version}"

    @property
    def python(self) -> Path:
        return Path(sys.executable) if self.path is None else self.path / "bin" / "python"

    def installed(self) -> dict[str, str]:
        """The resolved set as canonical name -> version (``name==version`` lines of the freeze)."""
        return resolved(self.freeze)

    def manifest(self) -> dict[str, object]:
        data = asdict(self) | {"name": self.name}
        data["path"] = None if self.path is None else str(self.path)
        data["freeze"] = list(self.freeze)
        return data


def uv_binary() -> str:
    """uv from the ``uv`` package when installed (``pip install 'misfit-bench[releases]'``),
    else from PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise EnvBuildError("uv is not installed: pip install 'misfit-bench[releases]'") from None
        return found


class EnvironmentStore:
    """The cached environments: ``<cache>/envs/<sdk>/<version>/``, each with ``environment.json``."""

    def __init__(self, root: Path | None = None, python: Path | None = None) -> None:
        self.root = root or cache_root()
        self.index = PackageIndex(self.root)
        self.python = python or Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        """Every environment gets the harness's own Python (3.12): uv downloads none."""

    def path(self, sdk: str, version: str) -> Path:
        return self.root / "envs" / sdk / version

    def cached(self, sdk: str, version: str) -> Environment | None:
        marker = self.path(sdk, version) / MARKER
        if not marker.exists():
            return None
        data = json.loads(marker.read_text(encoding="utf-8"))
        return Environment(
            sdk=data["sdk"], version=data["version"], distribution=data["distribution"],
            path=self.path(sdk, version), exclude_newer=data["exclude_newer"],
            freeze=tuple(data["freeze"]), build_s=data.get("build_s"),
        )  # fmt: skip

    def listing(self) -> list[Environment]:
        found = []
        for marker in sorted((self.root / "envs").glob(f"*/*/{MARKER}")):
            env = self.cached(marker.parent.parent.name, marker.parent.name)
            if env is not None:
                found.append(env)
        return sorted(found, key=lambda e: (e.sdk, Version(e.version)))

    def build(self, package: SdkPackage, version: str) -> Environment:
        """The environment for ``package`` at ``version``: from the cache, else built."""
        if package.supported and Version(version) not in SpecifierSet(package.supported):
            raise EnvBuildError(
                f"{package.sdk}=={version}: the adapter supports {package.distribution}{package.supported}"
            )
        with one_builder(self.path(package.sdk, version)):
            if (env := self.cached(package.sdk, version)) is not None and self._built_for(package, version):
                return env
            release = self._release(package, version)
            return self._build(package, release)

    def _built_for(self, package: SdkPackage, version: str) -> bool:
        """Whether the cached environment was built from what the adapter asks for now (an extra
        or a companion added since makes it stale, so it is built again)."""
        data = json.loads((self.path(package.sdk, version) / MARKER).read_text(encoding="utf-8"))
        return data.get("requirements") == requirements_of(package, version)

    def _release(self, package: SdkPackage, version: str) -> Release:
        from bench.releases.index import IndexLookupError

        try:
            return self.index.available(package.distribution, version)
        except IndexLookupError as error:
            raise EnvBuildError(f"{package.sdk}=={version}: {error}") from None

    def _build(self, package: SdkPackage, release: Release) -> Environment:
        target = self.path(package.sdk, release.version)
        staging = target.with_name(f".{target.name}.building-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        cutoff = (release.uploaded + EXCLUDE_NEWER_MARGIN).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        requirements = requirements_of(package, release.version)
        name = f"{package.sdk}=={release.version}"
        started = time.perf_counter()
        deadline = time.monotonic() + build_timeout_s()
        try:
            self._uv(name, deadline, "venv", "-q", "-p", str(self.python), str(staging))
            self._uv(name, deadline, "pip", "install", "-q", "-p", str(staging), "--exclude-newer", cutoff,
                     *requirements)  # fmt: skip
            freeze = self._uv(name, deadline, "pip", "freeze", "-p", str(staging)).splitlines()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        env = Environment(
            sdk=package.sdk, version=release.version, distribution=package.distribution, path=target,
            exclude_newer=cutoff, freeze=tuple(line for line in freeze if line.strip()),
            build_s=round(time.perf_counter() - started, 2),
        )  # fmt: skip
        marker = env.manifest() | {"built_at": datetime.now(UTC).isoformat(), "requirements": requirements}
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
        # A venv's scripts name their own path; ours are only ever run as `<path>/bin/python`.
        return env

    def _uv(self, what: str, deadline: float, *args: str) -> str:
        """Run uv, within the build's ``deadline`` (``time.monotonic()``); a failure is
        :class:`EnvBuildError` naming ``what`` (the release, or an agent with it) and the
        resolver's reason on one line, a build past its deadline the timeout and how to set it."""
        env = os.environ | {"UV_PYTHON_DOWNLOADS": "never"}
        env.pop("VIRTUAL_ENV", None)
        try:
            done = subprocess.run(
                [uv_binary(), *args], capture_output=True, text=True, env=env, check=False,
                timeout=max(deadline - time.monotonic(), 0.1),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise EnvBuildError(
                f"{what}: the environment build took longer than {build_timeout_s():.0f} s and was stopped "
                f"(${BUILD_TIMEOUT_VARIABLE} sets the limit)"
            ) from None
        if done.returncode != 0:
            reason = resolver_reason(done.stderr)
            raise EnvBuildError(f"{what}: cannot build the environment: {reason}")
        return done.stdout

    def locked_path(self, sdk: str, lock: Path) -> Path:
        """Where :meth:`build_locked` keeps the environment of ``lock``."""
        return self.root / "sdk-envs" / sdk / hashlib.sha256(lock.read_bytes()).hexdigest()[:16]

    def build_locked(self, package: SdkPackage, lock: Path) -> Environment:
        """An SDK's own environment (``Adapter.environment``, bench.sdk.environment): exactly the
        committed ``lock``'s pins (``uv pip sync``), built on first use and cached under
        ``<cache>/sdk-envs/<sdk>/<key>/``, the key a hash of the lock, so an edited lock is a new
        environment. The version is the SDK's in the lock. A lock that cannot be installed is
        :class:`EnvBuildError` naming the SDK and uv's reason on one line."""
        target = self.locked_path(package.sdk, lock)
        with one_builder(target):
            if (target / MARKER).exists():
                data = json.loads((target / MARKER).read_text(encoding="utf-8"))
                freeze, build_s = tuple(data["freeze"]), data.get("build_s")
            else:
                freeze, build_s = self._build_locked(package, lock, target)
        version = resolved(freeze).get(canonical(package.distribution))
        if version is None:
            raise EnvBuildError(f"{package.sdk}: its environment's lock {lock} does not install {package.distribution}")
        return Environment(package.sdk, version, package.distribution, target, None, freeze, build_s)

    def _build_locked(self, package: SdkPackage, lock: Path, target: Path) -> tuple[tuple[str, ...], float]:
        staging = target.with_name(f".{target.name}.building-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        what = f"{package.sdk} (its own environment, {lock.name})"
        started = time.perf_counter()
        deadline = time.monotonic() + build_timeout_s()
        try:
            self._uv(what, deadline, "venv", "-q", "-p", str(self.python), str(staging))
            self._uv(what, deadline, "pip", "sync", "-q", "-p", str(staging), str(lock))
            frozen = self._uv(what, deadline, "pip", "freeze", "-p", str(staging))
            freeze = tuple(line for line in frozen.splitlines() if line)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        build_s = round(time.perf_counter() - started, 2)
        marker = {"sdk": package.sdk, "lock": str(lock), "freeze": list(freeze), "build_s": build_s,
                  "built_at": datetime.now(UTC).isoformat()}  # fmt: skip
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        return freeze, build_s

    def build_with(self, package: SdkPackage, version: str, extra: list[str], label: str) -> Environment:
        """The release's environment with ``extra`` (a user's project's own dependencies)
        installed beside it, resolved with the release held: every package of the release's
        resolved set is a constraint, so the SDK is the release measured and the user's
        dependencies fit it or fail to. Cached like the release's own, under
        ``<cache>/own-envs/<sdk>/<version>/<key>/``, the key a hash of what it installs; a
        conflict is :class:`EnvBuildError` naming ``label`` (the agent), the release and the
        resolver's reason."""
        base = self.build(package, version)
        requirements = [*requirements_of(package, version), *extra]
        pins = sorted(f"{name}=={pin}" for name, pin in base.installed().items())
        key = hashlib.sha256(json.dumps([requirements, pins]).encode()).hexdigest()[:16]
        target = self.root / "own-envs" / package.sdk / version / key
        with one_builder(target):
            if (target / MARKER).exists():
                data = json.loads((target / MARKER).read_text(encoding="utf-8"))
                return replace(base, path=target, freeze=tuple(data["freeze"]), build_s=data.get("build_s"))
            return self._build_own(package, version, base, target, requirements, pins, label)

    def _build_own(
        self, package: SdkPackage, version: str, base: Environment, target: Path,
        requirements: list[str], pins: list[str], label: str,
    ) -> Environment:  # fmt: skip
        key = target.name
        staging = target.with_name(f".{key}.building-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        constraints = staging.parent / f".{key}.constraints-{os.getpid()}.txt"
        constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
        started = time.perf_counter()
        deadline = time.monotonic() + build_timeout_s()
        what = f"{label} with {package.sdk}=={version}"
        try:
            self._uv(what, deadline, "venv", "-q", "-p", str(self.python), str(staging))
            self._uv(what, deadline, "pip", "install", "-q", "-p", str(staging), "-c", str(constraints), *requirements)
            freeze = self._uv(what, deadline, "pip", "freeze", "-p", str(staging)).splitlines()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            constraints.unlink(missing_ok=True)
        env = replace(base, path=target, freeze=tuple(line for line in freeze if line.strip()),
                      build_s=round(time.perf_counter() - started, 2))  # fmt: skip
        marker = env.manifest() | {"built_at": datetime.now(UTC).isoformat(), "requirements": requirements}
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        return env

    def prune(self, keep: set[str] | None = None) -> list[Environment]:
        """Delete cached environments (all, or all but the ``sdk==version`` names in ``keep``)."""
        removed = []
        for env in self.listing():
            if keep and env.name in keep:
                continue
            assert env.path is not None
            shutil.rmtree(env.path)
            removed.append(env)
        return removed


@contextmanager
def one_builder(target: Path) -> Iterator[None]:
    """Hold the build of ``target`` (an environment's folder) for this process: another process
    building the same environment (two runs, or two test workers, on one release) waits here,
    then finds it built, instead of replacing the folder under the first one's workers. An
    advisory lock on a file beside the folder, released when the process exits however it ends."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(f".{target.name}.lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def resolved(freeze: tuple[str, ...] | list[str]) -> dict[str, str]:
    """A freeze as canonical name -> version (its ``name==version`` lines)."""
    from packaging.utils import canonicalize_name

    pairs = (line.split("==", 1) for line in freeze if "==" in line and not line.startswith("-"))
    return {canonicalize_name(name.strip()): version.strip() for name, version in pairs}


def key_text(freeze: tuple[str, ...] | list[str], names: tuple[str, ...]) -> str:
    """``name version`` of each companion the freeze resolved: the rest of an SDK's key tuple
    (LangChain: langgraph-prebuilt, langchain-openai, langchain-anthropic)."""
    from packaging.utils import canonicalize_name

    versions = resolved(freeze)
    return ", ".join(f"{name} {versions.get(canonicalize_name(name), '?')}" for name in names)


def requirements_of(package: SdkPackage, version: str) -> list[str]:
    """What an environment for ``package`` at ``version`` installs (recorded in its marker)."""
    return [f"{package.requirement}=={version}", *package.companions]


def resolver_reason(stderr: str) -> str:
    """uv's explanation on one line: the "Because ..." chain after "No solution found" (in either
    of uv's layouts, ``cause:`` lines or the tree drawn on a terminal), or the last error line."""
    lines = [line.strip().lstrip("×╰─▶│ ").strip() for line in stderr.splitlines()]
    lines = [line.removeprefix("cause:").strip() for line in lines if line]
    for i, line in enumerate(lines):
        if "No solution found" in line:
            return " ".join(lines[i + 1 :]) or line
    return lines[-1] if lines else "uv failed without saying why"
