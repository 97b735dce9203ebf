"""agno's own environment: a lock that cannot be installed is one line naming agno and uv's reason
(exit 2), and the other SDKs of the run are measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.agno.adapter import AgnoAdapter
from bench.cli import app
from bench.results.store import latest_run, load_run
from tests.adapters.agno.agno_registration import agno_registered

pytestmark = pytest.mark.slow


def test_a_lock_that_cannot_be_installed_is_one_line_and_the_rest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv fails on a wheel that is not there without reaching any index (nothing leaves the machine)."""
    broken = tmp_path / "broken.txt"
    broken.write_text(f"agno @ file://{tmp_path}/agno-3.1.10-py3-none-any.whl\n")
    monkeypatch.setattr(AgnoAdapter, "environment", str(broken))
    out = tmp_path / "runs"
    args = ["run", "--sdk", "agno", "--sdk", "openai-client", "--scenario", "valid", "--out", str(out), "--no-progress"]
    with agno_registered(tmp_path / "registration"):
        result = CliRunner().invoke(app, args, env={"MISFIT_BENCH_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: agno (its own environment, broken.txt): cannot build the environment: ")
    assert "agno-3.1.10-py3-none-any.whl" in line
    directory = latest_run(out)
    assert directory is not None
    runs = load_run(directory)["runs"]
    assert set(runs.sdk) == {"openai-client"} and "ok" in set(runs.outcome)
