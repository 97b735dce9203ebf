"""How a row is named where results are grouped: a user's own agent by its name with its SDK
(``support (pydantic-ai)``), a built-in adapter by its SDK. One place, read by the terminal
matrix, the report, the notebook and the gate; and the one rule for an adapter's name (the own
agent's, else the SDK's), read by cells, run plans, the gate and the time estimate.

pandas is imported where a frame is read, not here: :mod:`bench.sdk.adapter` imports this module,
and a release worker's environment has the SDK and pydantic, not pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def adapter_name(agent: str | None, sdk: str) -> str:
    """The adapter a cell or row belongs to, as ``sdk_versions`` and plans are keyed: the user's
    agent by its name, a built-in adapter by its SDK."""
    return str(agent or sdk)


def adapter_names(runs: pd.DataFrame) -> pd.Series:
    """:func:`adapter_name` of every row of a runs table (older runs have no ``agent`` column)."""
    agent = agent_column(runs)
    return agent.where(agent != "", runs["sdk"].astype(str))


def agent_column(runs: pd.DataFrame) -> pd.Series:
    """The ``agent`` column with "" for built-in adapters (and for runs older than schema 3)."""
    import pandas as pd

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
