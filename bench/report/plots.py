"""Static figures (matplotlib's object API: no pyplot state, no display, no browser). Each
function takes the report's frames and returns a Figure; :func:`png_base64` embeds one in the
HTML page, and a notebook with ``%matplotlib inline`` shows it as it is."""

from __future__ import annotations

import base64
import io
from typing import Any

import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from bench.core.vocabulary import CALLS_SHOWN, WHITE_TEXT, Outcome
from bench.report.matrix import OUTCOME_ORDER, ROW_KEYS

COLOURS: dict[str, str] = {
    Outcome.OK: "#2e7d32",
    Outcome.RECOVERED: "#9ccc65",
    Outcome.FALLBACK: "#4fc3f7",
    Outcome.RAISED: "#ffb74d",
    Outcome.WRONG: "#e53935",
    Outcome.EMPTY: "#ad1457",
    Outcome.RUNAWAY: "#5d4037",
    Outcome.TIMEOUT: "#757575",
    Outcome.UNSUPPORTED: "#eeeeee",
    Outcome.HARNESS_ERROR: "#d500f9",
}
"""One colour per outcome, shared by the HTML table and every figure."""

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#D55E00", "#CC79A7", "#0072B2", "#F0E442", "#000000"]
"""Okabe and Ito's colour-blind-safe palette (2008)."""
SDK_COLOURS = {
    "pydantic-ai": "#E69F00",
    "openai-agents": "#56B4E9",
    "langchain": "#009E73",
    "claude-agent-sdk": "#D55E00",
    "agentmaker": "#CC79A7",
}
"""One colour per SDK in every figure; an SDK not listed (a plugin) takes the palette's next."""
MODE_STYLES = {"tool": "-", "native": "--", "prompted": ":"}


