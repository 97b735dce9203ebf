"""The landing matrix ``bench run`` prints, sized for a terminal.

The default view fits 120 columns for the whole default run: scenarios as rows, grouped by fault
family, and one column per SDK x mode, each cell a short token (outcome code and model calls) for
the majority over variants, protocols, streams and reps (the same vote as ``bench report``:
:func:`bench.report.matrix.summarise_cell`). ``wide`` is the old shape (rows SDK x mode, one
column per scenario), kept behind ``bench run --wide`` for wide screens and logs.

Lines are built as (text, style) segments, so the same layout prints plain (a pipe, a test) or
coloured (a terminal) without the two drifting apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from bench.core.vocabulary import CALLS_SHOWN, CODE, STYLE, Outcome
from bench.report.matrix import (
    family_rank,
    fault_family,
    is_sweep,
    outcome_totals,
    scenario_order,
    summarise_cell,
)
from bench.results.labels import label_agents

WIDTH = 120
"""The terminal the default view is laid out for (a test renders the committed baseline at it)."""
MODES = {"tool": "tool", "native": "nat", "prompted": "prm"}
"""Column headings per output mode, in column order."""
LEGEND = [
    "cell = majority over variants, protocols, streams and reps (model calls after the code); * = they disagree",
    "ok = right first time   rN = recovered after N calls   fN = the variant's fallback   xN = raised to the caller",
    "WN / EN = WRONG / EMPTY answer handed to the user   LN = runaway at the call cap   T = timeout   - = unsupported",
    "columns: tool / nat(ive) / pr(o)m(pted) output mode per SDK; `bench run --wide` shows one row per variant",
]
GAP, SEP = "  ", " "
"""Between SDK groups, and between the mode columns of one SDK."""

Segment = tuple[str, str | None]
Line = list[Segment]


@dataclass(frozen=True)
class Column:
    sdk: str
    mode: str
    width: int


def token(cell: dict[str, object]) -> str:
    """``r3`` (recovered in 3 calls), ``x1*`` (raised after 1 call; rows disagree), ``ok``, ``-``."""
    outcome = str(cell["outcome"])
    text = CODE.get(outcome, outcome[:2])
    calls = cell.get("model_calls")
    if outcome in CALLS_SHOWN and calls is not None and not pd.isna(calls):
        text += str(int(calls))  # type: ignore[call-overload]
    return text + ("*" if cell.get("mixed") and outcome != Outcome.UNSUPPORTED else "")


def _cells(runs: pd.DataFrame) -> dict[tuple[str, str, str], dict[str, object]]:
    """(sdk, mode, scenario) -> the summary of every row of that cell."""
    return {
        (sdk, mode, scenario): summarise_cell(group)
        for (sdk, mode, scenario), group in runs.groupby(["sdk", "mode", "scenario"], sort=True)
    }


def _columns(runs: pd.DataFrame, cells: dict[tuple[str, str, str], dict[str, object]]) -> list[Column]:
    """SDK x mode columns with at least one supported row (a mode an SDK lacks takes no space)."""
    supported = runs[runs["outcome"] != Outcome.UNSUPPORTED]
    present = set(zip(supported["sdk"], supported["mode"], strict=True))
    modes = [*MODES, *sorted(set(runs["mode"]) - set(MODES))]
    columns = []
    for sdk in sorted(set(runs["sdk"])):
        for mode in modes:
            if (sdk, mode) in present:
                tokens = [token(c) for (s, m, _), c in cells.items() if (s, m) == (sdk, mode)]
                columns.append(Column(sdk, mode, max(len(MODES.get(mode, mode)), *map(len, tokens))))
    return columns


def _groups(columns: list[Column]) -> list[tuple[str, list[Column], int]]:
    """(sdk, its columns, group width): wide enough for the SDK's name over its columns."""
    groups: dict[str, list[Column]] = {}
    for column in columns:
        groups.setdefault(column.sdk, []).append(column)
    out = []
    for sdk, cols in groups.items():
        inner = sum(c.width for c in cols) + len(SEP) * (len(cols) - 1)
        out.append((sdk, cols, max(len(sdk), inner)))
    return out


