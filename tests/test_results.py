"""Merging a run's parts: a big run is merged one cell_id prefix at a time and must come out
exactly as the one-sort merge does."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench import results
from bench.results import ResultsWriter


def _write_cells(directory: Path, cells: int) -> None:
    rng = random.Random(7)
    writer = ResultsWriter(directory, flush_every=25, flush_after_s=3600)
    for index in range(cells):
        cell_id = f"{rng.getrandbits(64):016x}"
        run = {
            "run_id": f"r{index}", "suite_id": "s", "cell_id": cell_id, "sdk": "x", "mode": "tool",
            "mode_support": "builtin", "variant": "default", "protocol": "openai-chat", "stream": False,
            "scenario": "valid", "task": "person", "fault": "none", "rep": 0, "seed": 0, "outcome": "ok",
            "call_cap": 12, "time_limit_s": 30.0, "started_at": datetime.now(UTC),
        }  # fmt: skip
        attempt = {
            "suite_id": "s", "cell_id": cell_id, "run_id": f"r{index}", "path": "/v1/x", "stream": False,
            "behaviour": "valid", "realistic": True, "status_code": 200, "input_tokens": 1, "output_tokens": 1,
            "request_bytes": 1, "response_bytes": 1, "request_sha256": "ab",
        }  # fmt: skip
        attempts = [
            attempt | {"attempt": n, "started_at": datetime.fromtimestamp(1_800_000_000 + index * 10 + 2 - n, UTC)}
            for n in range(3)
        ]
        writer.add(run, attempts)
    writer.finalize()


@pytest.mark.parametrize("table", ["runs", "attempts"])
def test_the_bucketed_merge_equals_the_in_memory_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    _write_cells(tmp_path / "memory", 400)
    monkeypatch.setattr(results, "IN_MEMORY_MERGE_BYTES", 0)
    _write_cells(tmp_path / "bucketed", 400)
    in_memory = pq.read_table(tmp_path / "memory" / f"{table}.parquet")
    bucketed = pq.read_table(tmp_path / "bucketed" / f"{table}.parquet")
    assert bucketed.num_rows == in_memory.num_rows == (400 if table == "runs" else 1200)
    drop = ["started_at"] if table == "runs" else []
    assert bucketed.drop_columns(drop).equals(in_memory.drop_columns(drop))
    assert pq.ParquetFile(tmp_path / "bucketed" / f"{table}.parquet").metadata.num_row_groups > 1
    assert not (tmp_path / "bucketed" / results.PARTS_DIR).exists()
