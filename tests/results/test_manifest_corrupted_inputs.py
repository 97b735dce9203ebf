"""Hand-corrupted run folders through every command that reads them (issue 26, point 6): each is
one line naming the file and the field, exit 2, never a traceback (exit 3); and a broken run in
a results folder leaves ``bench runs`` and ``bench view`` working for the others."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.manifest import MAX_DEPTH

SMALL_RUN = Path(__file__).resolve().parent.parent / "fixtures" / "small_run"


def bench(*args: object) -> tuple[int, str, str]:
    """``bench ARGS`` in-process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.stdout, result.stderr


def assert_one_line(code: int, stderr: str, *expected: str) -> None:
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and "Traceback" not in stderr, stderr
    for text in expected:
        assert text in stderr, stderr


def a_run(root: Path, name: str = "20991231-000000-bad0", status: str = "interrupted") -> Path:
    """A copy of the small fixture run under ``root``, as a run a user might hand-edit."""
    directory = root / name
    shutil.copytree(SMALL_RUN, directory)
    edit_manifest(directory, lambda manifest: manifest | {"status": status})
    return directory


def edit_manifest(directory: Path, edit: Callable[[dict], dict]) -> None:
    path = directory / "manifest.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def edit_column(directory: Path, name: str, values: list[object]) -> None:
    """Write ``runs.parquet`` with ``name`` replaced (declared nullable, as another tool would)."""
    table = pq.read_table(directory / "runs.parquet")
    index = table.column_names.index(name)
    table = table.set_column(index, pa.field(name, pa.string()), pa.array(values, pa.string()))
    pq.write_table(table, directory / "runs.parquet")


def nested(directory: Path) -> None:
    depth = 100_000  # once a RecursionError in json.loads
    (directory / "manifest.json").write_text('{"suite_id": "x", "options": ' + "[" * depth + "]" * depth + "}")


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "nested-manifest": (nested, f"manifest.json: nested more than {MAX_DEPTH} levels deep"),
    "sdk-versions-list": (
        lambda d: edit_manifest(d, lambda m: m | {"sdk_versions": ["pydantic-ai"]}),
        "manifest.json: field sdk_versions: Input should be a valid dictionary",
    ),
    "environment-errors-int": (
        lambda d: edit_manifest(d, lambda m: m | {"environment_errors": 5}),
        "manifest.json: field environment_errors: Input should be a valid list",
    ),
    "started-at-object": (
        lambda d: edit_manifest(d, lambda m: m | {"started_at": {"at": 1}}),
        "manifest.json: field started_at: Input should be a valid string",
    ),
    "null-sdk": (
        lambda d: edit_column(d, "sdk", [None] * 210),
        "runs.parquet: column sdk: 210 null value(s) in a column that is never null",
    ),
    "unknown-outcome": (
        lambda d: edit_column(d, "outcome", ["ok"] * 209 + ["exploded"]),
        "runs.parquet: column outcome: unknown outcome(s) 'exploded'",
    ),
}

COMMANDS = {
    "gate": lambda d: ["gate", d, "--baseline", SMALL_RUN],
    "report": lambda d: ["report", d],
    "view": lambda d: ["view", d, "--export", d.parent / "export"],
    "resume": lambda d: ["run", "--resume", d, "--no-progress"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", CASES)
def test_a_corrupted_run_is_one_line_and_exit_2_in_every_command(tmp_path: Path, case: str, command: str) -> None:
    corrupt, expected = CASES[case]
    directory = a_run(tmp_path)
    corrupt(directory)
    code, _, stderr = bench(*COMMANDS[command](directory))
    assert_one_line(code, stderr, f"{directory}/{expected}")


def test_the_gate_refuses_an_unknown_outcome_in_the_baseline_too(tmp_path: Path) -> None:
    baseline = a_run(tmp_path, status="complete")
    edit_column(baseline, "outcome", ["exploded"] * 210)
    code, _, stderr = bench("gate", SMALL_RUN, "--baseline", baseline)
    assert_one_line(code, stderr, f"{baseline}/runs.parquet: column outcome: unknown outcome(s) 'exploded'")


def test_a_manifest_past_its_size_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.results.store as store

    monkeypatch.setattr(store, "MANIFEST_MAX_BYTES", 1000)
    directory = a_run(tmp_path)
    code, _, stderr = bench("report", directory)
    assert_one_line(code, stderr, f"{directory}/manifest.json:", "bytes; a manifest may have at most 1,000")


@pytest.mark.slow
def test_broken_runs_leave_bench_runs_and_view_working_for_the_others(tmp_path: Path) -> None:
    """Every case of :data:`CASES` at once, a broken run each, beside one good run: ``bench runs``
    lists each broken one as unreadable with its own reason, ``bench view`` skips each by name
    and exports the good one. One folder, not one per case: a view export costs seconds of CPU."""
    good = a_run(tmp_path, "20990101-000000-good", status="complete")
    bad: dict[str, Path] = {}
    for number, (case, (corrupt, _expected)) in enumerate(CASES.items()):
        bad[case] = a_run(tmp_path, f"20991231-00000{number}-bad{number}")
        corrupt(bad[case])
    code, stdout, stderr = bench("runs", "--results", tmp_path, "--json")
    assert code == 0, stderr
    listed = {run["id"]: run for run in json.loads(stdout)}
    assert listed[good.name]["status"] == "complete"
    for case, directory in bad.items():
        status = listed[directory.name]["status"]
        assert status.startswith("unreadable: ") and CASES[case][1] in status, (case, status)
    code, stdout, stderr = bench("view", "--results", tmp_path, "--export", tmp_path / "export")
    assert code == 0, stderr
    for directory in bad.values():
        assert f"bench view: skipped run {directory.name}, unreadable: " in stderr, stderr
    assert ", 1 runs)" in stdout
