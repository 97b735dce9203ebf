"""The runner end to end through the CLI, with the third-party `openai-parse` adapter from
tests/plugin (registered for the tests only, by tests/conftest.py): outcomes, runaway at the call cap, timeouts,
harness errors that do not stop the run, and parquet that pandas, polars and DuckDB read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results import columns
from bench.results.store import load_run
from bench.sdk import registry

SLOW_FIXTURES = ("parse_run",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

runner = CliRunner()


@pytest.fixture(autouse=True, scope="module")
def _test_variants() -> Iterator[None]:
    """The plugin lists its `loop` and `broken` variants only for tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MISFIT_ECHO_TEST_VARIANTS", "1")
        yield


def bench_run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", "--sdk", "openai-parse", "--out", str(tmp_path), "--no-progress", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def parse_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("results")
    code, stdout, stderr = bench_run(
        out, "--variant", "default", "--variant", "broken",
        "--scenario", "valid", "--scenario", "wrong_persistent", "--scenario", "malformed_then_valid",
        "--scenario", "refusal_persistent", "--scenario", "http_429_then_valid",
    )  # fmt: skip
    return {"code": code, "stdout": stdout, "stderr": stderr, "run": load_run(out / "latest")}


def test_plugin_adapter_is_discovered_through_its_entry_point() -> None:
    assert registry.registrations()["openai-parse"].target == "misfit_echo:OpenAIParseAdapter"
    assert type(registry.load("openai-parse")).__name__ == "OpenAIParseAdapter"


@pytest.mark.slow
def test_outcomes_of_a_small_run(parse_run: dict) -> None:
    runs = parse_run["run"]["runs"]
    default = runs[(runs.variant == "default") & (runs["mode"] == "native")].set_index("scenario")
    assert default.loc["valid", "outcome"] == "ok"
    assert default.loc["wrong_persistent", "outcome"] == "wrong"
    # The openai client's parse() raises on JSON it cannot validate; it has no output retry.
    assert default.loc["malformed_then_valid", "outcome"] == "raised"
    assert default.loc["malformed_then_valid", "exception_type"] == "pydantic_core._pydantic_core.ValidationError"
    # A refusal parses to message.parsed None: no object, no exception.
    assert default.loc["refusal_persistent", "outcome"] == "empty"
    # max_retries=0 in this adapter: the 429 reaches the caller.
    assert default.loc["http_429_then_valid", "exception_type"] == "openai.RateLimitError"
    unsupported = runs[runs["mode"] == "tool"]
    assert set(unsupported.outcome) == {"unsupported"} and unsupported.model_calls.isna().all()


def test_harness_errors_are_recorded_and_the_run_goes_on(parse_run: dict) -> None:
    runs = parse_run["run"]["runs"]
    broken = runs[runs.variant == "broken"]
    assert set(broken.outcome) == {"harness_error"} and len(broken) == 5
    assert broken.harness_traceback.str.contains("adapter bug").all()
    assert set(broken.exception_type) == {"builtins.RuntimeError"}, "module.Class, as for raised"
    assert (runs[runs.variant == "default"].outcome != "harness_error").all()
    assert parse_run["code"] == 3, "harness errors make `bench run` exit 3"
    assert "harness errors occurred" in parse_run["stderr"]


def test_billed_tokens_are_the_sum_over_the_attempts_table(parse_run: dict) -> None:
    runs, attempts = parse_run["run"]["runs"], parse_run["run"]["attempts"]
    ran = runs[runs.model_calls > 0].set_index("cell_id")
    summed = attempts.groupby("cell_id")[["input_tokens", "output_tokens"]].sum()
    joined = ran.join(summed)
    assert (joined.input_tokens_billed == joined.input_tokens).all()
    assert (joined.output_tokens_billed == joined.output_tokens).all()
    valid = ran[ran.scenario == "valid"].iloc[0]
    assert valid.input_tokens_reported == valid.input_tokens_billed > 0


@pytest.mark.slow
def test_parquet_is_read_by_pandas_polars_and_duckdb(parse_run: dict) -> None:
    directory: Path = parse_run["run"]["path"]
    runs_file, attempts_file = directory / "runs.parquet", directory / "attempts.parquet"
    assert len(pd.read_parquet(runs_file)) == len(pl.read_parquet(runs_file)) == 15
    ((count,),) = duckdb.sql(f"select count(*) from read_parquet('{attempts_file}')").fetchall()
    assert count == len(pl.read_parquet(attempts_file)) > 0
    metadata = pq.read_schema(runs_file).metadata
    assert metadata[b"misfit_bench.schema_version"] == columns.SCHEMA_VERSION.encode()
    assert pq.read_schema(runs_file).names == columns.RUNS.names
    assert pq.read_schema(attempts_file).names == columns.ATTEMPTS.names


def test_every_parquet_field_carries_its_declared_description(parse_run: dict) -> None:
    directory: Path = parse_run["run"]["path"]
    for table, schema in columns.TABLES.items():
        written = pq.read_schema(directory / f"{table}.parquet")
        for field in schema:
            found = (written.field(field.name).metadata or {}).get(columns.DESCRIPTION, b"").decode()
            assert found == columns.description(field) != "", f"{table}.{field.name}"


def test_load_run_keeps_integer_and_boolean_columns_nullable(parse_run: dict) -> None:
    runs = parse_run["run"]["runs"]
    for field in columns.RUNS:
        if pa.types.is_integer(field.type):
            assert str(runs[field.name].dtype) == "Int64", field.name
        elif pa.types.is_boolean(field.type):
            assert str(runs[field.name].dtype) == "boolean", field.name
    # A harness error has no verdict and no usage: missing (<NA>), not NaN or None in an object column.
    harness = runs[runs.outcome == "harness_error"]
    assert len(harness) and harness["returned_valid"].isna().all() and harness["input_tokens_reported"].isna().all()
    assert runs["model_calls"].sum() > 0


