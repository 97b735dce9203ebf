"""The landing matrix as data: one cell per (SDK, mode, variant) x scenario saying where the
failure landed, aggregated over protocols, streaming and reps by majority.

Everything the renderers, the notebook and ``--json`` show comes from :func:`landing`, so the
three can never disagree about a cell.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from bench.core.vocabulary import CALLS_SHOWN, BehaviourKind, Outcome

ROW_KEYS = ["sdk", "mode", "variant"]
CONTROLS = {"person": "valid", "expense_report": "expense_valid", "order_lookup": "tool_ok"}
"""The ``valid`` control of each task (order_lookup's takes two model calls: the tool call and
the answer). ticket_triage has none in the library: its faults are shown in the matrix but left
out of the cost comparison (the report says so)."""

OUTCOME_ORDER = [
    Outcome.OK,
    Outcome.RECOVERED,
    Outcome.FALLBACK,
    Outcome.RAISED,
    Outcome.WRONG,
    Outcome.EMPTY,
    Outcome.RUNAWAY,
    Outcome.TIMEOUT,
    Outcome.UNSUPPORTED,
    Outcome.HARNESS_ERROR,
]
"""From "the caller got a correct object" to "nobody got anything"; also the heatmap scale."""


FAMILY_ORDER: list[str] = [
    "control",
    BehaviourKind.MALFORMED,
    BehaviourKind.SCHEMA_VIOLATION,
    BehaviourKind.WRONG,
    BehaviourKind.TRUNCATED,
    BehaviourKind.REFUSAL,
    BehaviourKind.PROSE,
    BehaviourKind.HTTP_ERROR,
    BehaviourKind.SLOW,
    "tool",
    "sweep",
]
"""Fault families in the order views group them: the controls, what the model's answer gets
wrong (from "not JSON" to "valid but wrong"), transport faults, then the tool's failures."""


def fault_family(fault: str) -> str:
    """The family of a fault label: ``malformed:trailing_comma`` -> ``malformed``, ``none`` ->
    ``control``, ``tool_bad_args+malformed`` -> ``tool``, ``mix:...`` (a sweep) -> ``sweep``."""
    head = str(fault).split("+", 1)[0].split(":", 1)[0]
    if head == "none":
        return "control"
    if head == "mix":
        return "sweep"
    return "tool" if head.startswith("tool_") else head


def family_rank(family: str) -> int:
    return FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)


def short_exception(name: object) -> str:
    """``agents.exceptions.ModelBehaviorError`` -> ``ModelBehaviorError``."""
    return str(name).rsplit(".", 1)[-1] if isinstance(name, str) and name else ""


def is_sweep(runs: pd.DataFrame) -> pd.Series:
    """Stochastic scenarios (fault label ``mix:...``) belong to the sweep section, not the matrix."""
    return runs["fault"].astype(str).str.startswith("mix:")


def scenario_order(runs: pd.DataFrame) -> list[str]:
    """Controls first, then by task and name: stable for a given set of scenarios."""
    pairs = runs[["scenario", "task"]].drop_duplicates()
    keyed = sorted((0 if CONTROLS.get(t) == s else 1, t, s) for s, t in pairs.itertuples(index=False))
    return [s for _, _, s in keyed]


def label(outcome: str, calls: float | None, exception: str) -> str:
    """What a cell says, short enough for a 24-column table."""
    names: dict[str, str] = {
        Outcome.OK: "ok",
        Outcome.RECOVERED: "recovered",
        Outcome.FALLBACK: "fallback",
        Outcome.RAISED: f"raised {exception or '?'}",
        Outcome.WRONG: "WRONG",
        Outcome.EMPTY: "EMPTY",
        Outcome.RUNAWAY: "RUNAWAY",
        Outcome.TIMEOUT: "timeout",
        Outcome.UNSUPPORTED: "-",
        Outcome.HARNESS_ERROR: "HARNESS ERROR",
    }
    text = names.get(outcome, outcome)
    if outcome not in CALLS_SHOWN:
        return text
    return f"{text} ({int(calls)})" if calls is not None and not pd.isna(calls) else f"{text} (?)"


def outcome_rank(outcome: str) -> int:
    """An outcome's place in :data:`OUTCOME_ORDER` (an unknown name last)."""
    try:
        return OUTCOME_ORDER.index(Outcome(outcome))
    except ValueError:
        return len(OUTCOME_ORDER)


def majority[T](counts: Mapping[T, int], rank: Callable[[T], Any] = str) -> T:
    """The most frequent value; a tie goes to the lowest ``rank`` (text order unless given;
    outcomes by :func:`outcome_rank`), so every view of the same rows picks the same value:
    the matrix, the report, the changelog. The one majority vote of the package."""
    return min(counts, key=lambda value: (-counts[value], rank(value)))


