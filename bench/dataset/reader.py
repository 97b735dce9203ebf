"""Read a published dataset version, from a folder or over HTTP, as the pandas frame the notebook
uses (declared column types, a user's own agents labelled apart). A file whose digest is not the
one its ``dataset.json`` lists is refused, never read: a cached or served copy cannot pass for
the version it names."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.dataset.build import INDEX_FILE, DatasetError
from bench.results.labels import label_agents
from bench.results.store import to_pandas

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "misfit-bench" / "dataset"
"""Where versions read over HTTP are kept (each checked against its digests before use)."""
MAX_BYTES = 256 * 1024 * 1024


def load(source: str | Path, version: str | None = None, cache: Path = CACHE) -> Any:
    """The runs of ``version`` (None: the newest listed in ``source``'s index.json) as a DataFrame.

    ``source``: the dataset folder ``bench publish`` writes (``OUT/dataset``), or its URL; a
    version read over HTTP is kept under ``cache`` and checked against its digest each time."""
    return _read_version(source, version, cache)[1]


def load_run(source: str | Path, version: str | None = None, part: str = "baseline", cache: Path = CACHE) -> Any:
    """One committed run of the dataset (``baseline``: the latest default run; ``releases/<sdk>``)
    in the shape ``bench.report.load`` gives a run folder: ``{"runs", "manifest", "version"}``,
    the manifest the part's provenance (suite id, SDK versions, seed, reps, scenarios)."""
    meta, frame = _read_version(source, version, cache)
    if part not in meta["parts"]:
        raise DatasetError(f"{source}: version {meta['version']} has no part {part!r} ({', '.join(meta['parts'])})")
    manifest = meta["parts"][part] | {"schema_version": meta["schema_version"]}
    runs = frame[frame["part"] == part].drop(columns="part").reset_index(drop=True)
    return {"runs": runs, "manifest": manifest, "version": meta["version"]}


def _read_version(source: str | Path, version: str | None, cache: Path) -> tuple[dict[str, Any], Any]:
    text = str(source)
    remote = text.startswith(("http://", "https://"))
    index = json.loads(_read(text, INDEX_FILE, remote).decode())
    chosen = version or index.get("latest")
    listed = [entry.get("version") for entry in index.get("versions", [])]
    if chosen not in listed:
        raise DatasetError(f"{text}: no version {chosen!r} (published: {', '.join(map(str, listed)) or 'none'})")
    meta = json.loads(_read(text, f"{chosen}/dataset.json", remote).decode())
    expected = meta["files"]["runs.parquet"]["sha256"]
    local = cache / chosen / "runs.parquet" if remote else Path(text) / chosen / "runs.parquet"
    if remote and not (local.is_file() and _digest(local.read_bytes()) == expected):
        data = _read(text, f"{chosen}/runs.parquet", remote)
        local.parent.mkdir(parents=True, exist_ok=True)
        staged = local.with_name(f".runs.{os.getpid()}.partial")
        staged.write_bytes(data)
        staged.replace(local)
    data = local.read_bytes()
    if _digest(data) != expected:
        raise DatasetError(f"{local}: its sha256 is not the one {chosen}/dataset.json lists; refusing to read it")
    return meta, label_agents(to_pandas(pq.read_table(pa.BufferReader(data))))


def _read(source: str, name: str, remote: bool) -> bytes:
    """One file of the dataset, bounded; one line naming it when it cannot be read."""
    where = f"{source.rstrip('/')}/{name}"
    try:
        if remote:
            with urllib.request.urlopen(where, timeout=60) as answer:
                data = bytes(answer.read(MAX_BYTES + 1))
        else:
            path = Path(where)
            if path.stat().st_size > MAX_BYTES:
                raise DatasetError(f"{where}: over {MAX_BYTES:,} bytes")
            data = path.read_bytes()
    except (OSError, urllib.error.URLError, ValueError) as error:
        raise DatasetError(f"{where}: cannot be read ({error})") from None
    if len(data) > MAX_BYTES:
        raise DatasetError(f"{where}: over {MAX_BYTES:,} bytes")
    return data


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
