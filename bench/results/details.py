"""The ``details`` column typed: what an adapter noted about a run, as the struct declared in
:data:`bench.results.columns.DETAILS` (counts as integers, flags as booleans, lists as lists).

Adapters hand their notes over as a flat mapping (``AdapterResult.details``) whose values may be
the strings they were always written as (``str(usage.requests)``); this is the one place they are
typed, for a new row (:mod:`bench.run.rows`) and for a run written before schema 4, whose ``details``
is a JSON object of strings (:mod:`bench.results.store` reads it through :func:`from_json`). A key the
declaration does not know (a third-party adapter's), or a value that does not parse as its
declared type, is kept as text under ``other``: nothing an adapter noted is lost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from bench.results import columns

OTHER = "other"
_NONE = {"None", "null", ""}
"""Text an adapter wrote for a missing value (``str(None)``)."""


def typed(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The struct value of one row's details; None for no details."""
    if not raw:
        return None
    value: dict[str, Any] = dict.fromkeys(_FIELDS)
    other: dict[str, str] = {}
    for key, item in raw.items():
        field_type = _FIELDS.get(key)
        try:
            if field_type is None:
                raise ValueError(key)
            value[key] = _convert(item, field_type)
        except (ValueError, TypeError):
            other[key] = item if isinstance(item, str) else json.dumps(item, default=str)
    value[OTHER] = sorted(other.items()) or None
    return value


def from_json(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A schema-1-to-3 ``details`` column (JSON text) as the typed struct column."""
    values = [typed(json.loads(text)) if text else None for text in texts.to_pylist()]
    return pa.array(values, type=columns.DETAILS)


def _convert(item: Any, field_type: pa.DataType) -> Any:
    if item is None or (isinstance(item, str) and item in _NONE and not pa.types.is_list(field_type)):
        return None
    if pa.types.is_boolean(field_type):
        return _boolean(item)
    if pa.types.is_integer(field_type):
        if isinstance(item, bool):
            raise TypeError(item)
        return int(item)
    if pa.types.is_floating(field_type):
        return float(item)
    if pa.types.is_list(field_type):
        return _strings(item)
    return item if isinstance(item, str) else json.dumps(item, sort_keys=True)


def _boolean(item: Any) -> bool:
    if isinstance(item, bool):
        return item
    if item in ("True", "true"):
        return True
    if item in ("False", "false"):
        return False
    raise ValueError(item)


def _strings(item: Any) -> list[str]:
    """A list as the adapters write it: a JSON list, or names joined with commas."""
    if isinstance(item, list | tuple):
        return [str(x) for x in item]
    text = str(item)
    if text.startswith("["):
        parsed = json.loads(text)
        if not isinstance(parsed, list):
            raise ValueError(text)
        return [str(x) for x in parsed]
    return [part for part in text.split(",") if part]


_FIELDS: dict[str, pa.DataType] = {f.name: f.type for f in columns.DETAILS if f.name != OTHER}
