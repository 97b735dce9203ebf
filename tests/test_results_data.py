"""Run data loads as declared (issue 13 point 8): nullable integer and boolean dtypes in pandas for
runs of every schema version, a description on every parquet field and a docs table generated
from the same declaration."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import columns
from bench.results import load_run

REPO = Path(__file__).resolve().parent.parent
OLD_RUNS = {"schema 1": REPO / "tests" / "fixtures" / "small_run", "schema 2": REPO / "tests" / "fixtures" / "tool_run"}


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
    assert absent and all(runs[column].isna().all() for column in absent)
    ran = runs[runs["outcome"] != "unsupported"]
    assert ran["model_calls"].notna().all() and (ran["model_calls"] >= 1).all()


def test_every_declared_column_has_a_description() -> None:
    for schema in columns.TABLES.values():
        for field in schema:
            assert len(columns.description(field)) > 10, field.name


def test_the_docs_table_of_columns_is_current() -> None:
    docs = REPO / "docs" / "columns.md"
    assert docs.read_text(encoding="utf-8") == columns.markdown(), (
        "docs/columns.md is stale: python -m bench.columns > docs/columns.md"
    )
