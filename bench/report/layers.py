"""The retry layers apart, as data: per SDK (and mode, variant, protocol where they differ) and
transport scenario (``http_*``), which layer retried, how often and after how long, and where the
run ended; for persistent faults, how many requests the run took and what ended it.

The layers, from the runs table: the official client (``client_retries``: requests it marked as
a retry itself), a framework re-send of the same request (``transport_retries -
client_retries``), and a model-level output retry (``output_retries``: a new request). Runs
written before schema 2 have no ``client_retries``: the split is unknown there ("transport").
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Any

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.report.matrix import is_sweep, summarise_cell
from bench.report.tools import with_derived

TRANSPORT_SCENARIOS = "http_*"
PERSISTENT = ("http_500_persistent", "http_429_persistent", "http_529_persistent")
"""Persistent transport faults whose end (by itself, time limit, call cap) the report shows."""
ALL = "all"

LAYER_COLUMNS = [
    "sdk",
    "mode",
    "variant",
    "protocol",
    "scenario",
    "layers",
    "client",
    "framework",
    "output",
    "wait_ms",
    "outcome",
    "label",
    "mixed",
    "n",
]
PERSISTENT_COLUMNS = [
    "sdk",
    "mode",
    "variant",
    "protocol",
    "scenario",
    "requests",
    "ended",
    "outcome",
    "label",
    "time_limit_s",
    "n",
]


def transport_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """Supported, non-sweep rows of the transport scenarios, with ``framework_retries``."""
    table = with_derived(runs)
    keep = (table["outcome"] != Outcome.UNSUPPORTED) & ~is_sweep(table)
    keep &= table["scenario"].map(lambda s: fnmatch.fnmatchcase(str(s), TRANSPORT_SCENARIOS))
    return table[keep]


def _median(series: pd.Series) -> float | None:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.median()) if len(values) else None


def layers_used(client: float | None, framework: float | None, output: float | None, transport: float | None) -> str:
    """``client``, ``framework``, ``output`` joined by ``+`` (medians above zero); ``transport``
    where the client/framework split is unknown (schema 1); ``none`` when nothing retried."""
    used = []
    if client is None:
        used += ["transport"] if transport else []
    else:
        used += ["client"] if client else []
        used += ["framework"] if framework else []
    used += ["output"] if output else []
    return "+".join(used) or "none"


def _reading(group: pd.DataFrame) -> dict[str, Any]:
    """What must agree for modes, variants or protocols to share a row: the retries and where the
    run ended (not the exception's name, which differs by protocol; a merged row marks that ``*``)."""
    summary = _summary(group)
    return {k: summary[k] for k in ("layers", "client", "framework", "output", "outcome")} | {
        "calls": _median(group["model_calls"])
    }


def _summary(group: pd.DataFrame) -> dict[str, Any]:
    cell = summarise_cell(group)
    client, framework = _median(group["client_retries"]), _median(group["framework_retries"])
    output = _median(group["output_retries"])
    return {
        "layers": layers_used(client, framework, output, _median(group["transport_retries"])),
        "client": client,
        "framework": framework,
        "output": output,
        "outcome": cell["outcome"],
        "label": cell["label"],
        "mixed": cell["mixed"],
    }


SPLIT = ["mode", "variant", "protocol"]
"""Merged into ``all`` where every value reads the same, shown apart where they differ."""


def _collapse(group: pd.DataFrame, dims: list[str], reading: Any) -> list[tuple[dict[str, str], pd.DataFrame]]:
    """Split ``group`` along ``dims`` in turn, keeping a dimension whole (``all``) when every one
    of its values reads the same under ``reading`` (a group -> dict of compared fields)."""
    if not dims:
        return [({}, group)]
    dim, rest = dims[0], dims[1:]
    parts = dict(list(group.groupby(dim, sort=True)))
    readings = {tuple(sorted(reading(g).items())) for g in parts.values()}
    if len(parts) > 1 and len(readings) == 1:
        return [({dim: ALL} | labels, rows) for labels, rows in _collapse(group, rest, reading)]
    return [({dim: str(v)} | labels, rows) for v, g in parts.items() for labels, rows in _collapse(g, rest, reading)]


def _split(table: pd.DataFrame, reading: Any) -> list[dict[str, Any]]:
    """One record per (sdk, scenario) and whatever mode, variant or protocol reads differently."""
    records = []
    for (sdk, scenario), group in table.groupby(["sdk", "scenario"], sort=True):
        for labels, rows in _collapse(group, SPLIT, reading):
            records.append({"sdk": sdk, **labels, "scenario": scenario, "rows": rows})
    return records


def retry_layers(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per SDK x transport scenario (x mode, variant, protocol where they read
    differently; ``all`` where not): the layers that retried, median retries per layer, median total backoff wait
    (ms), the majority outcome with its calls, ``mixed`` when rows disagree, and the row count."""
    table = transport_rows(runs)
    records = []
    for record in _split(table, _reading):
        rows = record.pop("rows")
        records.append(record | _summary(rows) | {"wait_ms": _median(rows["retry_wait_ms"]), "n": len(rows)})
    return pd.DataFrame.from_records(records, columns=LAYER_COLUMNS)


def ended_by(outcomes: Counter[str]) -> str:
    """What ended a persistent fault: the time limit, the call cap, or the SDK itself."""
    if outcomes.get(Outcome.TIMEOUT):
        return "time limit"
    if outcomes.get(Outcome.RUNAWAY):
        return "call cap"
    return "by itself"


def _persistent_summary(group: pd.DataFrame) -> dict[str, Any]:
    calls = pd.to_numeric(group["model_calls"], errors="coerce").dropna()
    return {
        "requests": int(calls.max()) if len(calls) else None,
        "ended": ended_by(Counter(group["outcome"])),
    }


def _persistent_reading(group: pd.DataFrame) -> dict[str, Any]:
    return _persistent_summary(group) | {"outcome": summarise_cell(group)["outcome"]}


def persistent_faults(runs: pd.DataFrame) -> pd.DataFrame:
    """Per SDK (x mode, variant, protocol where they differ) x persistent transport fault in the run: the most
    requests one run took (``model_calls``), and whether the SDK ended it by itself or the
    cell's time limit or call cap did (if any row hit a limit, that is what is shown)."""
    table = transport_rows(runs)
    table = table[table["scenario"].isin(PERSISTENT)]
    records = []
    for record in _split(table, _persistent_reading):
        rows = record.pop("rows")
        cell = summarise_cell(rows)
        limits = pd.to_numeric(rows["time_limit_s"], errors="coerce").dropna()
        records.append(
            record
            | _persistent_summary(rows)
            | {
                "outcome": cell["outcome"],
                "label": cell["label"] + ("*" if cell["mixed"] else ""),
                "time_limit_s": float(limits.max()) if len(limits) else None,
                "n": len(rows),
            }
        )
    return pd.DataFrame.from_records(records, columns=PERSISTENT_COLUMNS)
