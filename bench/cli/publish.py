"""``bench publish OUT``: the static site and the versioned dataset, from the committed runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail


def publish_command(
    out: Annotated[Path, typer.Argument(help="Folder to write the site into (dataset versions there are kept).")],
    results: Annotated[Path | None, typer.Option(help="Results root holding baseline/ and releases/.")] = None,
) -> None:
    """The pick, the latest matrix, a page per SDK, release and behaviour, the changelog, the field
    reports, and the dataset (parquet, gzipped JSON lines, datasheet, CITATION.cff) at a version
    that changes when any cell does: plain HTML from the committed runs (baseline, release
    histories, field run), weights from \\[tool.bench.pick] of ./pyproject.toml."""
    from bench.dataset import DatasetError
    from bench.pick import PickInputError, resolve_weights
    from bench.publish import RESULTS_ROOT as COMMITTED
    from bench.publish import PublishError, publish

    try:
        published = publish(out, resolve_weights(Path.cwd(), []), results or COMMITTED)
    except (PublishError, DatasetError, PickInputError, OSError) as error:
        fail(str(error))
    built = published.dataset
    typer.echo(f"dataset {built.version}: {built.rows:,} cells, {sum(built.sizes.values()):,} bytes")
    typer.echo(f"{out / 'index.html'}: {published.files} files, {published.bytes:,} bytes")
