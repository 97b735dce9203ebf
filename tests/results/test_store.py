"""Run data loads as declared (issue 13 point 8): nullable integer and boolean dtypes in pandas for
runs of every schema version, a description on every parquet field and a docs table generated
from the same declaration, ``details`` typed (a struct, schema 4) for new and old runs, and a
results folder a glob over ``results/*/`` reads each run of once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import (
    PARTS_DIR,
    ResultsWriter,
    columns,
    details,
    latest_run,
    load_run,
    point_latest,
    read_table,
)
from tests.paths import FIXTURES, REPO

SMALL = ["--sdk", "openai-parse", "--variant", "default", "--scenario", "valid", "--scenario", "wrong_persistent"]
OLD_RUNS = {"schema 1": FIXTURES / "small_run", "schema 2": FIXTURES / "tool_run"}


def assert_declared_dtypes(frame: object, schema: pa.Schema) -> None:
    for field in schema:
        dtype = str(frame[field.name].dtype)  # type: ignore[index]
        if pa.types.is_integer(field.type):
            assert dtype == "Int64", f"{field.name}: {dtype}"
        elif pa.types.is_boolean(field.type):
            assert dtype == "boolean", f"{field.name}: {dtype}"


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_runs_load_with_nullable_integer_and_boolean_dtypes(name: str) -> None:
    run = load_run(OLD_RUNS[name])
    version = pq.read_schema(OLD_RUNS[name] / "runs.parquet").metadata[b"misfit_bench.schema_version"]
    assert version.decode() < columns.SCHEMA_VERSION, "the fixture is an older schema"
    assert_declared_dtypes(run["runs"], columns.RUNS)
    assert_declared_dtypes(run["attempts"], columns.ATTEMPTS)
    runs = run["runs"]
    # Columns the old schema lacked are missing values (<NA>), not NaN in a float column.
    absent = set(columns.RUNS.names) - set(pq.read_schema(OLD_RUNS[name] / "runs.parquet").names) - {"agent"}
    assert absent and all(runs[column].isna().all() for column in absent - {"language"})
    assert (runs["language"] == "python").all()  # every SDK was a Python one before schema 5
    ran = runs[runs["outcome"] != "unsupported"]
    assert ran["model_calls"].notna().all() and (ran["model_calls"] >= 1).all()


def test_every_declared_column_has_a_description() -> None:
    for schema in columns.TABLES.values():
        for field in schema:
            assert len(columns.description(field)) > 10, field.name


def test_the_docs_table_of_columns_is_current() -> None:
    docs = REPO / "docs" / "columns.md"
    assert docs.read_text(encoding="utf-8") == columns.markdown(), (
        "docs/columns.md is stale: python -m bench.results.columns > docs/columns.md"
    )


def bench(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(map(str, args)))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_a_glob_over_every_run_folder_counts_the_newest_run_once(tmp_path: Path) -> None:
    """DuckDB over ``results/*/runs.parquet`` with two runs and a baseline: ``latest`` names the
    newest run's folder (a file, not a link to it), so the glob reads each folder once."""
    made: list[Path] = []
    for _ in range(2):  # two runs in the same second: the newer is the one made second, not the later name
        before = {p for p in tmp_path.iterdir() if p.is_dir()}
        code, _, stderr = bench("run", *SMALL, "--out", tmp_path, "--no-progress", "--procs", "1")
        assert code == 0, stderr
        (folder,) = {p for p in tmp_path.iterdir() if p.is_dir()} - before
        made.append(folder)
    first, second = made
    # Every reader of results/latest still finds the newest run: the baseline command, the gate, runs, load_run.
    code, stdout, stderr = bench("baseline", "update", "--results", tmp_path, "--force")
    assert code == 0 and f"from run {second.name}" in stdout, stderr
    code, _, stderr = bench("gate", tmp_path / "latest", "--baseline", tmp_path / "baseline")
    assert code == 0, stderr
    code, stdout, _ = bench("runs", "--results", tmp_path, "--json")
    assert code == 0 and {run["id"]: run["latest"] for run in json.loads(stdout)}[second.name] is True
    assert latest_run(tmp_path) == load_run(tmp_path / "latest")["path"] == second.resolve()
    assert (tmp_path / "latest").read_text(encoding="utf-8") == second.name + "\n"

    def count(glob: str) -> int:
        ((rows,),) = duckdb.sql(f"SELECT count(*) FROM '{tmp_path}/{glob}'").fetchall()
        return rows

    rows = [pq.read_metadata(folder / "runs.parquet").num_rows for folder in (first, second, tmp_path / "baseline")]
    assert rows[0] > 0 and count("*/runs.parquet") == sum(rows) and count("2*/runs.parquet") == rows[0] + rows[1]


