"""``bench list``: the adapters, what they can run, and whether their SDK is installed."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Adapters, their modes, variants and protocols, and whether their SDK is installed."""
    from bench import registry

    rows = []
    for name, registration in registry.registrations().items():
        row: dict[str, object] = {"sdk": name, "target": registration.target}
        try:
            adapter = registry.load(name)
        except registry.AdapterUnavailable as error:
            rows.append(row | {"installed": False, "error": str(error)})
            continue
        from bench.runner import sdk_version

        cells = adapter.cells()
        row |= {
            "installed": sdk_version(adapter) is not None,
            "version": sdk_version(adapter),
            "modes": sorted({str(c.mode) for c in cells if c.mode_support != "unsupported"}),
            "variants": sorted({c.variant for c in cells}),
            "protocols": sorted({str(c.protocol) for c in cells}),
            "cells": len(cells),
            "unsupported_cells": sum(1 for c in cells if c.mode_support == "unsupported"),
        }
        rows.append(row)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        if not row.get("installed"):
            typer.echo(f"{row['sdk']:<18} not installed: {row.get('error', '')}")
            continue
        typer.echo(
            f"{row['sdk']:<18} {row['version']:<10} modes={','.join(row['modes'])}  "  # type: ignore[arg-type]
            f"variants={','.join(row['variants'])}  cells={row['cells']} ({row['unsupported_cells']} unsupported)"  # type: ignore[arg-type]
        )
