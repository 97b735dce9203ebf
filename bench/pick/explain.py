"""Why the ranking is what it is: each row's score taken apart by what pays it, where each row's
cells landed, two figures of those, and the conclusion in sentences, all computed from the
:class:`bench.pick.table.Pick` and the :class:`bench.report.build.Report` it was made from (the
notebook shows them; nothing here is written by hand)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING

import pandas as pd

from bench.pick.render import lead_sentence
from bench.pick.table import NOT_SCORED, PENALISED, Pick, PickRow, row_name, tied_with_top
from bench.report.build import Report
from bench.report.matrix import OUTCOME_ORDER

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PARTS = ("wrong", "empty", "runaway", "timeout", "raised", "extra_call", "extra_ktokens")
"""What a score is made of: the outcome weights, then the cost of extra calls and tokens."""


def _key(row: PickRow) -> tuple[str, str, str]:
    return row.sdk, row.mode, row.variant


def score_parts(table: Pick, report: Report) -> pd.DataFrame:
    """One row per ranked row, one column per :data:`PARTS`: its share of the score (the columns
    sum to the score, as :func:`bench.pick.table.cell_penalty` adds them up)."""
    weights = table.weights.model_dump()
    costs = {(c.sdk, c.mode, c.variant, c.scenario): c for c in report.cost}
    sums: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    counts: Counter[tuple[str, str, str]] = Counter()
    for cell in report.matrix:
        key = (cell.sdk, cell.mode, cell.variant)
        if cell.outcome in NOT_SCORED:
            continue
        counts[key] += 1
        measured = sum(n for o, n in cell.outcomes.items() if o not in NOT_SCORED) or 1
        for outcome, n in cell.outcomes.items():
            if outcome in PENALISED:
                sums[key][PENALISED[outcome]] += weights[PENALISED[outcome]] * n / measured  # type: ignore[index]
        if (cost := costs.get((*key, cell.scenario))) is not None:
            sums[key]["extra_call"] += weights["extra_call"] * max(cost.extra_calls, 0.0)
            sums[key]["extra_ktokens"] += weights["extra_ktokens"] * max(cost.extra_tokens, 0.0) / 1000
    frame = pd.DataFrame(
        [[sums[_key(r)][part] / (counts[_key(r)] or 1) for part in PARTS] for r in table.rows],
        index=[row_name(r) for r in table.rows],
        columns=list(PARTS),
    )
    return frame.round(4)


def landed(table: Pick, report: Report) -> pd.DataFrame:
    """One row per ranked row, one column per outcome: the share of its measured cells' rows that
    ended there (what the caller got)."""
    shares: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for cell in report.matrix:
        for outcome, n in cell.outcomes.items():
            if outcome not in NOT_SCORED:
                shares[(cell.sdk, cell.mode, cell.variant)][outcome] += n
    outcomes = [o for o in OUTCOME_ORDER if any(shares[_key(r)][o] for r in table.rows)]
    rows = []
    for row in table.rows:
        total = sum(shares[_key(row)].values()) or 1
        rows.append([shares[_key(row)][o] / total for o in outcomes])
    return pd.DataFrame(rows, index=[row_name(r) for r in table.rows], columns=[str(o) for o in outcomes]).round(4)


def _stacked(frame: pd.DataFrame, colours: list[str], title: str, xlabel: str) -> Figure:
    from bench.report.plots import subplots

    figure, axes = subplots(figsize=(10, max(2.2, 0.32 * len(frame) + 1.3)), layout="constrained")
    left = pd.Series(0.0, index=frame.index)
    y = list(range(len(frame)))
    for column, colour in zip(frame.columns, colours, strict=True):
        if frame[column].any():
            axes.barh(y, frame[column], left=left, color=colour, label=column, height=0.7)
            left = left + frame[column]
    axes.set_yticks(y, [f"{i}. {name}" for i, name in enumerate(frame.index, 1)], fontsize=8)
    axes.set_ylim(len(frame) - 0.5, -0.5)
    axes.set_xlim(0, max(float(left.max()), 1e-9) * 1.05)
    axes.set_xlabel(xlabel)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    axes.grid(axis="x", alpha=0.3)
    return figure


PART_COLOURS = ["#e53935", "#ad1457", "#5d4037", "#757575", "#ffb74d", "#42a5f5", "#90caf9"]


def score_figure(parts: pd.DataFrame) -> Figure:
    """The ranking's score, taken apart: what each row pays for, rank order top to bottom."""
    return _stacked(parts, PART_COLOURS, "What each row's score is made of (lower is better)", "mean penalty per cell")


def landed_figure(shares: pd.DataFrame) -> Figure:
    """Where each ranked row's cells landed: the share of its rows by outcome."""
    from bench.report.plots import COLOURS

    colours = [COLOURS[o] for o in shares.columns]
    return _stacked(shares, colours, "Where the failures land, per ranked row", "share of the row's measured cells")


def conclusion(table: Pick, parts: pd.DataFrame, gaps: list[str]) -> str:
    """The answer in sentences (markdown), from the table and its score parts; it opens with the
    sentence ``bench pick`` and the reports open with (:func:`bench.pick.lead_sentence`)."""
    if not table.rows:
        return "No row was measured: every cell is unsupported or a harness error; there is nothing to pick from."
    best, lines = table.rows[0], []
    tied = tied_with_top(table)
    lines.append(f"**{lead_sentence(table)}**")
    lines.append(f"Over {best.cells} measured cells. {_what_it_costs(best, parts)}")
    if len(table.rows) > 1:
        runner_up = next(iter(table.rows[1 + len(tied) :]), None)
        if runner_up is not None:
            lines.append(f"Next: {row_name(runner_up)} at {runner_up.score:.2f}. {_what_it_costs(runner_up, parts)}")
        worst = table.rows[-1]
        if worst is not best and worst is not runner_up:
            lines.append(f"Last: {row_name(worst)} at {worst.score:.2f}. {_what_it_costs(worst, parts)}")
    if gaps:
        lines.append("**The run does not cover the whole question**: " + "; ".join(gaps) + ".")
    else:
        lines.append("The run covers everything the question asks.")
    lines.append("Not in the score: " + " ".join(table.cannot_see))
    return "\n\n".join(lines)


def _what_it_costs(row: PickRow, parts: pd.DataFrame) -> str:
    paid = parts.loc[row_name(row)]
    largest = paid[paid > 0].sort_values(ascending=False)
    if largest.empty:
        return "It pays nothing: every cell was right first time."
    said = ", ".join(f"{name} {value:.2f}" for name, value in largest.items())
    extra = []
    if row.raises:
        extra.append(f"the caller must catch {', '.join(row.raises)}")
    if row.handed:
        extra.append(
            f"it hands a WRONG or EMPTY answer on in {len(row.handed)} scenario(s) ({', '.join(row.handed[:4])})"
        )
    return f"Its score is {said}" + (f"; {'; '.join(extra)}." if extra else ".")
