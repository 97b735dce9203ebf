"""DSPy's own environment as ``bench run`` reads it: the version is the lock's, and a lock that
cannot be installed is one line naming DSPy and uv's reason (exit 2) while the other SDKs' cells
of the same run are measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.dspy.adapter import DSPyAdapter
from bench.cli import app
from bench.results.store import latest_run, load_run
from bench.sdk.environment import locked_version


def test_the_version_dspy_reports_is_the_locks() -> None:
    assert locked_version(DSPyAdapter()) == "3.4.1"


@pytest.mark.slow
def test_a_dspy_lock_that_cannot_be_installed_is_one_line_and_the_rest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv fails on a wheel that is not there without reaching any index (nothing leaves the machine)."""
    broken = tmp_path / "broken.txt"
    broken.write_text(f"dspy @ file://{tmp_path}/dspy-3.4.1-py3-none-any.whl\n")
    monkeypatch.setattr(DSPyAdapter, "environment", str(broken))  # absolute: beside nothing
    out = tmp_path / "runs"
    args = ["run", "--sdk", "dspy", "--sdk", "openai-client", "--scenario", "valid", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--no-progress"], env={"MISFIT_BENCH_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: dspy (its own environment, broken.txt): cannot build the environment: ")
    assert "dspy-3.4.1-py3-none-any.whl" in line
    directory = latest_run(out)
    assert directory is not None
    runs = load_run(directory)["runs"]
    assert set(runs.sdk) == {"openai-client"} and "ok" in set(runs.outcome)
