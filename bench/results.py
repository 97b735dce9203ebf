"""Results on disk: ``results/<suite_id>/`` with ``runs.parquet``, ``attempts.parquet`` and
``manifest.json``, plus a ``results/latest`` symlink.

Cells are written as they finish, as append-only parts renamed into place atomically, so an
interrupted run leaves a readable run of everything finished so far; ``finalize`` merges the
parts into the two tables. Readers accept either form.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench import columns

RUNS_FILE = "runs.parquet"
ATTEMPTS_FILE = "attempts.parquet"
MANIFEST_FILE = "manifest.json"
PARTS_DIR = "parts"


class ResultsError(Exception):
    """A path that is not a run, or a run that cannot be read; the message says which."""


def new_suite_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()


def _atomic_write_table(table: pa.Table, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    os.replace(temporary, target)


def _atomic_write_text(text: str, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)


class ResultsWriter:
    """Buffers finished cells and flushes them as parquet parts (every ``flush_every`` cells
    or ``flush_after_s`` seconds), so memory stays flat however many cells a run has."""

    def __init__(self, directory: Path, flush_every: int = 50, flush_after_s: float = 2.0) -> None:
        self.directory = directory
        self.parts = directory / PARTS_DIR
        self.parts.mkdir(parents=True, exist_ok=True)
        self.flush_every, self.flush_after_s = flush_every, flush_after_s
        self._runs: list[dict[str, Any]] = []
        self._attempts: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._part = len(list(self.parts.glob("runs-*.parquet")))
        self.cells_written = 0

    def add(self, run: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
        self._runs.append(run)
        self._attempts.extend(attempts)
        if len(self._runs) >= self.flush_every or time.monotonic() - self._last_flush > self.flush_after_s:
            self.flush()

    def flush(self) -> None:
        if not self._runs:
            return
        name = f"{self._part:06d}.parquet"
        # Attempts first: a runs part is the commit marker for its cells.
        _atomic_write_table(
            pa.Table.from_pylist(self._attempts, schema=columns.ATTEMPTS), self.parts / f"attempts-{name}"
        )
        _atomic_write_table(pa.Table.from_pylist(self._runs, schema=columns.RUNS), self.parts / f"runs-{name}")
        self.cells_written += len(self._runs)
        self._part += 1
        self._runs, self._attempts = [], []
        self._last_flush = time.monotonic()

    def finalize(self) -> None:
        """Merge parts into ``runs.parquet`` and ``attempts.parquet`` (sorted, stable)."""
        self.flush()
        runs = read_table(self.directory, "runs").sort_by([("cell_id", "ascending")])
        attempts = read_table(self.directory, "attempts").sort_by(
            [("cell_id", "ascending"), ("started_at", "ascending")]
        )
        _atomic_write_table(runs, self.directory / RUNS_FILE)
        _atomic_write_table(attempts, self.directory / ATTEMPTS_FILE)
        for part in self.parts.glob("*.parquet"):
            part.unlink()
        self.parts.rmdir()


def read_table(directory: Path, table: str) -> pa.Table:
    """One table of a run, merged from ``<table>.parquet`` and any parts left by an
    interrupted or still-running run."""
    schema = columns.RUNS if table == "runs" else columns.ATTEMPTS
    pieces = []
    whole = directory / f"{table}.parquet"
    try:
        if whole.exists():
            pieces.append(pq.read_table(whole, schema=schema))
        part_dir = directory / PARTS_DIR
        committed = (
            {p.name.removeprefix("runs-") for p in part_dir.glob("runs-*.parquet")} if part_dir.is_dir() else set()
        )
        for name in sorted(committed):
            pieces.append(pq.read_table(part_dir / f"{table}-{name}", schema=schema))
    except (OSError, pa.ArrowException) as error:
        raise ResultsError(f"{directory}: cannot read the {table} table: {error}") from None
    if not pieces:
        return schema.empty_table()
    return pa.concat_tables(pieces)


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    _atomic_write_text(json.dumps(manifest, indent=2, default=str) + "\n", directory / MANIFEST_FILE)


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{directory}: not a misfit-bench run (no {MANIFEST_FILE})") from None
    except (OSError, ValueError) as error:
        raise ResultsError(f"{path}: unreadable manifest: {error}") from None


def point_latest(results_root: Path, directory: Path) -> None:
    """Move ``results/latest`` to ``directory`` atomically."""
    link = results_root / "latest"
    temporary = results_root / f".latest-{os.getpid()}"
    if temporary.is_symlink():
        temporary.unlink()
    temporary.symlink_to(directory.name)
    os.replace(temporary, link)


def resolve_run(reference: str | Path | None, results_root: Path = Path("results")) -> Path:
    """A run directory from a path, a suite id under ``results_root``, or None for the latest."""
    candidates = [results_root / "latest"] if reference is None else [Path(reference), results_root / str(reference)]
    for candidate in candidates:
        if (candidate / MANIFEST_FILE).exists():
            return candidate.resolve()
    raise ResultsError(f"{reference or results_root / 'latest'}: not a misfit-bench run (no {MANIFEST_FILE} found)")


def load_run(reference: str | Path | None = None, results_root: Path = Path("results")) -> dict[str, Any]:
    """The public loader notebooks use: {'runs': DataFrame, 'attempts': DataFrame, 'manifest': dict}."""
    directory = resolve_run(reference, results_root)
    return {
        "runs": read_table(directory, "runs").to_pandas(),
        "attempts": read_table(directory, "attempts").to_pandas(),
        "manifest": read_manifest(directory),
        "path": directory,
    }


def harness_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("misfit-bench")
    except PackageNotFoundError:
        return "unknown"


def command_line() -> str:
    return " ".join(sys.argv)
