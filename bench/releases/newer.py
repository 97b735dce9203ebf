"""The releases of a tracked SDK that its committed history does not hold yet (``bench releases
list --new``): what the scheduled refresh measures next (docs/ci.md, "Refreshing the history").

A release is new when its version is above every release the SDK's history measured
(``results/releases/<sdk>/manifest.json``: each release environment and the pinned in-process
one). Final releases are listed to measure; a pre-release and a yanked (on npm: deprecated)
release are listed apart, said and never mixed in. The Python SDKs are read from the package
index's JSON simple API (:mod:`bench.releases.index`), the TypeScript ones from the npm
registry's package document. An index that cannot be read raises :class:`IndexLookupError`,
never an empty list.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from bench.releases.index import IndexLookupError, _fetch, _version_of

DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org"


class Status(StrEnum):
    NEW = "new"
    """A final release above the history: the refresh measures it."""
    PRE_RELEASE = "pre-release"
    YANKED = "yanked"


@dataclass(frozen=True)
class Listed:
    sdk: str
    version: str
    uploaded: str
    """ISO date of the release's first upload ("" when the index does not say)."""
    status: Status

    @property
    def spec(self) -> str:
        return f"{self.sdk}=={self.version}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"spec": self.spec}


def measured(history: Path, sdk: str) -> list[str]:
    """Every release the SDK's committed history ran (empty: no history for it)."""
    manifest_path = history / sdk / "manifest.json"
    if not manifest_path.is_file():
        return []
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    versions = [env["version"] for env in manifest.get("environments") or [] if env.get("sdk") == sdk]
    pinned = (manifest.get("sdk_versions") or {}).get(sdk)
    return [*versions, *([pinned] if pinned else [])]


VersionKey = tuple[Any, bool]
"""A version's place in its ecosystem's order (comparable within one SDK), and whether it is a
pre-release."""
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def python_key(version: str) -> VersionKey | None:
    """PEP 440 order (the index only holds such versions; None for one that is not)."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return parsed, parsed.is_prerelease or parsed.is_devrelease


def npm_key(version: str) -> VersionKey | None:
    """Semver order (npm only holds such versions; None for one that is not)."""
    found = SEMVER.match(version)
    if found is None:
        return None
    major, minor, patch, pre = found.groups()
    return ((int(major), int(minor), int(patch)), 0 if pre else 1, pre or ""), bool(pre)


def newer(
    sdk: str, history_versions: list[str], found: list[tuple[str, str, bool]], key: Callable[[str], VersionKey | None]
) -> list[Listed]:
    """Of ``found`` (version, upload date, yanked), those above every version in
    ``history_versions`` by ``key``, oldest first, each with its :class:`Status`; every one
    when there is no history."""
    floor = max((k[0] for k in map(key, history_versions) if k is not None), default=None)
    listed = []
    for version, uploaded, yanked in found:
        parsed = key(version)
        if parsed is None or (floor is not None and parsed[0] <= floor):
            continue
        order, pre = parsed
        status = Status.YANKED if yanked else Status.PRE_RELEASE if pre else Status.NEW
        listed.append((order, Listed(sdk, version, uploaded, status)))
    return [entry for _, entry in sorted(listed, key=lambda pair: pair[0])]


def python_releases(distribution: str) -> list[tuple[str, str, bool]]:
    """Every version on the index (pre-releases included), its first upload date and whether
    every file of it is yanked: read afresh, never from the cache (what is new is what the index
    says now; an index that cannot be read is an error, not yesterday's answer)."""
    page = _fetch(distribution)
    by_version: dict[str, list[dict[str, Any]]] = {}
    for file in page.get("files", []):
        version = _version_of(file["filename"], distribution)
        if version is not None:
            by_version.setdefault(version, []).append(file)
    return [
        (version, min((f.get("upload-time") or "") for f in files)[:10], all(bool(f.get("yanked")) for f in files))
        for version, files in by_version.items()
    ]


def npm_registry() -> str:
    """The registry npm itself would read (``npm_config_registry``), else the public one."""
    configured = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")  # noqa: SIM112
    return (configured or DEFAULT_NPM_REGISTRY).rstrip("/")


def npm_releases(package: str) -> list[tuple[str, str, bool]]:
    """Every version of an npm package, its publish date and whether it is deprecated (npm's
    nearest to a yank)."""
    import httpx

    url = f"{npm_registry()}/{package.replace('/', '%2F')}"
    try:
        response = httpx.get(url, headers={"Accept": "application/json"}, timeout=30.0, follow_redirects=True)
        response.raise_for_status()
        document = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise IndexLookupError(f"cannot read {url}: {error}") from None
    versions = document.get("versions") if isinstance(document, dict) else None
    if not isinstance(versions, dict):  # a proxy's page, or a registry that is not npm's
        raise IndexLookupError(f"cannot read {url}: the answer is not an npm package document (no 'versions')")
    times = document.get("time") if isinstance(document.get("time"), dict) else {}
    return [
        (version, str(times.get(version, ""))[:10], isinstance(meta, dict) and bool(meta.get("deprecated")))
        for version, meta in versions.items()
    ]
