"""How a row is named where results are grouped: a user's own agent by its name with its SDK
(``support (pydantic-ai)``), a built-in adapter by its SDK. One place, read by the terminal
matrix, the report, the notebook and the gate."""

from __future__ import annotations

import pandas as pd


def agent_column(runs: pd.DataFrame) -> pd.Series:
    """The ``agent`` column with "" for built-in adapters (and for runs older than schema 3)."""
    if "agent" not in runs.columns:
        return pd.Series("", index=runs.index)
    return runs["agent"].fillna("").astype(str)


def row_label(agent: str, sdk: str) -> str:
    """``support (pydantic-ai)`` for a user's agent, the SDK alone for a built-in adapter."""
    return f"{agent} ({sdk})" if agent else sdk


def label_agents(runs: pd.DataFrame) -> pd.DataFrame:
    """``sdk`` replaced by its column label: a user's agent is a group of its own in every table
    that groups by ``sdk`` (the report, the notebook). Labelling twice changes nothing."""
    labels = [
        s if not a or s.startswith(f"{a} (") else row_label(a, s)
        for a, s in zip(agent_column(runs), runs["sdk"], strict=True)
    ]
    return runs.assign(sdk=labels)