def test_a_latest_link_left_by_an_older_version_still_reads(tmp_path: Path) -> None:
    run = tmp_path / "20261129-221413-a188"
    shutil.copytree(OLD_RUNS["schema 1"], run)
    (tmp_path / "latest").symlink_to(run.name)
    assert load_run(tmp_path / "latest")["path"] == latest_run(tmp_path) == run.resolve()
    point_latest(tmp_path, run)  # the next run replaces the link with the file
    assert not (tmp_path / "latest").is_symlink() and latest_run(tmp_path) == run.resolve()


def test_a_new_run_writes_details_as_a_typed_struct(tmp_path: Path) -> None:
    args = ["--sdk", "pydantic-ai", "--variant", "default", "--mode", "native", "--protocol", "openai-chat"]
    code, _, stderr = bench("run", *args, "--scenario", "malformed_then_valid", "--out", tmp_path, "--no-progress")
    assert code == 0, stderr
    run = load_run(tmp_path / "latest")
    written = pq.read_schema(run["path"] / "runs.parquet")
    assert written.field("details").type == columns.DETAILS
    assert written.metadata[b"misfit_bench.schema_version"] == columns.SCHEMA_VERSION.encode()
    (details,) = run["runs"]["details"]
    # Counts are integers and flags booleans, not their text: two requests, a budget of 1 retry.
    assert (details["sdk_usage_requests"], details["output_retries"], details["entry_point"]) == (2, 1, "run")
    assert run["runs"]["details"].struct.field("sdk_usage_requests").tolist() == [2]
    ((requests,),) = duckdb.sql(f"SELECT details.sdk_usage_requests FROM '{run['path']}/runs.parquet'").fetchall()
    assert requests == 2


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_runs_read_their_json_details_as_the_typed_struct(name: str) -> None:
    runs = load_run(OLD_RUNS[name])["runs"]
    assert pa.types.is_string(pq.read_schema(OLD_RUNS[name] / "runs.parquet").field("details").type)
    assert runs["details"].dtype.pyarrow_dtype == columns.DETAILS
    noted = runs[runs["details"].notna()]
    assert len(noted) and all(not value["other"] for value in noted["details"]), "every built-in note is declared"
    pydantic = noted[noted.sdk == "pydantic-ai"]["details"].struct.field("sdk_usage_requests")
    assert str(pydantic.dtype) == "int32[pyarrow]" and pydantic.notna().all() and pydantic.max() >= 1


def test_an_interrupted_old_schema_run_resumes_into_one_typed_table(tmp_path: Path) -> None:
    """A run interrupted under schema 3 (JSON details in its parts) and finished under schema 4:
    the old part and the new one read, and merge, as one table of typed details."""
    shutil.copy(OLD_RUNS["schema 2"] / "manifest.json", tmp_path / "manifest.json")
    (tmp_path / PARTS_DIR).mkdir()
    for table in ("runs", "attempts"):
        shutil.copy(OLD_RUNS["schema 2"] / f"{table}.parquet", tmp_path / PARTS_DIR / f"{table}-000000.parquet")
    old = read_table(tmp_path, "runs")
    row = old.slice(0, 1).to_pylist()[0] | {"cell_id": "f" * 16, "details": details.typed({"sdk_requests": "3"})}
    writer = ResultsWriter(tmp_path)
    writer.add(row, [])
    writer.finalize()
    merged = pq.read_table(tmp_path / "runs.parquet")
    assert merged.schema.field("details").type == columns.DETAILS and merged.num_rows == old.num_rows + 1
    by_cell = dict(zip(merged.column("cell_id").to_pylist(), merged.column("details").to_pylist(), strict=True))
    assert by_cell["f" * 16]["sdk_requests"] == 3


def test_a_note_the_declaration_lacks_is_kept_as_text() -> None:
    value = details.typed({"strategy": "ToolStrategy", "hook_denials": "2", "vendor_note": "x", "num_turns": "many"})
    assert value is not None and (value["strategy"], value["hook_denials"]) == ("ToolStrategy", 2)
    assert value["other"] == [("num_turns", "many"), ("vendor_note", "x")]
    assert details.typed({}) is None


def test_the_committed_baseline_pairs_agentmakers_tool_errors_as_the_runner_measures_now() -> None:
    """Issue 13 point 12: agentmaker's tool loop pairs every failed call before its structured
    turn, so no default (or json_object) tool cell that raised after tool errors may keep the
    stale ``tool_error_to_model`` False the baseline held before it was merged anew."""
    runs = load_run(REPO / "results" / "baseline")["runs"]
    cells = runs[(runs.sdk == "agentmaker") & runs.scenario.str.startswith("tool_") & (runs.tool_errors > 0)]
    composed = cells[cells.variant.isin(["default", "json_object"])]
    assert len(composed) >= 16 and composed["tool_error_to_model"].fillna(True).all()
