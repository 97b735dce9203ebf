"""The limits a run's settings must respect, and the model of the ``request`` a manifest records.

One model checks both what the CLI (or a notebook) asks for and what ``--resume`` reads back
from a manifest a user may have edited by hand, so ``call_cap: 0``, ``time_limit_s: -1``,
``reps: 1e12``, a seed past 64 bits or ``"sdks": "pydantic-ai"`` are one clear error before
anything runs, never a crash after the run or a plan that eats the machine's memory.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
"""The ``seed`` column is int64."""
MAX_REPS = 100_000
MAX_PLAN_CELLS = 1_000_000
"""Cells one run may plan (before sharding). The plan is a list of small records (about 200
bytes each, so at most ~200 MB); a bigger sweep is several runs, or shards merged later."""
MAX_CALL_CAP = 1_000
MAX_TIME_LIMIT_S = 86_400.0
MAX_CONCURRENCY = 256

FLAGS = {
    "reps": "--reps",
    "seed": "--seed",
    "options.call_cap": "--call-cap",
    "options.time_limit_s": "--time-limit",
    "options.concurrency": "--concurrency",
    "sdks": "--sdk",
    "tasks": "--tasks",
}
"""How a field is called on the command line, for the error message."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RecordedOptions(_Strict):
    call_cap: int = Field(ge=1, le=MAX_CALL_CAP)
    """Model calls after which a cell is a runaway."""
    time_limit_s: float | None = Field(gt=0, le=MAX_TIME_LIMIT_S, allow_inf_nan=False)
    """Seconds per cell; None: each adapter's own default."""
    concurrency: int = Field(ge=1, le=MAX_CONCURRENCY)
    record_bodies: bool
    cassettes: str | None = None
    """The cassette folder the run was answered from (``--cassettes``)."""
    redact: list[str] = Field(default_factory=list)
    """The body patterns the cassettes were recorded with (``--redact``)."""
    skip_bad: bool = False
    """A cassette file that cannot be read was left out (``--skip-bad``)."""


class RecordedFilters(_Strict):
    modes: list[str] | None
    variants: list[str] | None
    protocols: list[str] | None
    scenarios: list[str] | None
    faults: list[str] | None


class RecordedType(_Strict):
    """``bench pick --type``: the user's type and what says what is right for it."""

    reference: str
    example: str | None
    check: str | None


class RecordedRequest(_Strict):
    """``manifest.json``'s ``request``: everything needed to expand the same plan again."""

    sdks: list[str]
    filters: RecordedFilters
    suite: Literal["default", "full", "field"]
    scenario_paths: list[str]
    reps: int = Field(ge=1, le=MAX_REPS)
    seed: int = Field(ge=SEED_MIN, le=SEED_MAX)
    options: RecordedOptions
    shard: list[int] | None = Field(min_length=2, max_length=2)
    agents: list[str] | None = None
    project: str | None = None
    releases: list[str] = Field(default_factory=list)
    output_type: RecordedType | None = None
    tasks: Literal["builtin", "cassettes"] = "builtin"
    """``cassettes``: the tasks drawn from the ``--cassettes`` folder (``--tasks cassettes``)."""


def check(data: dict[str, Any], manifest: str | None = None) -> RecordedRequest:
    """Validate a request (as ``request_to_json`` writes it); ``ValueError`` with one line naming
    the flag (or, for a ``manifest`` read back, the file and field) and what was expected."""
    try:
        return RecordedRequest.model_validate(data)
    except ValidationError as error:
        problems = error.errors(include_url=False)
        first = problems[0]
        field = ".".join(str(part) for part in first["loc"]) or "request"
        where = f"{manifest}: field request.{field}" if manifest else FLAGS.get(field, field)
        got = first.get("input")
        shown = "" if isinstance(got, dict | list) and field != "sdks" else f", got {_short(got)}"
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise ValueError(f"{where}: {first['msg']}{shown}{more}") from None


def _short(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_plan_size(cells: int, scenarios: int, reps: int) -> None:
    """Refuse a plan over :data:`MAX_PLAN_CELLS` before expanding it (``--reps 100000000``
    once grew to 3.6 GB and a MemoryError)."""
    total = cells * scenarios * reps
    if total > MAX_PLAN_CELLS:
        raise ValueError(
            f"the plan has {total:,} cells ({cells} adapter cells x {scenarios} scenarios x {reps:,} reps); "
            f"a run may plan at most {MAX_PLAN_CELLS:,}: lower --reps or narrow the filters"
        )
