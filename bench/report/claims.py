"""Published claims about the SDKs as checkable statements over cells, and their verdicts.

A claims file (``bench/report/claims.yaml``, schema ``claims.schema.json`` next to it) lists
claims; each has checks. A check selects rows of the runs table and states what every selected
row must show (``expect``), or states an ordering of a metric across modes (``order``). A row
whose value for a column the check names (``expect.columns``) is null did not measure it (a run
written before that column existed, or no tool call failed) and is left out; so is a row without
the adapter's ``details`` for a ``details`` check (a cell stopped at its call cap or time limit
never returned them). A check that is
left with no row is ``untested``; one with a row that contradicts it is ``refuted`` (the
contradicting cells are listed); otherwise ``confirmed``. A claim's verdict combines its checks'
by one rule, :func:`combine`: refuted if any check is, confirmed if every check is, untested if
none was tested, and ``partial`` (partly confirmed) when some checks are confirmed and the rest
untested, so a claim never reads "untested" over checks that say "confirmed". A refuted claim is
a finding, not a failure of the run.

The deciding cells are listed once per cell, not once per repetition: a cell whose reps agree
is one line (``(all 3 reps)``), a cell whose reps differ lists each distinct result with its
count (``(2 of 3 reps)``), and a cell is contradicting when any of its reps is.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench.core.vocabulary import Outcome
from bench.report.matrix import is_sweep, short_exception
from bench.report.tools import DERIVED_COLUMNS, with_derived
from bench.results import columns as result_columns

CLAIMS_FILE = Path(__file__).resolve().parent / "claims.yaml"
SCHEMA_FILE = CLAIMS_FILE.with_name("claims.schema.json")
Verdict = Literal["confirmed", "partial", "refuted", "untested"]
"""``partial``: a claim some of whose checks are confirmed and the others untested (never a
check's own verdict)."""
CELL_KEYS = ["sdk", "mode", "variant", "protocol", "stream", "scenario"]


class ClaimsError(Exception):
    """An unreadable or invalid claims file; the message names file, entry and field."""


class Selector(BaseModel):
    """Which rows of the runs table a check is about. Every given field must match; a list
    means any of its values; ``scenario`` values are fnmatch globs."""

    model_config = ConfigDict(extra="forbid")
    sdk: list[str] | None = None
    mode: list[str] | None = None
    variant: list[str] | None = None
    protocol: list[str] | None = None
    stream: bool | None = None
    scenario: list[str] | None = None
    task: list[str] | None = None
    exclude_sdk: list[str] | None = None
    """SDKs left out (for "every SDK but ...")."""

    def mask(self, runs: pd.DataFrame) -> pd.Series:
        keep = (runs["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(runs)
        for column in ("sdk", "mode", "variant", "protocol", "task"):
            values = getattr(self, column)
            if values is not None:
                keep &= runs[column].isin(values)
        if self.stream is not None:
            keep &= runs["stream"].astype(bool) == self.stream
        if self.scenario is not None:
            keep &= runs["scenario"].map(lambda s: any(fnmatch.fnmatchcase(s, p) for p in self.scenario or []))
        if self.exclude_sdk is not None:
            keep &= ~runs["sdk"].isin(self.exclude_sdk)
        return keep


class Range(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min: float | None = None
    max: float | None = None


COLUMN_NAMES = frozenset(result_columns.RUNS.names) | frozenset(DERIVED_COLUMNS)


Allowed = list[bool | int | float | str] | Range


class Expect(BaseModel):
    """What every selected row must show. Exception types match by full or short name."""

    model_config = ConfigDict(extra="forbid")
    outcome: list[str] | None = None
    outcome_not: list[str] | None = None
    """Outcomes no selected row may have (e.g. ``empty`` for "never a partial object")."""
    exception_type: list[str] | None = None
    message_contains: str | None = None
    model_calls: Range | None = None
    returned_valid: bool | None = None
    details: dict[str, str | int | float | bool] | None = None
    """Fields of the run's ``details`` struct and the value each must have (typed as declared in
    bench.results.columns.DETAILS: ``{strategy: ToolStrategy}``, ``{sdk_requests: 1}``)."""
    columns: dict[str, Allowed] | None = None
    """Any column of the runs table (or ``framework_retries``) and its allowed values (a list)
    or bounds (``{min, max}``). Rows where one of them is null are left out of the check."""

    @model_validator(mode="after")
    def _known_columns(self) -> Expect:
        unknown = sorted(set(self.columns or {}) - COLUMN_NAMES)
        if unknown:
            raise ValueError(f"unknown column(s) in columns: {', '.join(unknown)}")
        return self

    def failures(self, row: pd.Series) -> list[str]:
        """Why ``row`` contradicts this expectation (empty: it agrees)."""
        why = []
        if self.outcome is not None and row["outcome"] not in self.outcome:
            why.append(f"outcome {row['outcome']}")
        if self.outcome_not is not None and row["outcome"] in self.outcome_not:
            why.append(f"outcome {row['outcome']}")
        exception = row["exception_type"] if isinstance(row["exception_type"], str) else ""
        if self.exception_type is not None and not ({exception, short_exception(exception)} & set(self.exception_type)):
            why.append(f"exception {short_exception(exception) or 'none'}")
        message = row["exception_message"] if isinstance(row["exception_message"], str) else ""
        if self.message_contains is not None and self.message_contains not in message:
            why.append(f"message lacks {self.message_contains!r}")
        calls = row["model_calls"]
        if self.model_calls is not None and not _in_range(calls, self.model_calls):
            why.append(f"{_int(calls)} call(s)")
        if self.returned_valid is not None and bool(row["returned_valid"]) != self.returned_valid:
            why.append(f"returned_valid {row['returned_valid']}")
        if self.details is not None:
            details = row["details"] if isinstance(row["details"], dict) else {}
            why += [f"details.{k}={details.get(k)}" for k, v in self.details.items() if not _same(details.get(k), v)]
        for column, allowed in (self.columns or {}).items():
            value = row[column]
            ok = _in_range(value, allowed) if isinstance(allowed, Range) else any(_same(value, a) for a in allowed)
            if not ok:
                why.append(f"{column} {_show(value)}")
        return why

    def measured(self, rows: pd.DataFrame) -> pd.Series:
        """Rows with a value in every column of ``columns`` (and ``details`` when it is checked)."""
        keep = pd.Series(True, index=rows.index)
        if self.details is not None:
            keep &= rows["details"].notna()
        for column in self.columns or {}:
            keep &= rows[column].notna()
        return keep


class Order(BaseModel):
    """A metric that must grow strictly along ``modes`` within every group of ``within`` keys
    (medians over the group's rows); groups with fewer than two of the modes are skipped."""

    model_config = ConfigDict(extra="forbid")
    metric: Literal["input_tokens_billed", "output_tokens_billed", "model_calls", "request_bytes"] = (
        "input_tokens_billed"
    )
    modes: list[str] = Field(min_length=2)
    within: list[str] = Field(default_factory=lambda: ["sdk", "variant", "protocol", "stream", "task"])


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    says: str
    """The part of the claim this check tests, in words."""
    select: Selector
    expect: Expect | None = None
    order: Order | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Check:
        if (self.expect is None) == (self.order is None):
            raise ValueError("give exactly one of 'expect' or 'order'")
        return self


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    sdk: str
    """The SDK the claim is about, or ``all``."""
    claim: str
    """The claim as published."""
    source: str = ""
    """Where it is published (docs page, article)."""
    checks: list[Check] = Field(min_length=1)


class ClaimsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Literal[1]
    """Schema version of this file."""
    claims: list[Claim]

    @model_validator(mode="after")
    def _unique(self) -> ClaimsFile:
        ids = [c.id for c in self.claims]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"claim id(s) used twice: {', '.join(dupes)}")
        return self


def _in_range(value: Any, bounds: Range) -> bool:
    if value is None or pd.isna(value):
        return False
    return (bounds.min is None or value >= bounds.min) and (bounds.max is None or value <= bounds.max)


def _same(value: Any, allowed: bool | float | str) -> bool:
    """Booleans match only booleans (``0`` does not allow ``False``)."""
    if isinstance(allowed, bool) or isinstance(value, bool | np.bool_):
        return isinstance(allowed, bool) and isinstance(value, bool | np.bool_) and bool(value) == allowed
    return bool(value == allowed)


def _show(value: Any) -> str:
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _int(value: Any) -> str:
    return "?" if value is None or pd.isna(value) else str(int(value))


def load_claims(path: Path = CLAIMS_FILE) -> ClaimsFile:
    """Load and validate a claims file; raises :class:`ClaimsError` naming file, entry, field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ClaimsError(f"{path}: cannot read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ClaimsError(f"{path}:{where} invalid YAML: {problem}") from None
    if not isinstance(raw, dict):
        raise ClaimsError(f"{path}: expected a mapping with 'version' and 'claims', got {type(raw).__name__}")
    try:
        return ClaimsFile.model_validate(raw)
    except ValidationError as error:
        lines = []
        for problem in error.errors(include_url=False):
            loc = list(problem["loc"])
            entry = ""
            if len(loc) >= 2 and loc[0] == "claims" and isinstance(loc[1], int):
                claims = raw.get("claims") or []
                cid = claims[loc[1]].get("id") if loc[1] < len(claims) and isinstance(claims[loc[1]], dict) else None
                entry, loc = f"entry {cid!r} (claims[{loc[1]}]), ", loc[2:]
            field = ".".join(str(p) for p in loc)
            lines.append(f"{path}: {entry}field {field or '(top)'}: {problem['msg'].removeprefix('Value error, ')}")
        raise ClaimsError("\n".join(lines)) from None


def cell_name(row: pd.Series) -> str:
    stream = "/stream" if bool(row["stream"]) and row["variant"] != "stream" else ""
    return f"{row['sdk']}/{row['mode']}/{row['variant']}/{row['protocol']}{stream} x {row['scenario']}"


def describe_row(row: pd.Series, why: list[str]) -> str:
    """``cell x scenario: outcome, N call(s), Exception`` plus what else contradicts the check
    (the outcome, exception and calls are already in the line)."""
    exception = short_exception(row["exception_type"])
    text = f"{cell_name(row)}: {row['outcome']}, {_int(row['model_calls'])} call(s)" + (
        f", {exception}" if exception else ""
    )
    extra = [w for w in why if not w.startswith(("outcome ", "exception ")) and not w.endswith(" call(s)")]
    return text + (f" ({'; '.join(extra)})" if extra else "")


def evaluate_check(check: Check, runs: pd.DataFrame) -> dict[str, Any]:
    """Verdict of one check, with the deciding cells: the contradicting ones when refuted,
    a sample of the agreeing ones when confirmed."""
    rows = runs[check.select.mask(runs)]
    if check.expect is not None:
        rows = rows[check.expect.measured(rows)]
    if rows.empty:
        return {"says": check.says, "verdict": "untested", "cells": 0, "evidence": [], "counter": []}
    if check.order is not None:
        return _evaluate_order(check, check.order, rows)
    assert check.expect is not None
    counter: list[str] = []
    evidence: list[str] = []
    cells = rows.sort_values([*CELL_KEYS, "rep"]).groupby(CELL_KEYS, sort=False)
    for _, reps in cells:
        judged = []
        for _, row in reps.iterrows():
            why = check.expect.failures(row)
            judged.append((describe_row(row, why), bool(why)))
        against = [line for line, contradicts in judged if contradicts]
        (counter if against else evidence).extend(per_cell(against or [line for line, _ in judged], len(judged)))
    verdict: Verdict = "refuted" if counter else "confirmed"
    return {"says": check.says, "verdict": verdict, "cells": cells.ngroups, "evidence": evidence, "counter": counter}


def per_cell(lines: list[str], reps: int) -> list[str]:
    """One cell's lines, each distinct line once, with how many of the cell's reps it stands for."""
    if reps == 1:
        return lines
    return [
        f"{line} (all {reps} reps)" if count == reps else f"{line} ({count} of {reps} reps)"
        for line, count in Counter(lines).items()
    ]


def _evaluate_order(check: Check, order: Order, rows: pd.DataFrame) -> dict[str, Any]:
    if order.metric == "request_bytes":
        raise ClaimsError("request_bytes ordering needs the attempts table; use a runs metric")
    counter: list[str] = []
    evidence: list[str] = []
    rows = rows[rows["mode"].isin(order.modes)]
    for key, group in rows.groupby(order.within, sort=True):
        medians = group.groupby("mode")[order.metric].median()
        present = [m for m in order.modes if m in medians.index]
        if len(present) < 2:
            continue
        values = [float(medians[m]) for m in present]
        text = f"{_group_name(order.within, key)}: " + " < ".join(
            f"{m} {v:,.0f}" for m, v in zip(present, values, strict=True)
        )
        ok = all(a < b for a, b in pairwise(values))
        (evidence if ok else counter).append(text if ok else text.replace(" < ", " vs "))
    cells = len(rows.drop_duplicates(CELL_KEYS))
    if not counter and not evidence:
        return {"says": check.says, "verdict": "untested", "cells": cells, "evidence": [], "counter": []}
    verdict: Verdict = "refuted" if counter else "confirmed"
    return {"says": check.says, "verdict": verdict, "cells": cells, "evidence": evidence, "counter": counter}


def _group_name(keys: list[str], values: Any) -> str:
    values = values if isinstance(values, tuple) else (values,)
    parts = [("stream" if v else "") if k == "stream" else str(v) for k, v in zip(keys, values, strict=True)]
    return "/".join(p for p in parts if p)


def combine(verdicts: list[str]) -> Verdict:
    """A claim's verdict from its checks' (the one rule; see the module docstring)."""
    if "refuted" in verdicts:
        return "refuted"
    if "confirmed" not in verdicts:
        return "untested"
    return "partial" if "untested" in verdicts else "confirmed"


def evaluate(claims: ClaimsFile, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Every claim with its verdict and per-check verdicts and deciding cells."""
    results = []
    runs = with_derived(runs)
    for claim in claims.claims:
        checks = [evaluate_check(check, runs) for check in claim.checks]
        results.append(
            {
                "id": claim.id,
                "sdk": claim.sdk,
                "claim": claim.claim,
                "source": claim.source,
                "verdict": combine([c["verdict"] for c in checks]),
                "checks": checks,
            }
        )
    return results


def json_schema() -> dict[str, Any]:
    schema = ClaimsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "misfit-bench claims file"
    return schema


def write_json_schema(target: Path = SCHEMA_FILE) -> Path:
    target.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    return target
