"""``bench report``: a run turned into the tables and pictures a person decides from.

The public functions notebooks use (the analysis lives here, notebooks stay thin)::

    from bench import report
    run = report.load("results/latest")          # runs, attempts, manifest, path
    report.landing(run["runs"])                 # one row per (sdk, mode, variant, scenario)
    report.cost_summary(run["runs"]); report.token_gap(run["runs"]); report.sweep_table(run["runs"])
    report.tool_summary(run["runs"]); report.tool_cells(run["runs"])    # tool failures (issue 7)
    report.retry_layers(run["runs"]); report.persistent_faults(run["runs"])
    report.build_report(run)                    # everything, claims included, as a Report
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.core.vocabulary import Outcome
from bench.report.build import Report, build
from bench.report.claims import CLAIMS_FILE, ClaimsError, load_claims
from bench.report.cost import cost_cells, cost_summary, cost_wide, paired, token_gap
from bench.report.layers import persistent_faults, retry_layers
from bench.report.matrix import landing, landing_wide, scenario_order
from bench.report.sweep import sweep_table, wilson
from bench.report.tools import tool_cells, tool_summary
from bench.results.labels import label_agents
from bench.results.store import load_run

__all__ = [
    "CLAIMS_FILE",
    "RESULTS_ROOT",
    "ClaimsError",
    "Report",
    "build",
    "build_report",
    "claims_frame",
    "cost_cells",
    "cost_figure",
    "cost_summary",
    "cost_wide",
    "heatmap",
    "landing",
    "landing_wide",
    "load",
    "load_claims",
    "paired",
    "persistent_faults",
    "retry_layers",
    "scenario_order",
    "sweep_figure",
    "sweep_table",
    "token_gap",
    "tool_cells",
    "tool_summary",
    "wilson",
]

RESULTS_ROOT = Path(__file__).resolve().parent.parent.parent / "results"
"""The repository's results folder, wherever a notebook's working directory is."""


def load(reference: str | Path | None = None, results_root: Path | None = None) -> dict[str, Any]:
    """A run by path, suite id or None (latest): ``bench.results.store.load_run``, re-exported here so
    a notebook needs one import. Without ``results_root``: ``./results`` if it has runs, else the
    repository's ``results`` (a notebook runs in ``notebooks/``)."""
    if results_root is None:
        results_root = Path("results") if (Path("results") / "latest").exists() else RESULTS_ROOT
    run = load_run(reference, results_root)
    # A user's own agents group apart from each other and from the built-in adapters.
    return run | {"runs": label_agents(run["runs"])}


def build_report(run: dict[str, Any], claims_path: Path = CLAIMS_FILE) -> Report:
    """The whole report of a loaded run."""
    return build(run["runs"], run["manifest"], claims_path)


def claims_frame(report: Report) -> Any:
    """One row per claim check: claim, verdict, what it says, cells, contradicting cells."""
    import pandas as pd

    rows = [
        {
            "claim": c.id,
            "claim_verdict": c.verdict,
            "check": k.says,
            "verdict": k.verdict,
            "cells": k.cells,
            "contradicting": len(k.counter),
        }
        for c in report.claims
        for k in c.checks
    ]
    return pd.DataFrame(rows)


def heatmap(runs: Any) -> Any:
    """The landing matrix as a figure (rows that never ran are left out)."""
    from bench.report import plots
    from bench.report.matrix import is_sweep

    cells = landing(runs)
    ran = cells.groupby(["sdk", "mode", "variant"])["outcome"].transform(lambda o: (o != Outcome.UNSUPPORTED).any())
    return plots.landing_heatmap(cells[ran], scenario_order(runs[~is_sweep(runs)]))


def cost_figure(runs: Any) -> Any:
    """Mean and worst extra calls and billed tokens per SDK x mode x variant."""
    from bench.report import plots

    return plots.cost_bars(cost_summary(runs))


def sweep_figure(runs: Any) -> Any:
    """Failure rate and tokens per success against the fault rate; None without a sweep."""
    from bench.report import plots

    table = sweep_table(runs)
    return None if table.empty else plots.sweep_curves(table)
