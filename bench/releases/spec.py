"""``--release`` arguments: ``pydantic-ai==1.0.18``, ``pydantic-ai@latest``, ``pydantic-ai@pinned``,
or a bare ``pydantic-ai`` for the short list in ``[tool.bench.releases]`` of ./pyproject.toml.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version
from pydantic import RootModel, ValidationError

LATEST = "latest"
PINNED = "pinned"
_SPEC = re.compile(r"^(?P<sdk>[A-Za-z0-9][A-Za-z0-9._-]*)(?:(?:==(?P<version>[^@=\s]+))|(?:@(?P<tag>[a-z]+)))?$")


class ReleaseSpecError(ValueError):
    """A ``--release`` value or a ``[tool.bench.releases]`` entry that does not parse."""


@dataclass(frozen=True)
class ReleaseSpec:
    sdk: str
    version: str | None
    """A version, ``latest``, ``pinned``; None: the configured list."""

    def __str__(self) -> str:
        if self.version is None:
            return self.sdk
        return f"{self.sdk}@{self.version}" if self.version in (LATEST, PINNED) else f"{self.sdk}=={self.version}"


def parse(text: str) -> ReleaseSpec:
    match = _SPEC.match(text.strip())
    if match is None:
        raise ReleaseSpecError(
            f"--release {text!r}: expected SDK==VERSION, SDK@latest, SDK@pinned or SDK (e.g. pydantic-ai==1.0.18)"
        )
    tag, version = match["tag"], match["version"]
    if tag is not None and tag not in (LATEST, PINNED):
        raise ReleaseSpecError(f"--release {text!r}: unknown tag @{tag}; expected @latest or @pinned")
    if version is not None:
        try:
            Version(version)
        except InvalidVersion:
            raise ReleaseSpecError(f"--release {text!r}: {version!r} is not a version") from None
    return ReleaseSpec(match["sdk"], tag or version)


class ReleasesConfig(RootModel[dict[str, list[str]]]):
    """``[tool.bench.releases]``: per SDK, the releases a bare ``--release SDK`` means."""


def configured(path: Path = Path("pyproject.toml")) -> dict[str, list[str]]:
    """The ``[tool.bench.releases]`` table of ``path`` (empty when there is none)."""
    if not path.exists():
        return {}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("bench", {}).get("releases", {})
        return ReleasesConfig.model_validate(table).root
    except (tomllib.TOMLDecodeError, ValidationError) as error:
        raise ReleaseSpecError(f'{path}: [tool.bench.releases]: expected SDK = ["VERSION", ...]: {error}') from None


def expand(specs: list[ReleaseSpec], config: dict[str, list[str]]) -> list[ReleaseSpec]:
    """Bare SDK names replaced by their configured list; duplicates dropped, order kept."""
    out: list[ReleaseSpec] = []
    for spec in specs:
        if spec.version is not None:
            out.append(spec)
            continue
        if spec.sdk not in config:
            raise ReleaseSpecError(
                f"--release {spec.sdk}: no version given and no {spec.sdk} list in [tool.bench.releases] "
                f"of ./pyproject.toml; say e.g. --release {spec.sdk}@latest"
            )
        out.extend(parse(_entry(spec.sdk, value)) for value in config[spec.sdk])
    return list(dict.fromkeys(out))


def _entry(sdk: str, value: str) -> str:
    """A configured entry is a version or a tag: ``"1.0.18"``, ``"latest"``, ``"pinned"``."""
    return f"{sdk}@{value}" if value in (LATEST, PINNED) else f"{sdk}=={value}"
