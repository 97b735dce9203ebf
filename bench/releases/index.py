"""Which releases a distribution has and when each was uploaded: the package index's JSON
simple API (PEP 691, with PEP 700 upload times), the same pages uv and pip read.

One request per distribution, cached under the cache directory for an hour (and refreshed
early when a release asked for is not in the cached copy), so listing and building work from
the cache once the index has been read. A release is asked for before anything is built
(:meth:`PackageIndex.available`): one that the index does not have, has yanked, or whose Python
requirement excludes the Python environments are built with is refused in one line that names
the nearest releases that would do.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

DEFAULT_INDEX = "https://pypi.org/simple"
MAX_AGE_S = 3600.0
FETCH_TIMEOUT_S = 30.0
"""How long one read of the index may take (the answer is a page of JSON)."""
ACCEPT = "application/vnd.pypi.simple.v1+json"
PYTHON = platform.python_version()
"""The Python every release environment is built with: the harness's own (bench.releases.envs)."""


class IndexLookupError(Exception):
    """The index could not be read, or has no such release; the message says which."""


class ReleaseUnavailable(IndexLookupError):
    """A release asked for that cannot be installed here: not on the index, yanked, or for
    another Python; the message names the nearest releases that can."""


@dataclass(frozen=True)
class Release:
    distribution: str
    version: str
    uploaded: datetime
    """The earliest upload time among the release's files."""
    yanked: bool = False
    requires_python: tuple[str, ...] = ()
    """The files' ``Requires-Python`` (distinct, sorted); empty when a file declares none."""

    def fits(self, python: str = PYTHON) -> bool:
        """Whether some file of the release installs on ``python`` (an unreadable requirement
        is left to the installer)."""
        if not self.requires_python:
            return True
        for spec in self.requires_python:
            try:
                if Version(python) in SpecifierSet(spec):
                    return True
            except InvalidSpecifier:
                return True
        return False


def index_url() -> str:
    return (os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or DEFAULT_INDEX).rstrip("/")


class PackageIndex:
    def __init__(self, cache: Path) -> None:
        self.cache = cache / "index"

    def releases(self, distribution: str, want: str | None = None) -> list[Release]:
        """Every final release, oldest first (pre-releases and releases without upload times left
        out). ``want``: a version the caller needs, which forces a refresh when not cached."""
        data = self._page(distribution, want)
        by_version: dict[str, list[dict]] = {}
        for file in data.get("files", []):
            version = _version_of(file["filename"], distribution)
            if version is not None and file.get("upload-time"):
                by_version.setdefault(version, []).append(file)
        found = []
        for version, files in by_version.items():
            parsed = Version(version)
            if parsed.is_prerelease or parsed.is_devrelease:
                continue
            uploaded = min(datetime.fromisoformat(f["upload-time"].replace("Z", "+00:00")) for f in files)
            yanked = all(bool(f.get("yanked")) for f in files)
            needs = [f.get("requires-python") or "" for f in files]
            requires = () if not all(needs) else tuple(sorted(set(needs)))
            found.append(Release(distribution, version, uploaded, yanked, requires))
        return sorted(found, key=lambda r: Version(r.version))

    def available(self, distribution: str, version: str) -> Release:
        """The release, once the index says it can be installed here; else
        :class:`ReleaseUnavailable` naming the nearest releases that can."""
        return choose(self.releases(distribution, want=version), distribution, version)

    def latest(self, distribution: str) -> Release:
        """The newest release that can be installed here (not yanked, for this Python)."""
        live = installable(self.releases(distribution))
        if not live:
            raise IndexLookupError(f"{distribution} has no final release for Python {PYTHON} on {index_url()}")
        return live[-1]

    def _page(self, distribution: str, want: str | None) -> dict:
        path = self.cache / f"{canonicalize_name(distribution)}.json"
        if path.exists():
            fresh = time.time() - path.stat().st_mtime < MAX_AGE_S
            data = json.loads(path.read_text(encoding="utf-8"))
            if fresh and (want is None or want in data.get("versions", [])):
                return data
        try:
            data = _fetch(distribution)
        except IndexLookupError:
            if path.exists():  # offline: the cached page still answers
                return json.loads(path.read_text(encoding="utf-8"))
            raise
        self.cache.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, path)
        return data


def choose(found: list[Release], distribution: str, version: str) -> Release:
    """``version`` among a distribution's releases, when it can be installed here; else
    :class:`ReleaseUnavailable`: not there, yanked, or for another Python, and the nearest
    releases that would do."""
    release = next((r for r in found if Version(r.version) == Version(version)), None)
    if release is None:
        why = f"{distribution} has no release {version} on {index_url()}"
    elif release.yanked:
        why = f"{distribution} {version} is yanked on {index_url()}"
    elif not release.fits():
        needs = " or ".join(release.requires_python)
        why = f"{distribution} {version} requires Python {needs}; environments are built with Python {PYTHON}"
    else:
        return release
    raise ReleaseUnavailable(f"{why}; {nearest(installable(found), version)}")


def installable(releases: list[Release]) -> list[Release]:
    """The releases that can be installed here, oldest first: not yanked, for this Python."""
    return [r for r in releases if not r.yanked and r.fits()]


def nearest(live: list[Release], version: str) -> str:
    """The installable releases next to ``version`` (the one below, the one above) and the
    latest: what the user may have meant."""
    if not live:
        return "no release of it can be installed here"
    wanted = Version(version)
    below = [r.version for r in live if Version(r.version) < wanted][-1:]
    above = [r.version for r in live if Version(r.version) > wanted][:1]
    named = list(dict.fromkeys([*below, *above]))
    latest = live[-1].version
    shown = [f"{v} (the latest)" if v == latest else v for v in named]
    if latest not in named:
        shown.append(f"{latest} (the latest)")
    return f"the nearest: {', '.join(shown)}"


def _fetch(distribution: str) -> dict:
    import httpx

    url = f"{index_url()}/{canonicalize_name(distribution)}/"
    try:
        response = httpx.get(url, headers={"Accept": ACCEPT}, timeout=FETCH_TIMEOUT_S, follow_redirects=True)
        response.raise_for_status()
        page = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise IndexLookupError(f"cannot read {url}: {error}") from None
    files = page.get("files") if isinstance(page, dict) else None
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files
    ):
        raise IndexLookupError(f"cannot read {url}: the answer is not a simple index page (PEP 691 'files')")
    return page


def _version_of(filename: str, distribution: str) -> str | None:
    """``pydantic_ai_slim-1.0.18-py3-none-any.whl`` / ``pydantic_ai_slim-1.0.18.tar.gz`` ->
    ``1.0.18``, matched by canonical name (packaging's filename parsers), so an sdist named
    with dashes (``openai-agents-0.2.0.tar.gz``: the version follows the last dash) is found
    too; None for another distribution's file or a name packaging cannot read (an egg)."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return str(version) if name == canonicalize_name(distribution) else None
