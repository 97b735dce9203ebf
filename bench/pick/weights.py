"""The weights of the pick score: what one fault cell costs the user, by what the caller got.

Defaults (docs/pick.md says why): a WRONG or EMPTY answer handed on as if right is the worst
(10: nobody catches it, a user sees it); a runaway or a timeout burns calls and ends with nothing
(5); a raised exception is a failure the caller can catch and handle (1); each extra model call
a fault costs is on the bill (0.1: ten retries weigh as much as one raise); billed tokens weigh
nothing by default (``extra_ktokens``, per 1,000 extra tokens, for those who pay by the token).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class PickInputError(ValueError):
    """A bad weight, on the command line or in pyproject.toml: one line, exit 2."""


class Weights(BaseModel):
    """``[tool.bench.pick]`` in pyproject.toml; also what ``--weight`` sets, key by key."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    wrong: float = Field(10.0, ge=0)
    """A schema-valid but WRONG answer handed to the caller as if it were right."""
    empty: float = Field(10.0, ge=0)
    """An EMPTY answer (nothing, or an empty object) handed to the caller as if it were right."""
    runaway: float = Field(5.0, ge=0)
    """The SDK kept calling the model until the cell's call cap stopped it."""
    timeout: float = Field(5.0, ge=0)
    """The cell's time limit stopped the SDK."""
    raised: float = Field(1.0, ge=0)
    """An exception reached the caller (it can be caught and handled)."""
    extra_call: float = Field(0.1, ge=0)
    """Per extra model call a fault costs over the cell's control."""
    extra_ktokens: float = Field(0.0, ge=0)
    """Per 1,000 extra billed tokens a fault costs over the cell's control."""

    def text(self) -> str:
        """``wrong=10,empty=10,...``: the form ``--weight`` takes, to say which weights ranked."""
        return ",".join(f"{key}={value:g}" for key, value in self.model_dump().items())


def load_weights(directory: Path) -> Weights:
    """``[tool.bench.pick]`` in ``directory/pyproject.toml``; the defaults without the file or table."""
    path = directory / "pyproject.toml"
    if not path.is_file():
        return Weights()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise PickInputError(f"{path}: cannot read: {error}") from None
    section = data.get("tool", {}).get("bench", {}).get("pick", {})
    try:
        return Weights.model_validate(section)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PickInputError(f"{path}: [tool.bench.pick] {where}: {first['msg']}") from None


def parse_weights(texts: list[str]) -> dict[str, float]:
    """``--weight wrong=10,raised=2`` (repeatable) as {key: value}; a bad key or value is one line."""
    known = list(Weights.model_fields)
    chosen: dict[str, float] = {}
    for part in (p.strip() for text in texts for p in text.split(",")):
        if not part:
            continue
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals or key not in known:
            raise PickInputError(f"--weight {part!r}: expected KEY=NUMBER with KEY one of {', '.join(known)}")
        try:
            number = float(value)
        except ValueError:
            raise PickInputError(f"--weight {part!r}: {value.strip()!r} is not a number") from None
        if not (math.isfinite(number) and number >= 0):
            raise PickInputError(f"--weight {part!r}: a weight is a finite number >= 0")
        chosen[key] = number
    return chosen


def resolve_weights(directory: Path, overrides: list[str]) -> Weights:
    """Defaults, then ``[tool.bench.pick]`` of ``directory``, then ``--weight``: the last word wins."""
    return load_weights(directory).model_copy(update=parse_weights(overrides))
