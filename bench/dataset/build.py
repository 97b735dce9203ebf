"""Build one version of the dataset from the committed runs: ``OUT/<version>/`` with the runs as
parquet and as gzipped JSON lines, ``dataset.json`` (provenance and the files' digests), the datasheet and
a CITATION.cff; ``OUT/index.json`` lists every version built there, newest last.

The version is a digest of every cell's deciding values (:func:`version_of`): it changes when any
cell's outcome, calls, exception, tokens or returned answer does, and stays the same when a run is
only made again (its ids, dates and wall times are left out).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.dataset.scrub import scrub_value
from bench.dataset.sheet import citation, datasheet
from bench.results import columns
from bench.results.store import ResultsError, read_manifest, read_table, replace_folder

RESULTS_ROOT = Path(__file__).resolve().parents[2] / "results"
"""The repository's results folder: ``baseline/`` and ``releases/<sdk>/`` are committed."""
PART_COLUMN = columns.column(
    "part", pa.string(), "Which committed run the row comes from: baseline, or releases/<sdk> (an SDK's history)."
)
VOLATILE = frozenset({"run_id", "suite_id", "started_at", "latency_ms", "retry_wait_ms", "harness_traceback"})
"""Columns that differ between two makings of the same cells: left out of the version."""
INDEX_FILE = "index.json"
JSON_LINES = "runs.jsonl.gz"
"""The rows as gzipped JSON lines; a key left out is null (in ``details`` too)."""
DATA_FILES = ("runs.parquet", JSON_LINES, "datasheet.md", "CITATION.cff")


class DatasetError(Exception):
    """The dataset cannot be built or loaded: one line naming the file or version."""


@dataclass(frozen=True)
class Built:
    directory: Path
    version: str
    rows: int
    sizes: dict[str, int]
    """Bytes of each file written, by name."""


def parts(results_root: Path) -> list[tuple[str, Path]]:
    """The committed runs, by part name: the baseline first, then each SDK's release history."""
    found = [("baseline", results_root / "baseline")] if (results_root / "baseline").is_dir() else []
    history = results_root / "releases"
    if history.is_dir():
        found += [(f"releases/{d.name}", d) for d in sorted(history.iterdir()) if (d / "manifest.json").is_file()]
    if not found:
        raise DatasetError(f"{results_root}: no committed runs (no baseline/ and no releases/<sdk>/ with a manifest)")
    return found


def build(out: Path, results_root: Path = RESULTS_ROOT) -> Built:
    """Write the dataset version the committed runs make under ``out`` (a version already there is
    written again whole, never half), and list it in ``out/index.json``."""
    tables, manifests = [], {}
    for name, directory in parts(results_root):
        try:
            table, manifests[name] = read_table(directory, "runs"), read_manifest(directory)
        except ResultsError as error:
            raise DatasetError(str(error)) from None
        tables.append(_scrubbed(table).append_column(PART_COLUMN, pa.array([name] * len(table), pa.string())))
    runs = pa.concat_tables(tables)
    version = version_of(runs)
    provenance = _provenance(version, manifests, runs, results_root)

    def fill(folder: Path) -> None:
        pq.write_table(runs, folder / "runs.parquet", compression="zstd")
        with gzip.GzipFile(folder / JSON_LINES, "wb", mtime=0) as handle:  # mtime 0: the same cells, the same bytes
            for row in runs.to_pylist():
                handle.write((json.dumps(_without_nulls(row), default=_json_default, sort_keys=True) + "\n").encode())
        (folder / "datasheet.md").write_text(datasheet(provenance), encoding="utf-8")
        (folder / "CITATION.cff").write_text(citation(provenance), encoding="utf-8")
        files = {name: _file_entry(folder / name) for name in DATA_FILES}
        (folder / "dataset.json").write_text(json.dumps(provenance | {"files": files}, indent=1) + "\n")

    out.mkdir(parents=True, exist_ok=True)
    replace_folder(out / version, fill)
    _list_version(out, version, provenance["released"])
    sizes = {path.name: path.stat().st_size for path in sorted((out / version).iterdir())}
    return Built(out / version, version, len(runs), sizes)


