"""Static figures (matplotlib's object API: no pyplot state, no display, no browser). Each
function takes the report's frames and returns a Figure; :func:`png_base64` embeds one in the
HTML page, and a notebook with ``%matplotlib inline`` shows it as it is."""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from bench.report.matrix import OUTCOME_ORDER, ROW_KEYS

COLOURS = {
    "ok": "#2e7d32",
    "recovered": "#9ccc65",
    "fallback": "#4fc3f7",
    "raised": "#ffb74d",
    "wrong": "#e53935",
    "empty": "#ad1457",
    "runaway": "#5d4037",
    "timeout": "#757575",
    "unsupported": "#eeeeee",
    "harness_error": "#d500f9",
}
"""One colour per outcome, shared by the HTML table and every figure."""


def png_base64(figure: Figure, dpi: int = 110) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def subplots(nrows: int = 1, ncols: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    """``pyplot.subplots`` without pyplot: the figure is not registered with any backend, so
    nothing leaks between reports and no GUI toolkit is ever touched."""
    figure = Figure(figsize=kwargs.pop("figsize", None), layout=kwargs.pop("layout", None))
    return figure, figure.subplots(nrows, ncols, **kwargs)


def landing_heatmap(cells: pd.DataFrame, scenarios: list[str]) -> Figure:
    """Rows SDK / mode / variant, columns scenario, colour = outcome, number = model calls."""
    rows = cells[ROW_KEYS].drop_duplicates().sort_values(ROW_KEYS).apply(tuple, axis=1).tolist()
    index = {row: i for i, row in enumerate(rows)}
    cols = {s: j for j, s in enumerate(scenarios)}
    grid = [[OUTCOME_ORDER.index("unsupported")] * len(scenarios) for _ in rows]
    figure, axes = subplots(figsize=(max(6, 0.42 * len(scenarios) + 3), max(2.5, 0.3 * len(rows) + 2)))
    for cell in cells.itertuples(index=False):
        i, j = index[(cell.sdk, cell.mode, cell.variant)], cols.get(cell.scenario)
        if j is None:
            continue
        grid[i][j] = OUTCOME_ORDER.index(cell.outcome) if cell.outcome in OUTCOME_ORDER else len(OUTCOME_ORDER) - 1
        if cell.model_calls is not None and not pd.isna(cell.model_calls) and cell.outcome not in ("ok", "unsupported"):
            dark = cell.outcome in ("ok", "wrong", "empty", "runaway", "timeout")
            axes.text(
                j,
                i,
                f"{int(cell.model_calls)}{'*' if cell.mixed else ''}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "black",
            )
    cmap = ListedColormap([COLOURS[o] for o in OUTCOME_ORDER])
    axes.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(OUTCOME_ORDER) - 0.5, aspect="auto")
    axes.set_xticks(range(len(scenarios)), scenarios, rotation=60, ha="right", fontsize=8)
    axes.set_yticks(range(len(rows)), [" / ".join(r) for r in rows], fontsize=8)
    axes.set_xticks([x - 0.5 for x in range(1, len(scenarios))], minor=True)
    axes.set_yticks([y - 0.5 for y in range(1, len(rows))], minor=True)
    axes.grid(which="minor", color="white", linewidth=1)
    axes.tick_params(which="minor", length=0)
    present = sorted({c for c in cells["outcome"]}, key=OUTCOME_ORDER.index)
    axes.legend(
        handles=[Patch(color=COLOURS[o], label=o) for o in present],
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        fontsize=8,
        frameon=False,
    )
    axes.set_title("Where the failure landed (number = model calls, * = protocols disagree)", fontsize=10)
    return figure


