"""The one model of a run's ``manifest.json``: every command that reads a manifest (gate, report,
view, runs, resume, rerun, merge, baseline) reads it through :func:`parse_manifest`, so a hand-edited or
corrupted manifest is one line naming the file and the field, never a traceback deep in a reader.

A manifest is parsed only within bounds (:data:`MAX_BYTES`, :data:`MAX_DEPTH`, checked before
``json.loads``, whose recursion a deeply nested file once blew: a RecursionError in every command,
and in ``bench runs`` and ``bench view`` for every run of the folder). Every key any version of
misfit-bench writes is declared here with its type (``extra="forbid"``: a key no version writes is
a typo or a foreign file); fields are optional because older runs, shard merges and baselines each
write a subset. The recorded ``request`` is an object here and is checked field by field by
:mod:`bench.planner.limits` when a command runs it again (``--resume``, ``--rerun``).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_BYTES = 16 << 20
"""A manifest larger than this (16 MiB; a run's is a few kB, a release run's freeze lists tens of
kB) is refused unread."""

MAX_DEPTH = 100
"""A manifest nested deeper than this (objects and arrays; a run's is 5 deep, an own agent's
derived answers a few more) is refused before ``json.loads`` recurses into it."""


class ManifestError(ValueError):
    """A manifest that is not one: the message is one line, ``<what>: <problem>``, naming the field."""


Count = Annotated[int, Field(ge=0)]
Object = dict[str, Any]


class Manifest(BaseModel):
    """``manifest.json`` of a run, a shard merge or a baseline (``bench.run.manifests.assembled`` writes it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    suite_id: str | None = None
    schema_version: str | None = None
    harness_version: str | None = None
    python: str | None = None
    sdk_versions: dict[str, str | None] | None = None
    agents: dict[str, Object] | None = None
    """Own agents: their SDK, reference and derived task (``OwnAgentAdapter.describe``)."""
    output_type: Object | None = None
    """``bench pick --type``: the user's type and the answers derived from it (``OnYourType.describe``)."""
    seed: int | None = None
    reps: Count | None = None
    suite: str | None = None
    scenarios: list[str] | None = None
    filters: dict[str, list[str] | None] | None = None
    options: Object | None = None
    request: Object | None = None
    """How the run was made; its fields are checked by :mod:`bench.planner.limits` when it is run again."""
    command_line: str | None = None
    cells_planned: Count | None = None
    cells_written: Count | None = None
    shard: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None
    environments: list[Object] | None = None
    environment_errors: list[str] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    status: str | None = None
    resumed: list[str] | None = None
    reruns: list[Object] | None = None
    procs: Count | None = None
    executor: str | None = None
    """Where the cells ran: ``local`` or ``ray`` (``bench run --executor``)."""
    ray: Object | None = None
    """On Ray: tasks, retried, nodes, processes, tasks_per_environment, environment_builds (``bench.run.cluster``)."""
    sockets_closed_after_run: Count | None = None
    workers_started: dict[str, Count] | None = None
    cell_cache: Object | None = None
    """The cell cache's use (``bench.run.cache.RunCache.summary``): its folder, the cells served and
    from which runs, stored, not cacheable, verified, and any disagreement ``--verify-cache`` found."""
    live: bool | None = None
    """A run against a real model (hand-set): the gate judges every cell as stochastic."""
    not_measured: list[Object] | None = None
    """Fault families no answer could be derived for, per own agent (``bench.run.manifests.not_measured``:
    agent, family, reason, cells), said on stderr and in the summary as well."""
    # Written by bench merge.
    merged_from: list[Object] | None = None
    shards_complete: bool | None = None
    forced_despite: list[str] | None = None
    # Written by bench baseline update.
    baseline_of: str | None = None
    baseline_updated_at: str | None = None
    baseline_merged: list[Object] | None = None

    @field_validator("started_at", "finished_at", "baseline_updated_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"not an ISO 8601 time: {value[:40]!r}") from None
        return value

    @field_validator("resumed")
    @classmethod
    def _iso_times(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            cls._iso_time(item)
        return value


def parse_manifest(text: str, where: str) -> dict[str, Any]:
    """The manifest ``text`` (from ``where``, the path named in errors) as the dict it holds,
    validated by :class:`Manifest`; :class:`ManifestError` otherwise."""
    if len(text) > MAX_BYTES:
        raise ManifestError(f"{where}: {len(text):,} characters; a manifest may have at most {MAX_BYTES:,}")
    if too_deep(text, MAX_DEPTH):
        raise ManifestError(f"{where}: nested more than {MAX_DEPTH} levels deep; not a misfit-bench manifest")
    try:
        data = json.loads(text)
    except RecursionError:  # too_deep has said no already: kept as the last guard
        raise ManifestError(f"{where}: nested too deeply; not a misfit-bench manifest") from None
    except ValueError as error:
        raise ManifestError(f"{where}: unreadable manifest: {error}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: unreadable manifest: a JSON {type(data).__name__}, not an object")
    try:
        Manifest.model_validate(data)
    except ValidationError as error:
        raise ManifestError(describe(where, error)) from None
    return data


def describe(where: str, error: ValidationError) -> str:
    """The first problem as one line, ``<where>: field sdk_versions: Input should be ...``, with
    how many more there are."""
    problems = error.errors(include_url=False)
    first = problems[0]
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: field {field}: {message}{more}"


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STEP = np.zeros(256, np.int8)
_STEP[[ord("["), ord("{")]], _STEP[[ord("]"), ord("}")]] = 1, -1


def too_deep(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``limit`` deep, found without
    recursion (and in C, a 16 MiB file in a fraction of a second): strings removed, each bracket
    a step of +1 or -1, the depth their running sum."""
    codes = np.frombuffer(_STRING.sub("", text).encode(), np.uint8)
    return bool(codes.size) and int(np.cumsum(_STEP[codes], dtype=np.int32).max()) > limit


def type_mismatch(manifest: dict[str, Any], other: dict[str, Any]) -> str | None:
    """Why two runs' cells are not the same cells though their ids match: a ``bench pick --type``
    run answers the user's type where a built-in run answers the built-in tasks (its cells carry
    no agent name), another user type, or the same type with other answers. None when both
    answer the same."""

    def reference(of: dict[str, Any]) -> str | None:
        typed = of.get("output_type")
        return typed.get("reference") if isinstance(typed, dict) else None

    mine, theirs = reference(manifest), reference(other)
    if mine == theirs:
        answers = [
            {k: v for k, v in (of.get("output_type") or {}).items() if k != "not_measured"} for of in (manifest, other)
        ]
        if answers[0] == answers[1]:
            return None
        return (f"both answer the user type {mine}, with different answers derived or given (the type, "
                "--example or --check changed): their cells are not the same cells")  # fmt: skip
    told = [f"the user type {name}" if name else "the built-in tasks" for name in (mine, theirs)]
    return f"one run answers {told[0]}, the other {told[1]}: their cells are not the same cells"
