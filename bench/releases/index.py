"""Which releases a distribution has and when each was uploaded: the package index's JSON
simple API (PEP 691, with PEP 700 upload times), the same pages uv and pip read.

One request per distribution, cached under the cache directory for an hour (and refreshed
early when a release asked for is not in the cached copy), so listing and building work from
the cache once the index has been read.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

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
ACCEPT = "application/vnd.pypi.simple.v1+json"


class IndexLookupError(Exception):
    """The index could not be read, or has no such release; the message says which."""


@dataclass(frozen=True)
class Release:
    distribution: str
    version: str
    uploaded: datetime
    """The earliest upload time among the release's files."""
    yanked: bool = False


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
            found.append(Release(distribution, version, uploaded, all(bool(f.get("yanked")) for f in files)))
        return sorted(found, key=lambda r: Version(r.version))

    def release(self, distribution: str, version: str) -> Release:
        for release in self.releases(distribution, want=version):
            if Version(release.version) == Version(version):
                return release
        raise IndexLookupError(f"{distribution} has no release {version} on {index_url()}")

    def latest(self, distribution: str) -> Release:
        live = [r for r in self.releases(distribution) if not r.yanked]
        if not live:
            raise IndexLookupError(f"{distribution} has no final release on {index_url()}")
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


def _fetch(distribution: str) -> dict:
    import httpx

    url = f"{index_url()}/{canonicalize_name(distribution)}/"
    try:
        response = httpx.get(url, headers={"Accept": ACCEPT}, timeout=60.0, follow_redirects=True)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise IndexLookupError(f"cannot read {url}: {error}") from None


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
