"""The cost of failure: extra model calls and extra billed tokens each fault costs against the
same cell's ``valid`` control, and the gap between what the provider billed and what the SDK's
own usage object told its caller.

A fault row is paired with the control row of its task that has the same sdk, mode, variant,
protocol, stream and rep; ticket_triage has no control in the library, so its rows are left out
(and counted, so the report can say how many).
"""

from __future__ import annotations

import pandas as pd

from bench.core.vocabulary import SUCCESS, Outcome
from bench.report.matrix import CONTROLS, ROW_KEYS, family_rank, fault_family, is_sweep, scenario_order

PAIR_KEYS = ["sdk", "mode", "variant", "protocol", "stream", "rep", "seed"]


def _billed(frame: pd.DataFrame) -> pd.Series:
    return frame["input_tokens_billed"].fillna(0) + frame["output_tokens_billed"].fillna(0)


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Every supported, non-control, non-sweep row with its control's calls and tokens and the
    differences ``extra_calls`` and ``extra_tokens`` (NaN where the control is missing)."""
    table = runs[(runs["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(runs)].copy()
    table["billed_tokens"] = _billed(table)
    table["control"] = table["task"].map(CONTROLS)
    controls = table[table["scenario"] == table["control"]][[*PAIR_KEYS, "scenario", "model_calls", "billed_tokens"]]
    controls = controls.rename(
        columns={"scenario": "control", "model_calls": "control_calls", "billed_tokens": "control_tokens"}
    )
    faults = table[(table["scenario"] != table["control"]) & table["control"].notna()]
    merged = faults.merge(controls, on=[*PAIR_KEYS, "control"], how="left")
    merged["extra_calls"] = merged["model_calls"] - merged["control_calls"]
    merged["extra_tokens"] = merged["billed_tokens"] - merged["control_tokens"]
    return merged


def uncontrolled_scenarios(runs: pd.DataFrame) -> list[str]:
    """Scenarios whose task has no control in the library (left out of the cost tables)."""
    table = runs[~is_sweep(runs)]
    return sorted(set(table.loc[~table["task"].isin(list(CONTROLS)), "scenario"]))


def cost_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (sdk, mode, variant, scenario): median extra calls and extra billed tokens."""
    pairs = paired(runs).dropna(subset=["extra_calls", "extra_tokens"])
    if pairs.empty:
        return pd.DataFrame(columns=[*ROW_KEYS, "scenario", "extra_calls", "extra_tokens", "n"])
    grouped = pairs.groupby([*ROW_KEYS, "scenario"], sort=True)
    out = grouped.agg(
        extra_calls=("extra_calls", "median"), extra_tokens=("extra_tokens", "median"), n=("extra_calls", "size")
    )
    return out.reset_index()


def cost_wide(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Rows SDK x mode x variant, columns scenario: ``+calls / +tokens``."""
    if cells.empty:
        return pd.DataFrame()
    text = cells.assign(
        text=[f"{c:+g} / {t:+,.0f}" for c, t in zip(cells["extra_calls"], cells["extra_tokens"], strict=True)]
    )
    wide = text.pivot(index=ROW_KEYS, columns="scenario", values="text")
    order = [s for s in scenario_order(runs) if s in wide.columns]
    return wide[order].fillna("")


def cost_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SDK x mode x variant over all its fault cells: the control's cost and what faults
    add on average and at worst (calls, billed tokens)."""
    pairs = paired(runs).dropna(subset=["extra_calls", "extra_tokens"])
    columns = [
        *ROW_KEYS,
        "faults",
        "control_calls",
        "control_tokens",
        "mean_extra_calls",
        "max_extra_calls",
        "mean_extra_tokens",
        "max_extra_tokens",
    ]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    out = pairs.groupby(ROW_KEYS, sort=True).agg(
        faults=("scenario", "nunique"),
        control_calls=("control_calls", "median"),
        control_tokens=("control_tokens", "median"),
        mean_extra_calls=("extra_calls", "mean"),
        max_extra_calls=("extra_calls", "max"),
        mean_extra_tokens=("extra_tokens", "mean"),
        max_extra_tokens=("extra_tokens", "max"),
    )
    return out.reset_index()[columns]


def token_gap(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SDK and result (success: ok/recovered; failure: everything else that ran): tokens the
    provider billed against tokens the SDK's usage object reported to its caller (a row whose
    SDK reported nothing counts as 0 reported, and is counted in ``no_usage``)."""
    table = runs[(runs["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(runs)].copy()
    columns = ["sdk", "result", "cells", "no_usage", "billed", "reported", "unreported", "unreported_pct"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    table["result"] = table["outcome"].map(lambda o: "success" if o in SUCCESS else "failure")
    table["billed"] = _billed(table)
    has = table["input_tokens_reported"].notna() | table["output_tokens_reported"].notna()
    table["reported"] = table["input_tokens_reported"].fillna(0) + table["output_tokens_reported"].fillna(0)
    rows = []
    for (sdk, result), group in table.groupby(["sdk", "result"], sort=True):
        billed, reported = float(group["billed"].sum()), float(group["reported"].sum())
        rows.append(
            {
                "sdk": sdk,
                "result": result,
                "cells": len(group),
                "no_usage": int((~has.loc[group.index]).sum()),
                "billed": billed,
                "reported": reported,
                "unreported": billed - reported,
                "unreported_pct": 100 * (billed - reported) / billed if billed else None,
            }
        )
    return pd.DataFrame(rows, columns=columns)


def token_gap_by_family(runs: pd.DataFrame) -> pd.DataFrame:
    """Per fault family and SDK: mean billed and mean SDK-reported tokens per cell that ran
    (means, not sums: families hold different numbers of scenarios)."""
    table = runs[(runs["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(runs)].copy()
    columns = ["family", "sdk", "cells", "billed_mean", "reported_mean"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    table["family"] = table["fault"].map(fault_family)
    table["billed"] = _billed(table)
    table["reported"] = table["input_tokens_reported"].fillna(0) + table["output_tokens_reported"].fillna(0)
    out = table.groupby(["family", "sdk"]).agg(
        cells=("billed", "size"), billed_mean=("billed", "mean"), reported_mean=("reported", "mean")
    )
    out = out.reset_index()
    return out.sort_values(["family", "sdk"], key=lambda c: c.map(family_rank) if c.name == "family" else c)[columns]


def negative_means(summary: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """Why a mean +tokens is below zero, one line per such row: the faults that ended the run
    cheaper than the control (a rejected request is billed nothing; a raise on the first bad
    answer bills a reply shorter than a valid one; a tool error raised before the tool's second
    call saves that call), which outweigh the faults that cost more."""
    lines = []
    for row in summary[summary["mean_extra_tokens"] < 0].itertuples(index=False):
        own = cells[(cells["sdk"] == row.sdk) & (cells["mode"] == row.mode) & (cells["variant"] == row.variant)]
        cheaper = own[own["extra_tokens"] < 0].sort_values("extra_tokens")
        shown = ", ".join(f"{c.scenario} {c.extra_tokens:+,.0f}" for c in cheaper.head(4).itertuples(index=False))
        more = f" and {len(cheaper) - 4} more" if len(cheaper) > 4 else ""
        lines.append(
            f"{row.sdk}/{row.mode}/{row.variant} ({row.mean_extra_tokens:+,.0f}): {len(cheaper)} of {row.faults} "
            f"faults ended the run cheaper than the control ({shown}{more}); "
            f"{int((own['extra_calls'] > 0).sum())} cost extra calls."
        )
    return lines
