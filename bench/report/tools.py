"""Tool failures as data: per SDK x mode x variant and tool scenario, where the run ended, how
often the harness tool ran, whether each failure went back to the model paired with its call id
(and structured), and whether a non-retryable error stopped the loop; per SDK, the same folded
into shares, and the shared-budget reading of ``tool_budget_shared``.

Only supported, non-sweep rows of the ``order_lookup`` task count. Runs written before schema 2
have no tool columns: they read as null here and the tables come out empty.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from bench.core.vocabulary import SUCCESS, USER_FAILURE, Outcome
from bench.report.matrix import ROW_KEYS, is_sweep, summarise_cell

TOOL_TASK = "order_lookup"
BUDGET_SCENARIO = "tool_budget_shared"
"""One tool-argument failure, a good call, a malformed final answer, then a valid one."""
OUTPUT_SCENARIO = "malformed_then_valid"
"""The same cell's output retry on its own: what the budget reading is compared with."""
RETRYABLE_SCENARIOS = ("tool_bad_args_then_ok", "tool_unknown_order_then_ok", BUDGET_SCENARIO)
"""A retryable failure followed by a good call: the run should go on, so every failure should go
back to the model (the SDK share counts these only)."""
SCHEMA2_COLUMNS = [
    "client_retries",
    "retry_wait_ms",
    "tool_calls_requested",
    "tool_calls",
    "tool_errors",
    "tool_retries",
    "tool_error_to_model",
    "tool_error_structured",
    "tool_calls_after_fatal",
    "tool_transport_retries",
]

CELL_COLUMNS = [
    *ROW_KEYS,
    "scenario",
    "outcome",
    "label",
    "mixed",
    "n",
    "model_calls",
    "tool_calls",
    "failed_runs",
    "to_model",
    "structured_runs",
    "structured",
    "after_fatal",
]
SUMMARY_COLUMNS = [
    "sdk",
    "cells",
    "failed_runs",
    "to_model",
    "structured_runs",
    "structured",
    "max_after_fatal",
    "budget",
]
BUDGET_COLUMNS = [*ROW_KEYS, "budget_outcome", "budget_label", "output_outcome", "output_label", "reading"]