def cost_bars(summary: pd.DataFrame) -> Figure:
    """Mean and worst extra model calls and extra billed tokens per SDK x mode x variant."""
    names = [" / ".join(r) for r in summary[ROW_KEYS].itertuples(index=False)]
    figure, (calls, tokens) = subplots(
        1, 2, figsize=(11, max(2.5, 0.28 * len(names) + 1.2)), sharey=True, layout="constrained"
    )
    y = range(len(names))
    calls.barh(y, summary["max_extra_calls"], color="#ffccbc", label="worst fault")
    calls.barh(y, summary["mean_extra_calls"], color="#e64a19", height=0.5, label="mean over faults")
    tokens.barh(y, summary["max_extra_tokens"], color="#c5cae9", label="worst fault")
    tokens.barh(y, summary["mean_extra_tokens"], color="#303f9f", height=0.5, label="mean over faults")
    calls.set_yticks(list(y), names, fontsize=8)
    calls.set_ylim(len(names) - 0.5, -0.5)
    calls.set_xlabel("extra model calls vs the valid control")
    tokens.set_xlabel("extra billed tokens vs the valid control")
    for axes in (calls, tokens):
        axes.legend(fontsize=8, loc="lower right")
        axes.grid(axis="x", alpha=0.3)
    figure.suptitle("The cost of failure", fontsize=10)
    return figure


def token_gap_bars(gap: pd.DataFrame) -> Figure:
    """Billed against SDK-reported tokens per SDK, for successful and failed cells."""
    labels = [f"{r.sdk} ({r.result})" for r in gap.itertuples(index=False)]
    figure, axes = subplots(figsize=(9, 0.32 * len(labels) + 1.2), layout="constrained")
    y = list(range(len(labels)))
    axes.barh([i - 0.2 for i in y], gap["billed"], height=0.4, color="#455a64", label="billed (provider ledger)")
    axes.barh([i + 0.2 for i in y], gap["reported"], height=0.4, color="#90a4ae", label="reported (SDK usage)")
    axes.set_yticks(y, labels, fontsize=8)
    axes.set_ylim(len(labels) - 0.5, -0.5)
    axes.set_xlabel("tokens, summed over cells")
    axes.legend(fontsize=8, loc="lower right")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title("Billed vs SDK-reported tokens", fontsize=10)
    return figure


def sweep_curves(sweep: pd.DataFrame) -> Figure:
    """Per fault family: user-visible failure rate (Wilson 95% interval) and billed tokens per
    successful answer, against the fault rate, one line per SDK x mode x variant. Lines are
    dodged sideways a little: SDKs that see the same draws often land on the same points."""
    families = sorted(set(sweep["faults"]))
    figure, grid = subplots(2, len(families), figsize=(6.5 * len(families), 7.5), squeeze=False, layout="constrained")
    keys = sorted({tuple(k) for k in sweep[ROW_KEYS].itertuples(index=False)})
    palette = matplotlib.colormaps["tab20"].colors
    colour = {key: palette[i % len(palette)] for i, key in enumerate(keys)}
    span = max(float(sweep["rate"].max()) * 100, 1.0)
    for col, family in enumerate(families):
        part = sweep[sweep["faults"] == family]
        failure, tokens = grid[0][col], grid[1][col]
        for index, key in enumerate(keys):
            line = part[(part[ROW_KEYS] == pd.Series(key, index=ROW_KEYS)).all(axis=1)].sort_values("rate")
            if line.empty:
                continue
            dodge = (index - (len(keys) - 1) / 2) * span * 0.006
            x, name = line["rate"] * 100 + dodge, " / ".join(key)
            errors = [
                (line["failure_rate"] - line["failure_lo"]) * 100,
                (line["failure_hi"] - line["failure_rate"]) * 100,
            ]
            failure.errorbar(
                x,
                line["failure_rate"] * 100,
                yerr=errors,
                marker="o",
                markersize=3,
                capsize=2,
                linewidth=1,
                color=colour[key],
                label=name,
            )
            tokens.plot(
                x, line["tokens_per_success"], marker="o", markersize=3, linewidth=1, color=colour[key], label=name
            )
        failure.set_title(f"{family}: wrong or empty answers handed to the user", fontsize=9)
        failure.set_ylabel("user-visible failure rate, % (95% Wilson)")
        tokens.set_title(f"{family}: billed tokens per successful answer", fontsize=9)
        tokens.set_ylabel("tokens / success")
        for axes in (failure, tokens):
            axes.set_xlabel("fault rate per attempt, %")
            axes.grid(alpha=0.3)
    handles, labels = grid[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right center", fontsize=7, frameon=False)
    return figure
