"""What ``bench list`` shows: each registered adapter, what it runs, and why it cannot run the rest.

Modes, variants and protocols are those of the cells the adapter *runs*: an SDK that has no
Anthropic path does not "speak" anthropic-messages because its table lists those cells as
unsupported. Every unsupported cell is listed with its reason (grouped by reason), as the README
promises: a cell is never silently missing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.core.vocabulary import ModeSupport
from bench.sdk import registry
from bench.sdk.adapter import Adapter, Cell
from bench.sdk.registry import sdk_version

NO_REASON = "(the adapter gives no reason)"


def cell_label(cell: Cell) -> str:
    """``mode/variant/protocol``, with ``/stream`` when a non-stream variant streams."""
    stream = "/stream" if cell.stream and cell.variant != "stream" else ""
    return f"{cell.mode}/{cell.variant}/{cell.protocol}{stream}"


def adapter_row(name: str, target: str, adapter: Adapter, version: str | None) -> dict[str, Any]:
    """One adapter's listing: the supported grid's modes (the adapter's own :attr:`Adapter.modes`),
    variants and protocols, and each unsupported cell with its reason."""
    cells = adapter.cells()
    runs = [c for c in cells if c.mode_support is not ModeSupport.UNSUPPORTED]
    reasons: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        if cell.mode_support is ModeSupport.UNSUPPORTED:
            reasons[cell.note or NO_REASON].append(cell_label(cell))
    return {
        "sdk": name,
        "target": target,
        "installed": version is not None,
        "version": version,
        "modes": sorted(str(mode) for mode in adapter.modes),
        "variants": sorted({str(c.variant) for c in runs}),
        "protocols": sorted({str(c.protocol) for c in runs}),
        "cells": len(cells),
        "unsupported_cells": sum(len(labels) for labels in reasons.values()),
        "unsupported": [{"reason": reason, "cells": labels} for reason, labels in reasons.items()],
    }


def listing() -> list[dict[str, Any]]:
    """Every registered adapter; one whose SDK is missing says so with its install hint."""

    rows = []
    for name, registration in registry.registrations().items():
        try:
            adapter = registry.load(name)
        except registry.AdapterUnavailable as error:
            rows.append({"sdk": name, "target": registration.target, "installed": False, "error": str(error)})
            continue
        rows.append(adapter_row(name, registry.adapter_target(name), adapter, sdk_version(adapter)))
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """The human listing: one line per adapter, then its unsupported cells under their reason."""
    lines = []
    for row in rows:
        if "error" in row:
            lines.append(f"{row['sdk']:<18} unavailable: {row.get('error', '')}")
            continue
        lines.append(
            f"{row['sdk']:<18} {row['version'] or '?':<10} modes={','.join(row['modes'])}  "
            f"protocols={','.join(row['protocols'])}  variants={','.join(row['variants'])}  "
            f"cells={row['cells']} ({row['unsupported_cells']} unsupported)"
        )
        for group in row["unsupported"]:
            lines.append(f"  unsupported: {', '.join(group['cells'])}")
            lines.append(f"    why: {group['reason']}")
    return "\n".join(lines)