def with_schema2(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with every schema-2 column present (null where the run predates it)."""
    missing = [c for c in SCHEMA2_COLUMNS if c not in runs.columns]
    return runs.assign(**{c: pd.Series([None] * len(runs), index=runs.index, dtype=object) for c in missing})


DERIVED_COLUMNS = {"framework_retries": "transport_retries - client_retries: the framework re-sent the same request"}
"""Columns computed from the runs table (name -> meaning), for the report and for claims."""


def with_derived(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the schema-2 columns present and the derived ones (null where unknown)."""
    table = with_schema2(runs)
    transport = pd.to_numeric(table["transport_retries"], errors="coerce")
    return table.assign(framework_retries=transport - pd.to_numeric(table["client_retries"], errors="coerce"))


def tool_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """Supported, non-sweep rows of the tool task."""
    table = with_schema2(runs)
    return table[(table["task"] == TOOL_TASK) & (table["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(table)]


def _count(series: pd.Series) -> tuple[int, int]:
    """(true, measured) of a nullable boolean column."""
    values = series.dropna()
    return int(values.astype(bool).sum()), len(values)


def _max(series: pd.Series) -> int | None:
    values = series.dropna()
    return int(values.max()) if len(values) else None


def _median(series: pd.Series) -> float | None:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.median()) if len(values) else None


def tool_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (sdk, mode, variant, tool scenario): the cell's outcome (as in the landing
    matrix), median tool runs and model calls, how many runs had a failed tool call and in how
    many of them every failure went back paired with its call id (``to_model``) and structured,
    and the most tool runs seen after a non-retryable error (None: there was none)."""
    table = tool_rows(runs)
    records = []
    for (sdk, mode, variant, scenario), group in table.groupby([*ROW_KEYS, "scenario"], sort=True):
        cell = summarise_cell(group)
        to_model, failed = _count(group["tool_error_to_model"])
        structured, structured_runs = _count(group["tool_error_structured"])
        records.append(
            {
                "sdk": sdk,
                "mode": mode,
                "variant": variant,
                "scenario": scenario,
                "outcome": cell["outcome"],
                "label": cell["label"],
                "mixed": cell["mixed"],
                "n": cell["n"],
                "model_calls": cell["model_calls"],
                "tool_calls": _median(group["tool_calls"]),
                "failed_runs": failed,
                "to_model": to_model,
                "structured_runs": structured_runs,
                "structured": structured,
                "after_fatal": _max(group["tool_calls_after_fatal"]),
            }
        )
    return pd.DataFrame.from_records(records, columns=CELL_COLUMNS)


def budget_reading(budget_outcome: str, output_outcome: str | None) -> str:
    """What ``tool_budget_shared`` says about one cell's retry budgets, read against the same
    cell's ``malformed_then_valid``: recovering after a spent tool retry means the output retry
    had budget left (separate budgets, or one larger than 1); failing where the output retry on
    its own recovers means the tool retry used it up; failing where it does not recover either
    says nothing about sharing."""
    if budget_outcome == Outcome.RECOVERED:
        return "separate (or > 1)"
    if budget_outcome in (Outcome.RAISED, Outcome.FALLBACK) or budget_outcome in USER_FAILURE:
        if output_outcome is None:
            return "shared or exhausted"
        if output_outcome in SUCCESS:
            return "shared (not retried after a tool retry)"
        return "no output retry to share"
    return budget_outcome


def budget_rows(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per SDK x mode x variant that ran ``tool_budget_shared``, with its outcome next to
    the same cell's ``malformed_then_valid`` (task person) and the reading of the two."""
    budget = cells[cells["scenario"] == BUDGET_SCENARIO]
    output: dict[tuple[str, str, str], dict[str, Any]] = {}
    plain = runs[(runs["scenario"] == OUTPUT_SCENARIO) & (runs["outcome"] != Outcome.UNSUPPORTED)]
    for key, group in plain.groupby(ROW_KEYS, sort=True):
        output[key] = summarise_cell(group)
    records = []
    for row in budget.itertuples(index=False):
        other = output.get((row.sdk, row.mode, row.variant))
        records.append(
            {
                "sdk": row.sdk,
                "mode": row.mode,
                "variant": row.variant,
                "budget_outcome": row.outcome,
                "budget_label": row.label + ("*" if row.mixed else ""),
                "output_outcome": other["outcome"] if other else None,
                "output_label": (other["label"] + ("*" if other["mixed"] else "")) if other else None,
                "reading": budget_reading(row.outcome, other["outcome"] if other else None),
            }
        )
    return pd.DataFrame.from_records(records, columns=BUDGET_COLUMNS)


def tool_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SDK over its supported tool cells: runs of the retryable scenarios (every one has a
    failed call) and in how many every failure went back to the model with its call id (a run
    that raised at its first tool error, where the column is null, counts as not); runs (of any tool
    scenario) whose returned error was measured and in how many it was structured; the most tool
    runs after a non-retryable error; the budget readings of its cells (``reading count; ...``)."""
    table = tool_rows(runs)
    budgets = budget_rows(tool_cells(runs), runs)
    records = []
    for sdk, group in table.groupby("sdk", sort=True):
        retryable = group[group["scenario"].isin(RETRYABLE_SCENARIOS) & group["tool_calls_requested"].notna()]
        to_model, failed = int(retryable["tool_error_to_model"].eq(True).sum()), len(retryable)
        structured, structured_runs = _count(group["tool_error_structured"])
        readings = Counter(budgets.loc[budgets["sdk"] == sdk, "reading"])
        records.append(
            {
                "sdk": sdk,
                "cells": int(group[ROW_KEYS].drop_duplicates().shape[0]),
                "failed_runs": failed,
                "to_model": to_model,
                "structured_runs": structured_runs,
                "structured": structured,
                "max_after_fatal": _max(group["tool_calls_after_fatal"]),
                "budget": "; ".join(f"{r} {n}" for r, n in sorted(readings.items())) or None,
            }
        )
    return pd.DataFrame.from_records(records, columns=SUMMARY_COLUMNS)