def test_runs_rows_fill_every_design_column(parse_run: dict) -> None:
    design = [
        "run_id",
        "suite_id",
        "started_at",
        "sdk",
        "sdk_version",
        "mode",
        "mode_support",
        "variant",
        "protocol",
        "stream",
        "scenario",
        "task",
        "fault",
        "realistic",
        "rep",
        "seed",
        "outcome",
        "exception_type",
        "exception_message",
        "model_calls",
        "output_retries",
        "transport_retries",
        "input_tokens_billed",
        "output_tokens_billed",
        "input_tokens_reported",
        "output_tokens_reported",
        "latency_ms",
        "returned_valid",
        "returned_correct",
        "call_cap",
        "time_limit_s",
    ]
    runs = parse_run["run"]["runs"]
    assert set(design) <= set(runs.columns)
    ran = runs[(runs.outcome != "unsupported") & (runs.outcome != "harness_error")]
    for column in ("run_id", "started_at", "sdk_version", "model_calls", "latency_ms", "realistic", "detected_mode"):
        assert ran[column].notna().all(), column


def test_manifest_and_matrix(parse_run: dict) -> None:
    manifest = parse_run["run"]["manifest"]
    assert manifest["status"] == "complete" and manifest["cells_written"] == 15
    assert manifest["sdk_versions"]["openai-parse"]
    stdout = parse_run["stdout"]
    header, modes = stdout.splitlines()[:2]
    assert header.split() == ["openai-parse"] and modes.split() == ["scenario", "nat"] and "results:" in stdout


@pytest.mark.slow
def test_runaway_is_stopped_at_the_call_cap(tmp_path: Path) -> None:
    code, _, _ = bench_run(tmp_path, "--variant", "loop", "--scenario", "malformed_persistent", "--call-cap", "5")
    runs = load_run(tmp_path / "latest")["runs"]
    (row,) = runs.itertuples()
    assert code == 0 and row.outcome == "runaway" and row.model_calls == 5 and row.call_cap == 5


@pytest.mark.slow
def test_a_hang_is_a_timeout_within_the_limit(tmp_path: Path) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text("version: 1\nscenarios:\n  - {name: hang, task: person, script: [{slow: 3600}]}\n")
    code, _, _ = bench_run(
        tmp_path, "--variant", "default", "--mode", "native", "--scenarios", str(slow), "--time-limit", "1"
    )
    (row,) = load_run(tmp_path / "latest")["runs"].itertuples()
    assert code == 0 and row.outcome == "timeout" and row.time_limit_s == 1
    assert 1000 <= row.latency_ms < 1000 + 2000


@pytest.mark.slow  # about 8 s: four answers of 2 s
def test_a_loop_still_calling_past_the_time_limit_is_a_runaway_not_a_timeout(tmp_path: Path) -> None:
    """The time limit ends stalls, not progress: four malformed answers 2 s apiece take longer
    than the 6 s limit, yet no gap between a call and its answer or the next call comes near it, so
    the loop runs to its cap (a loaded machine slows each call; it must not change the outcome).
    The margin, 4 s a step beyond the answer's own 2 s, holds at a load average of 35 (a 1 s
    limit with 0.4 s answers did not: the cell's first request came after more than 1 s)."""
    slow = tmp_path / "slow.yaml"
    slow.write_text(
        "version: 1\nscenarios:\n  - {name: crawl, task: person, script: [{slow: {delay_s: 2, answer: malformed}}]}\n"
    )
    code, _, stderr = bench_run(
        tmp_path, "--variant", "loop", "--scenarios", str(slow), "--call-cap", "4", "--time-limit", "6"
    )
    (row,) = load_run(tmp_path / "latest")["runs"].itertuples()
    assert code == 0, stderr
    assert (row.outcome, row.model_calls, row.time_limit_s) == ("runaway", 4, 6)
    assert row.latency_ms >= 4 * 2000 > 6000, "it did outlast the limit"


@pytest.mark.slow
def test_input_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--sdk", "no-such-sdk", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown SDK 'no-such-sdk'; known:" in result.stderr
    result = runner.invoke(app, ["run", "--sdk", "openai-parse", "--scenario", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown scenario(s) nope" in result.stderr
    result = runner.invoke(app, ["run", "--sdk", "openai-parse", "--mode", "telepathy", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown mode 'telepathy'; known: native, prompted, tool" in result.stderr
    result = runner.invoke(app, ["run", "--sdk", "openai-parse", "--variant", "hardened", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown variant 'hardened'" in result.stderr
    result = runner.invoke(
        app, ["run", "--sdk", "openai-parse", "--mode", "tool", "--variant", "broken", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2 and result.stderr.count("\n") == 1  # refused, naming what emptied it
    assert "--sdk openai-parse: --mode tool with --variant broken leave it no cell" in result.stderr


def test_list_json_shows_installed_adapters() -> None:
    result = runner.invoke(app, ["list", "--json"])
    rows = {row["sdk"]: row for row in json.loads(result.stdout)}
    assert rows["openai-parse"]["installed"] is True
    assert rows["openai-parse"]["modes"] == ["native"] and rows["openai-parse"]["unsupported_cells"] == 1
    assert rows["openai-parse"]["variants"] == ["broken", "default", "loop"]
