"""The compact landing matrix ``bench run`` prints: rows SDK x mode, columns fault, each cell
the outcome and the model calls it took (the majority across variants, protocols and reps,
with ``*`` when they disagree)."""

from __future__ import annotations

from collections import Counter

import pandas as pd

SHORT = {
    "ok": "ok",
    "recovered": "recov",
    "raised": "raise",
    "fallback": "fallbk",
    "wrong": "WRONG",
    "empty": "EMPTY",
    "runaway": "RUNAWAY",
    "timeout": "timeout",
    "unsupported": "-",
    "harness_error": "HARNESS",
}
LEGEND = (
    "cell = majority outcome over supported variants/protocols (median model calls); * = they disagree; "
    "WRONG/EMPTY = handed to the user; - = unsupported"
)


def cell_text(group: pd.DataFrame) -> str:
    supported = group[group["outcome"] != "unsupported"]
    if supported.empty:
        return "-"
    group = supported
    counts = Counter(group["outcome"])
    outcome, _ = counts.most_common(1)[0]
    text = SHORT.get(outcome, outcome)
    calls = group.loc[group["outcome"] == outcome, "model_calls"].dropna()
    if len(calls):
        text += f"({int(calls.median())})"
    return text + ("*" if len(counts) > 1 else "")


def landing_matrix(runs: pd.DataFrame) -> str:
    if runs.empty:
        return "(no cells)"
    faults = list(dict.fromkeys(runs.sort_values("scenario")["scenario"]))
    rows = []
    runs = runs.assign(agent=agent_column(runs))
    for (agent, sdk, mode), group in runs.groupby(["agent", "sdk", "mode"], sort=True):
        by_scenario = {name: cell_text(g) for name, g in group.groupby("scenario")}
        rows.append([f"{row_label(agent, sdk)} / {mode}", *(by_scenario.get(f, "") for f in faults)])
    header = ["sdk / mode", *faults]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        return "  ".join(str(v).ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows), "", LEGEND])


def agent_column(runs: pd.DataFrame) -> pd.Series:
    """The ``agent`` column with "" for built-in adapters (and for runs older than schema 3)."""
    if "agent" not in runs.columns:
        return pd.Series("", index=runs.index)
    return runs["agent"].fillna("").astype(str)


def row_label(agent: str, sdk: str) -> str:
    """``support (pydantic-ai)`` for a user's agent, the SDK alone for a built-in adapter."""
    return f"{agent} ({sdk})" if agent else sdk


def outcome_totals(runs: pd.DataFrame) -> str:
    counts = runs["outcome"].value_counts()
    return ", ".join(f"{name} {counts[name]}" for name in SHORT if name in counts)
