"""The published dataset, built from a copy of the committed runs: a version that changes when a
cell does and only then, every committed row in both forms, no machine path, read back by the
loader from a folder and over loopback HTTP, and a copy whose bytes were changed refused."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bench import dataset
from bench.dataset.build import RESULTS_ROOT, version_of
from tests.paths import REPO
from tests.published import published_text

SLOW_FIXTURES = ("committed_copy", "built")


@pytest.fixture(scope="module")
def committed_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed results (baseline and release histories), copied: a test may change one."""
    root = tmp_path_factory.mktemp("results")
    for name in ("baseline", "releases"):
        shutil.copytree(RESULTS_ROOT / name, root / name)
    return root


@pytest.fixture(scope="module")
def built(committed_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> dataset.Built:
    return dataset.build(tmp_path_factory.mktemp("site") / "dataset", committed_copy)


def test_every_committed_row_is_in_both_forms(built: dataset.Built, committed_copy: Path) -> None:
    committed = sum(pq.read_metadata(path).num_rows for path in committed_copy.rglob("runs.parquet"))
    assert built.rows == committed == pq.read_metadata(built.directory / "runs.parquet").num_rows
    with gzip.open(built.directory / "runs.jsonl.gz", "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    assert len(rows) == committed and {row["part"] for row in rows} >= {"baseline", "releases/pydantic-ai"}
    listed = json.loads((built.directory / "dataset.json").read_text())
    assert listed["version"] == built.version and listed["rows"] == committed
    assert set(listed["files"]) == {"runs.parquet", "runs.jsonl.gz", "datasheet.md", "CITATION.cff"}


def test_nothing_published_names_a_path_of_the_machine(built: dataset.Built, committed_copy: Path) -> None:
    """The committed manifests hold an environment's folder and a command line: neither is published."""
    assert "/root/.cache" in (committed_copy / "releases" / "pydantic-ai" / "manifest.json").read_text()
    roots = {str(REPO), str(Path.home()), str(committed_copy), "/root/", "/work/", "/tmp/"}
    for path in built.directory.iterdir():
        text = published_text(path)
        for root in roots:
            assert root not in text, f"{path.name} holds {root}"


def test_the_datasheet_describes_every_column_and_the_citation_names_the_version(built: dataset.Built) -> None:
    sheet = (built.directory / "datasheet.md").read_text()
    for name in pq.read_schema(built.directory / "runs.parquet").names:
        assert f"`{name}`" in sheet, name
    assert "pydantic-ai 1.0.18, pydantic-ai 1.50.0, pydantic-ai 2.0.0" in sheet  # by version, with the seeds
    assert f'version: "{built.version}"' in (built.directory / "CITATION.cff").read_text()


def test_the_version_changes_when_a_cell_does_and_only_then(built: dataset.Built, committed_copy: Path) -> None:
    runs = pq.read_table(built.directory / "runs.parquet")
    assert version_of(runs) == built.version
    remade = runs.set_column(
        runs.schema.get_field_index("latency_ms"), "latency_ms", pc.multiply(runs["latency_ms"], 2.0)
    )
    assert version_of(remade) == built.version  # made again: other wall times, the same cells
    outcomes = runs["outcome"].to_pylist()
    outcomes[0] = "raised" if outcomes[0] != "raised" else "ok"
    changed = runs.set_column(runs.schema.get_field_index("outcome"), "outcome", [outcomes])
    assert version_of(changed) != built.version


def test_the_loader_reads_a_version_from_the_folder(built: dataset.Built) -> None:
    frame = dataset.load(built.directory.parent)
    assert len(frame) == built.rows and str(frame["model_calls"].dtype) == "Int64"
    assert (dataset.load(built.directory.parent, version=built.version)["outcome"] == frame["outcome"]).all()
    with pytest.raises(dataset.DatasetError, match="no version 'cells-000000000000'"):
        dataset.load(built.directory.parent, version="cells-000000000000")


@pytest.fixture
def served(built: dataset.Built) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built.directory.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_loader_reads_a_version_over_http_and_refuses_changed_bytes(
    built: dataset.Built, served: str, tmp_path: Path
) -> None:
    assert len(dataset.load(served, version=built.version, cache=tmp_path / "cache")) == built.rows
    cached = tmp_path / "cache" / built.version / "runs.parquet"
    assert cached.is_file()
    served_file = built.directory / "runs.parquet"
    original = served_file.read_bytes()
    try:
        served_file.write_bytes(original[:-10] + b"\0" * 10)  # the server now hands out other bytes
        cached.unlink()
        with pytest.raises(dataset.DatasetError, match="sha256"):
            dataset.load(served, version=built.version, cache=tmp_path / "cache")
    finally:
        served_file.write_bytes(original)


def test_a_path_in_any_column_of_a_run_is_scrubbed_in_every_form(committed_copy: Path, tmp_path: Path) -> None:
    """A user's path in a message, a traceback, a note and a list column of one run: the dataset
    keeps the row, each path reduced to its last part, in the parquet's values and the JSON lines."""
    root = tmp_path / "results"
    shutil.copytree(committed_copy, root)
    runs = pq.read_table(root / "baseline" / "runs.parquet")
    planted = {
        "exception_message": "cannot read /home/alice/billing/agent.py: denied",
        "harness_traceback": 'File "/work/alice/bench/run.py", line 3',
        "note": "built in /opt/alice/envs/sdk-1",
    }
    for column, text in planted.items():
        values = runs.column(column).to_pylist()
        runs = runs.set_column(runs.schema.get_field_index(column), column, pa.array([text, *values[1:]], pa.string()))
    mro = runs.column("exception_mro").to_pylist()
    field = runs.schema.field("exception_mro")
    runs = runs.set_column(
        runs.schema.get_field_index("exception_mro"), field, pa.array([["/srv/alice/x.py"], *mro[1:]], field.type)
    )
    pq.write_table(runs, root / "baseline" / "runs.parquet")
    rebuilt = dataset.build(tmp_path / "site", root)
    for name in ("runs.parquet", "runs.jsonl.gz"):
        text = published_text(rebuilt.directory / name)
        assert "alice" not in text, name
        assert (
            "<path>/agent.py" in text and "<path>/run.py" in text and "<path>/sdk-1" in text and "<path>/x.py" in text
        )