def version_of(runs: pa.Table) -> str:
    """``cells-`` and 12 hex digits of the digest of every row's deciding values, rows in a stable
    order (the wall-time fields of ``details``, ``*_ms``, left out with :data:`VOLATILE`)."""
    kept = runs.drop_columns([name for name in runs.column_names if name in VOLATILE])
    lines = []
    for row in kept.to_pylist():
        if isinstance(row.get("details"), dict):
            row["details"] = {key: value for key, value in row["details"].items() if not key.endswith("_ms")}
        lines.append(json.dumps(row, default=_json_default, sort_keys=True))
    digest = hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
    return f"cells-{digest[:12]}"


def _scrubbed(table: pa.Table) -> pa.Table:
    """``table`` with every absolute path in its string, list and struct columns scrubbed, types kept."""
    kinds = (pa.types.is_string, pa.types.is_large_string, pa.types.is_struct, pa.types.is_list, pa.types.is_large_list)
    for index, field in enumerate(table.schema):
        if any(kind(field.type) for kind in kinds):
            values = scrub_value(table.column(index).to_pylist())
            table = table.set_column(index, field, pa.array(values, field.type))
    return table


def _provenance(version: str, manifests: dict[str, dict[str, Any]], runs: pa.Table, root: Path) -> dict[str, Any]:
    """What a reader needs to know where the cells come from, scrubbed of the machine's paths."""
    finished = [m.get("finished_at") or m.get("started_at") or "" for m in manifests.values()]
    part_rows = runs.group_by("part").aggregate([("part", "count")]).to_pylist()
    counts = {row["part"]: row["part_count"] for row in part_rows}
    keep = ("suite_id", "harness_version", "python", "sdk_versions", "seed", "reps", "suite", "scenarios")
    described = {
        name: {key: manifest.get(key) for key in keep}
        | {
            "rows": counts.get(name, 0),
            "options": {k: v for k, v in (manifest.get("options") or {}).items() if k != "redact"},
            "environments": [_environment(env) for env in manifest.get("environments") or []],
            "finished_at": manifest.get("finished_at"),
        }
        for name, manifest in manifests.items()
    }
    clients = root / "releases" / "clients.json"
    return scrub_value(
        {
            "version": version,
            "released": max(finished)[:10] if any(finished) else datetime.now(UTC).date().isoformat(),
            "rows": len(runs),
            "schema_version": columns.SCHEMA_VERSION,
            "parts": described,
            "clients": json.loads(clients.read_text(encoding="utf-8")) if clients.is_file() else [],
        }
    )


def _environment(env: dict[str, Any]) -> dict[str, Any]:
    keep = ("sdk", "version", "distribution", "name", "exclude_newer", "freeze")
    return {key: env.get(key) for key in keep if key in env}


def _file_entry(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _list_version(out: Path, version: str, released: str) -> None:
    """Add ``version`` to ``out/index.json`` (moved last if it was there: the newest build)."""
    index_path = out / INDEX_FILE
    try:
        listed = json.loads(index_path.read_text(encoding="utf-8")) if index_path.is_file() else {"versions": []}
        versions = [entry for entry in listed["versions"] if entry["version"] != version]
    except (ValueError, KeyError, TypeError) as error:
        raise DatasetError(f"{index_path}: not a dataset index ({error})") from None
    versions.append({"version": version, "released": released})
    staged = index_path.with_name(f".{INDEX_FILE}.partial")
    staged.write_text(json.dumps({"latest": version, "versions": versions}, indent=1) + "\n", encoding="utf-8")
    staged.replace(index_path)


def _without_nulls(row: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in row.items() if value is not None}
    if isinstance(kept.get("details"), dict):
        kept["details"] = _without_nulls(kept["details"])
    return kept


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")
