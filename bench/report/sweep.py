"""Fault-rate sweeps: stochastic scenarios (fault label ``mix:malformed=0.15``) run over many
reps, summarised per SDK x mode x variant and fault rate as the user-visible failure rate and the
billed tokens per successful answer, with Wilson score intervals on the rates.

``n`` is the number of reps (``bench run --reps``): each rep draws its attempts from its own
``unit_seed`` (bench/run/plan.py ``CellPlan.unit_seed``), the same for every SDK, protocol and
variant, so they all see the same faults at the same attempts. That pairing makes SDKs comparable
rep by rep, but it also means the protocols of one row are not independent samples: the rates are
means over all rows, the intervals use the number of distinct reps as the sample size.
"""

from __future__ import annotations

import math

import pandas as pd

from bench.core.vocabulary import SUCCESS, USER_FAILURE, Outcome
from bench.report.matrix import is_sweep

Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion: sound at 0 and at small n, where the
    normal approximation gives empty or negative intervals."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def parse_mix(fault: str) -> tuple[str, float]:
    """``mix:http_error=0.05,malformed=0.1`` -> (``http_error+malformed``, 0.15)."""
    pairs = [part.split("=", 1) for part in fault.removeprefix("mix:").split(",") if "=" in part]
    return "+".join(k for k, _ in pairs), round(sum(float(v) for _, v in pairs), 6)


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (faults, sdk, mode, variant, rate): counts, rates with Wilson intervals and
    billed tokens per successful answer (every attempt of every rep, failed ones included,
    divided by the answers that reached the caller correct)."""
    table = runs[is_sweep(runs) & (runs["outcome"] != Outcome.UNSUPPORTED)].copy()
    columns = [
        "faults",
        "sdk",
        "mode",
        "variant",
        "rate",
        "n",
        "rows",
        "success",
        "raised",
        "user_visible",
        "failure_rate",
        "failure_lo",
        "failure_hi",
        "success_rate",
        "success_lo",
        "success_hi",
        "mean_calls",
        "tokens_per_success",
    ]
    if table.empty:
        return pd.DataFrame(columns=columns)
    parsed = table["fault"].map(parse_mix)
    table["faults"], table["rate"] = parsed.map(lambda p: p[0]), parsed.map(lambda p: p[1])
    table["billed"] = table["input_tokens_billed"].fillna(0) + table["output_tokens_billed"].fillna(0)
    rows = []
    for (faults, sdk, mode, variant, rate), group in table.groupby(
        ["faults", "sdk", "mode", "variant", "rate"], sort=True
    ):
        rows_n, n = len(group), int(group[["rep", "seed"]].drop_duplicates().shape[0])
        success = int(group["outcome"].isin(SUCCESS).sum())
        visible = int(group["outcome"].isin(USER_FAILURE).sum())
        f_lo, f_hi = wilson(visible / rows_n * n, n)
        s_lo, s_hi = wilson(success / rows_n * n, n)
        rows.append(
            {
                "faults": faults,
                "sdk": sdk,
                "mode": mode,
                "variant": variant,
                "rate": rate,
                "n": n,
                "rows": rows_n,
                "success": success,
                "raised": int((group["outcome"] == Outcome.RAISED).sum()),
                "user_visible": visible,
                "failure_rate": visible / rows_n,
                "failure_lo": f_lo,
                "failure_hi": f_hi,
                "success_rate": success / rows_n,
                "success_lo": s_lo,
                "success_hi": s_hi,
                "mean_calls": float(group["model_calls"].mean()),
                "tokens_per_success": float(group["billed"].sum()) / success if success else None,
            }
        )
    return pd.DataFrame(rows, columns=columns)