CELL_FIELDS = ["outcome", "label", "model_calls", "exception_type", "mixed", "n", "outcomes", "outcome_calls"]
"""What :func:`summarise_cell` says of a cell, in the landing tables' column order."""


def summarise_cell(group: pd.DataFrame) -> dict[str, Any]:
    """Majority outcome of the supported rows (ties broken by OUTCOME_ORDER), its median model
    calls and most common exception; ``mixed`` when protocols/streams/reps disagree; and every
    outcome the rows reached, with its count (``outcomes``) and median calls (``outcome_calls``),
    so a minority outcome (an EMPTY answer on one protocol) is never lost to the vote."""
    # On plain lists, not pandas: a cell is a few rows, and masking a frame per cell made this
    # the larger part of `bench run`'s closing summary (615 cells of the default matrix).
    outcomes, all_calls = group["outcome"].tolist(), group["model_calls"].tolist()
    all_exceptions = group["exception_type"].tolist()
    supported = [i for i, value in enumerate(outcomes) if value != Outcome.UNSUPPORTED]
    rows = supported or range(len(outcomes))
    counts = Counter(outcomes[i] for i in rows)
    outcome = majority(counts, outcome_rank)
    chosen = [i for i in rows if outcomes[i] == outcome]
    calls = [all_calls[i] for i in chosen if not pd.isna(all_calls[i])]
    median = float(statistics.median(calls)) if calls else None
    exceptions = Counter(short_exception(all_exceptions[i]) for i in chosen if not pd.isna(all_exceptions[i]))
    exception = majority(exceptions) if exceptions else ""
    by_outcome: dict[str, list[float]] = {str(o): [] for o in counts}
    for i in rows:
        if not pd.isna(all_calls[i]):
            by_outcome[str(outcomes[i])].append(float(all_calls[i]))
    return {
        "outcome": outcome,
        "label": label(outcome, median, exception),
        "model_calls": median,
        "exception_type": exception or None,
        "mixed": len(counts) > 1 or len(exceptions) > 1,
        "n": len(rows),
        "outcomes": {str(o): int(counts[o]) for o in OUTCOME_ORDER if counts.get(o)},
        "outcome_calls": {
            str(o): float(statistics.median(by_outcome[str(o)])) if by_outcome[str(o)] else None
            for o in OUTCOME_ORDER
            if counts.get(o)
        },
    }


def landing(runs: pd.DataFrame) -> pd.DataFrame:
    """Long form: one row per (sdk, mode, variant, scenario) with the cell summary."""
    table = runs[~is_sweep(runs)]
    records = []
    for (sdk, mode, variant, scenario), group in table.groupby([*ROW_KEYS, "scenario"], sort=True):
        records.append({"sdk": sdk, "mode": mode, "variant": variant, "scenario": scenario} | summarise_cell(group))
    columns = [*ROW_KEYS, "scenario", *CELL_FIELDS]
    return pd.DataFrame.from_records(records, columns=columns)


def landing_by_mode(runs: pd.DataFrame) -> pd.DataFrame:
    """Like :func:`landing`, one row per (sdk, mode, scenario) over every variant (``variant``
    is ``all``): the PR summary's and the terminal's shape."""
    table = runs[~is_sweep(runs)]
    records = []
    for (sdk, mode, scenario), group in table.groupby(["sdk", "mode", "scenario"], sort=True):
        records.append({"sdk": sdk, "mode": mode, "variant": "all", "scenario": scenario} | summarise_cell(group))
    columns = [*ROW_KEYS, "scenario", *CELL_FIELDS]
    return pd.DataFrame.from_records(records, columns=columns)


def scenario_families(runs: pd.DataFrame) -> dict[str, str]:
    """Scenario -> fault family, for the scenarios of the matrix (sweeps left out)."""
    table = runs[~is_sweep(runs)]
    return {s: fault_family(f) for s, f in zip(table["scenario"], table["fault"], strict=True)}


def landing_wide(cells: pd.DataFrame, runs: pd.DataFrame, value: str = "label") -> pd.DataFrame:
    """Rows SDK x mode x variant, columns scenario (controls first); ``*`` marks mixed cells."""
    if cells.empty:
        return pd.DataFrame()
    shown = cells.assign(text=cells[value].astype(str) + cells["mixed"].map({True: "*", False: ""}))
    wide = shown.pivot(index=ROW_KEYS, columns="scenario", values="text" if value == "label" else value)
    order = [s for s in scenario_order(runs[~is_sweep(runs)]) if s in wide.columns]
    return wide[order].fillna("")


def outcome_totals(runs: pd.DataFrame) -> dict[str, int]:
    counts = runs["outcome"].value_counts()
    return {str(o): int(counts[o]) for o in OUTCOME_ORDER if o in counts}