def sdk_colour(sdk: str) -> str:
    if sdk in SDK_COLOURS:
        return SDK_COLOURS[sdk]
    spare = OKABE_ITO[len(SDK_COLOURS) :]
    return spare[sum(map(ord, sdk)) % len(spare)]


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
    grid = [[OUTCOME_ORDER.index(Outcome.UNSUPPORTED)] * len(scenarios) for _ in rows]
    figure, axes = subplots(figsize=(max(6, 0.42 * len(scenarios) + 3), max(2.5, 0.3 * len(rows) + 2)))
    for cell in cells.itertuples(index=False):
        i, j = index[(cell.sdk, cell.mode, cell.variant)], cols.get(cell.scenario)
        if j is None:
            continue
        grid[i][j] = OUTCOME_ORDER.index(cell.outcome) if cell.outcome in OUTCOME_ORDER else len(OUTCOME_ORDER) - 1
        counted = cell.outcome in CALLS_SHOWN
        if counted and cell.model_calls is not None and not pd.isna(cell.model_calls):
            dark = cell.outcome in WHITE_TEXT
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
    colours = [sdk_colour(sdk) for sdk in summary["sdk"]]
    for axes, column in ((calls, "extra_calls"), (tokens, "extra_tokens")):
        axes.barh(y, summary[f"max_{column}"], color=colours, alpha=0.35, label="worst fault (light)")
        axes.barh(y, summary[f"mean_{column}"], color=colours, height=0.5, label="mean over faults (solid)")
        axes.axvline(0, color="#424242", linewidth=0.8)
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
    """Per fault family, per SDK: mean billed tokens per cell (light) against the mean the SDK
    reported to its caller (solid). Means per cell, so families of unlike size compare."""
    families = list(dict.fromkeys(gap["family"]))
    sdks = sorted(set(gap["sdk"]))
    figure, axes = subplots(figsize=(max(8, 1.1 * len(families) * max(1, len(sdks)) / 3), 4.2), layout="constrained")
    width = 0.8 / max(1, len(sdks))
    for j, sdk in enumerate(sdks):
        part = gap[gap["sdk"] == sdk].set_index("family")
        x = [i - 0.4 + width * (j + 0.5) for i in range(len(families))]
        billed = [part["billed_mean"].get(f, 0) for f in families]
        reported = [part["reported_mean"].get(f, 0) for f in families]
        axes.bar(x, billed, width=width, color=sdk_colour(sdk), alpha=0.35)
        axes.bar(x, reported, width=width * 0.6, color=sdk_colour(sdk), label=sdk)
    axes.set_xticks(range(len(families)), families, rotation=30, ha="right", fontsize=8)
    axes.set_ylabel("tokens per cell (mean)")
    axes.legend(fontsize=8, loc="upper left", title="solid = reported by the SDK, light = billed", title_fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    axes.set_title("Billed vs SDK-reported tokens per fault family", fontsize=10)
    return figure


def sweep_curves(sweep: pd.DataFrame) -> Figure:
    """Per fault family, against the fault rate: the user-visible failure rate (Wilson 95%
    interval) and billed tokens per successful answer, one line per SDK x mode x variant (colour
    = SDK, line style = mode); and what the failures were at each rate, per SDK. Lines are dodged
    sideways a little: SDKs that see the same draws often land on the same points."""
    families = sorted(set(sweep["faults"]))
    figure, grid = subplots(3, len(families), figsize=(6.5 * len(families), 11), squeeze=False, layout="constrained")
    keys = sorted({tuple(k) for k in sweep[ROW_KEYS].itertuples(index=False)})
    span = max(float(sweep["rate"].max()) * 100, 1.0)
    markers = "osD^v<>ph"
    variants = sorted({k[2] for k in keys})
    for col, family in enumerate(families):
        part = sweep[sweep["faults"] == family]
        failure, tokens = grid[0][col], grid[1][col]
        for index, key in enumerate(keys):
            line = part[(part[ROW_KEYS] == pd.Series(key, index=ROW_KEYS)).all(axis=1)].sort_values("rate")
            if line.empty:
                continue
            dodge = (index - (len(keys) - 1) / 2) * span * 0.006
            x, name = line["rate"] * 100 + dodge, " / ".join(key)
            style = {
                "color": sdk_colour(key[0]),
                "linestyle": MODE_STYLES.get(key[1], "-."),
                "marker": markers[variants.index(key[2]) % len(markers)],
                "markersize": 3,
                "linewidth": 1,
                "label": name,
            }
            errors = [
                (line["failure_rate"] - line["failure_lo"]) * 100,
                (line["failure_hi"] - line["failure_rate"]) * 100,
            ]
            failure.errorbar(x, line["failure_rate"] * 100, yerr=errors, capsize=2, **style)
            tokens.plot(x, line["tokens_per_success"], **style)
        failure.set_title(f"{family}: wrong or empty answers handed to the user", fontsize=9)
        failure.set_ylabel("user-visible failure rate, % (95% Wilson)")
        tokens.set_title(f"{family}: billed tokens per successful answer", fontsize=9)
        tokens.set_ylabel("tokens / success")
        for axes in (failure, tokens):
            axes.set_xlabel("fault rate per attempt, %")
            axes.grid(alpha=0.3)
        _what_failed(grid[2][col], part, family)
    handles, labels = grid[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right center", fontsize=7, frameon=False)
    return figure


FAILURE_KINDS = [("raised", "raised"), ("user_visible", "wrong"), ("other", "runaway")]
"""(sweep column, outcome whose colour draws it): raised, handed to the user, runaway or timeout."""


def _what_failed(axes: Any, part: pd.DataFrame, family: str) -> None:
    """Stacked bars per fault rate and SDK (over its modes and variants): the share of rows that
    raised, reached the user wrong or empty, or ran away / timed out; the bar's edge is the SDK's
    colour."""
    totals = part.assign(other=part["rows"] - part["success"] - part["raised"] - part["user_visible"])
    totals = totals.groupby(["rate", "sdk"], sort=True)[["rows", "raised", "user_visible", "other"]].sum()
    labels, x = [], 0.0
    for rate in sorted({r for r, _ in totals.index}):
        for sdk in sorted({s for r, s in totals.index if r == rate}):
            row = totals.loc[(rate, sdk)]
            bottom = 0.0
            for column, outcome in FAILURE_KINDS:
                share = 100 * float(row[column]) / max(float(row["rows"]), 1)
                axes.bar(x, share, bottom=bottom, color=COLOURS[outcome], edgecolor=sdk_colour(sdk), linewidth=1.5)
                bottom += share
            labels.append((x, f"{rate * 100:g}% {sdk}"))
            x += 1
        x += 0.8
    axes.set_xticks([p for p, _ in labels], [t for _, t in labels], rotation=90, fontsize=6)
    axes.set_ylabel("rows, %")
    axes.set_title(f"{family}: what failed at each fault rate (edge = SDK)", fontsize=9)
    axes.legend(
        handles=[Patch(color=COLOURS[o], label=n) for n, o in (("raised", "raised"), ("wrong/empty", "wrong"),
                                                               ("runaway/timeout", "runaway"))],
        fontsize=7, loc="upper left", frameon=False,
    )  # fmt: skip
    axes.grid(axis="y", alpha=0.3)