def _rows(runs: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """(family, its scenarios in report order), families in :data:`FAMILY_ORDER`."""
    families: dict[str, list[str]] = {}
    fault_of = dict(zip(runs["scenario"], runs["fault"], strict=True))
    for scenario in scenario_order(runs):
        families.setdefault(fault_family(fault_of[scenario]), []).append(scenario)
    return sorted(families.items(), key=lambda item: family_rank(item[0]))


def _fit(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "~"


def compact_lines(runs: pd.DataFrame, width: int = WIDTH) -> list[Line]:
    """The default view as styled lines, at most ``width`` columns when it can be done by
    shortening scenario names (to no fewer than 16 characters)."""
    table = label_agents(runs[~is_sweep(runs)])
    if table.empty:
        return [[("(no cells)", None)]]
    cells = _cells(table)
    rows = _rows(table)
    longest = max(len("scenario"), *(2 + len(s) for _, names in rows for s in names))
    lines: list[Line] = []
    # Whole scenario names when the SDKs beside them still get most of the width, else shortened.
    room = width - longest if width - longest >= FULL_NAMES_ROOM else width - MIN_LABEL
    for block in _blocks(_groups(_columns(table, cells)), room):
        body = sum(len(GAP) + w for _, _, w in block)
        label = max(MIN_LABEL, min(longest, width - body))
        lines += [[("", None)]] if lines else []
        lines += _block(block, label, rows, cells)
    legend: list[Line] = [[(text, "bright_black")] for text in LEGEND]
    return [*lines, [("", None)], *legend]


MIN_LABEL = 16
"""The fewest columns a scenario name is shortened to."""
FULL_NAMES_ROOM = 70
"""The columns the SDKs must keep beside whole scenario names (else the names are shortened)."""


def _blocks(groups: list[tuple[str, list[Column], int]], room: int) -> list[list[tuple[str, list[Column], int]]]:
    """The SDK groups in tables of their own, each as many as fit ``room`` columns beside the
    scenario names (ten SDKs do not fit one 120-column table): never an overflowing line."""
    blocks: list[list[tuple[str, list[Column], int]]] = [[]]
    for group in groups:
        used = sum(len(GAP) + w for _, _, w in blocks[-1])
        if blocks[-1] and used + len(GAP) + group[2] > room:
            blocks.append([])
        blocks[-1].append(group)
    return blocks


def _block(
    groups: list[tuple[str, list[Column], int]], label: int, rows: list[tuple[str, list[str]]],
    cells: dict[tuple[str, str, str], dict[str, object]],
) -> list[Line]:  # fmt: skip
    """One table: the SDKs' names, their modes, then each family's scenarios."""
    header: Line = [("".ljust(label), None)]
    modes: Line = [("scenario".ljust(label), "bold")]
    for sdk, cols, w in groups:
        header += [(GAP, None), (sdk.ljust(w), "bold")]
        modes += [(GAP, None), (SEP.join(MODES.get(c.mode, c.mode).ljust(c.width) for c in cols).ljust(w), "bold")]
    lines = [header, modes]
    for family, names in rows:
        lines.append([(family, "bold underline")])
        lines += [_row(scenario, label, groups, cells) for scenario in names]
    return lines


def _row(
    scenario: str, label: int, groups: list[tuple[str, list[Column], int]], cells: dict[tuple[str, str, str], dict]
) -> Line:
    """One scenario's line: its name, then each SDK group's tokens padded to the group width."""
    line: Line = [(("  " + _fit(scenario, label - 2)).ljust(label), None)]
    for _, cols, width in groups:
        line.append((GAP, None))
        for i, column in enumerate(cols):
            cell = cells.get((column.sdk, column.mode, scenario))
            style = STYLE.get(str(cell["outcome"])) if cell else None
            line += [(SEP if i else "", None), ((token(cell) if cell else "").ljust(column.width), style)]
        used = sum(c.width for c in cols) + len(SEP) * (len(cols) - 1)
        line.append(("".ljust(width - used), None))
    return line


def plain(lines: list[Line]) -> str:
    """The lines as plain text, trailing spaces removed."""
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)


def landing_view(runs: pd.DataFrame, width: int = WIDTH) -> str:
    """The landing matrix ``bench run`` prints (bench/cli/run.py), as plain text."""
    return plain(compact_lines(runs, width))


def wide_cell(group: pd.DataFrame) -> str:
    """One cell of the wide view: the same token over an SDK x mode's variants."""
    return token(summarise_cell(group))


def landing_matrix_wide(runs: pd.DataFrame) -> str:
    """Rows SDK x mode, one column per scenario: hundreds of columns for the default run."""
    table = label_agents(runs[~is_sweep(runs)])
    if table.empty:
        return "(no cells)"
    scenarios = scenario_order(table)
    rows = []
    for (sdk, mode), group in table.groupby(["sdk", "mode"], sort=True):
        by_scenario = {name: wide_cell(g) for name, g in group.groupby("scenario")}
        rows.append([f"{sdk} / {mode}", *(by_scenario.get(s, "") for s in scenarios)])
    header = ["sdk / mode", *scenarios]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        return "  ".join(str(v).ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows), "", *LEGEND[:3]])


def totals_line(runs: pd.DataFrame) -> str:
    """``ok 12, raised 3, ...``: :func:`bench.report.matrix.outcome_totals` (the one count) on one line."""
    return ", ".join(f"{name} {count}" for name, count in outcome_totals(runs).items())
