"""``bench list``: the adapters, what they run, why they cannot run the rest (bench/sdk/listing.py)."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Adapters, their modes, variants and protocols, each unsupported cell with its reason, and
    whether their SDK is installed."""
    from bench.sdk.listing import listing, render

    rows = listing()
    typer.echo(json.dumps(rows, indent=2) if as_json else render(rows))
