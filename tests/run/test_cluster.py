"""``bench run --executor ray`` (bench.run.cluster): cells as Ray tasks, written by the driver.

One local Ray (two CPUs) serves the whole module: starting one costs seconds. The runs go
through the CLI in-process (CliRunner), which joins the Ray this module started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest
import ray
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import PARTS_DIR, latest_run, load_run, read_manifest
from bench.run import cluster
from bench.run.suite import SuiteRequest, run_suite

runner = CliRunner()
SMALL = ["--sdk", "openai-parse", "--reps", "2"]
KEY = ["outcome", "model_calls", "exception_type", "output_retries", "transport_retries", "sdk_version"]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    """Started after tests/conftest.py put the test plugin on PYTHONPATH: its workers inherit it.
    Its address, for a ``bench run`` process that joins it through ``RAY_ADDRESS``."""
    for name, value in cluster.LOCAL_CLUSTER_ENV.items():  # as bench starts a local cluster
        os.environ.setdefault(name, value)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def bench(*args: object) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _table(directory: Path) -> pd.DataFrame:
    return load_run(directory)["runs"].set_index("cell_id")[KEY].sort_index()


def _run(out: Path, *args: object) -> Path:
    code, _, stderr = bench("run", "--no-progress", "--out", out, *args)
    assert code == 0, stderr
    directory = latest_run(out)
    assert directory is not None
    return directory


def test_without_ray_it_is_one_line_with_the_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    code, _, stderr = bench("run", *SMALL, "--out", tmp_path, "--executor", "ray")
    assert code == 2 and "pip install 'misfit-bench[ray]'" in stderr and "Traceback" not in stderr, stderr
    assert not any(tmp_path.iterdir())  # refused before any run folder exists
    code, _, stderr = bench("run", *SMALL, "--out", tmp_path, "--executor", "ray", "--procs", "2")
    assert code == 2 and "--procs applies to --executor local" in stderr


def test_a_local_cluster_runs_its_workers_at_the_niceness_of_a_shard_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's default (niceness 15) put the cells behind every other process on the machine."""
    seen: dict[str, str | None] = {}

    class _Ray:
        @staticmethod
        def init(**options: object) -> None:
            seen.update({name: os.environ.get(name) for name in ("RAY_worker_niceness", "RAY_USAGE_STATS_ENABLED")})

    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    cluster._start(_Ray)  # type: ignore[arg-type]
    assert seen == {"RAY_worker_niceness": "0", "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.mark.slow
def test_the_table_is_the_in_process_one_and_rerun_works_on_ray(
    tmp_path: Path, local_ray: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "CELLS_PER_TASK", 10)  # 54 runnable cells: six tasks over two CPUs
    local = _run(tmp_path / "local", *SMALL, "--procs", "1")
    on_ray = _run(tmp_path / "ray", *SMALL, "--executor", "ray")
    manifest = read_manifest(on_ray)
    assert manifest["executor"] == "ray" and manifest["status"] == "complete" and not (on_ray / PARTS_DIR).exists()
    assert manifest["ray"]["tasks"] == 6 and manifest["ray"]["retried"] == 0, manifest["ray"]
    pd.testing.assert_frame_equal(_table(local), _table(on_ray))
    assert load_run(on_ray)["runs"].suite_id.nunique() == 1
    code, _, stderr = bench("run", "--rerun", on_ray, "--outcome", "raised", "--executor", "ray", "--no-progress")
    assert code == 0, stderr
    pd.testing.assert_frame_equal(_table(local), _table(on_ray))
    assert read_manifest(on_ray)["reruns"][0]["cells"] > 0


def _kill_a_task_once_cells_arrive(received: list[str], killed: list[int]) -> None:
    """SIGKILL the Ray worker running one of the run's tasks (``ray::run_unit``), as a node's
    OOM killer would, once the driver holds a first cell."""
    deadline = time.monotonic() + 300
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    while not killed and time.monotonic() < deadline:
        for process in psutil.process_iter(["pid", "cmdline"]):
            if (process.info["cmdline"] or [""])[0].startswith("ray::run_unit"):
                os.kill(process.info["pid"], signal.SIGKILL)
                killed.append(process.info["pid"])
                return
        time.sleep(0.05)


@pytest.mark.slow
def test_a_killed_ray_worker_is_retried_and_nothing_is_doubled(
    tmp_path: Path, local_ray: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "CELLS_PER_TASK", 54)  # two tasks, one per CPU: the kill lands mid-task
    local = _run(tmp_path / "local", "--sdk", "openai-parse", "--reps", "4", "--procs", "1")
    received: list[str] = []
    killed: list[int] = []
    killer = threading.Thread(target=_kill_a_task_once_cells_arrive, args=(received, killed), daemon=True)
    killer.start()
    request = SuiteRequest(sdks=("openai-parse",), reps=4, results_root=tmp_path / "ray", executor="ray")
    directory = run_suite(request, on_record=lambda cell: received.append(cell.run["cell_id"]))
    killer.join(timeout=10)
    assert killed, "no Ray task was found to kill"
    manifest = read_manifest(directory)
    assert manifest["ray"]["retried"] == 1 and manifest["status"] == "complete", manifest["ray"]
    runs = load_run(directory)["runs"]
    assert runs.cell_id.is_unique and len(runs) == manifest["cells_planned"] == len(received)
    pd.testing.assert_frame_equal(_table(local), _table(directory))


@pytest.mark.slow
def test_each_release_environment_is_prepared_once_in_one_task(tmp_path: Path, local_ray: str) -> None:
    """A release environment's cells are one unit: its task finds the environment the driver
    built (or reused) and builds nothing, and its workers run in the release's Python."""
    releases = ["--release", "openai-agents==0.15.0", "--release", "openai-agents@pinned"]
    cells = [
        "--mode", "native", "--protocol", "openai-chat", "--variant", "default",
        "--scenario", "valid", "--scenario", "refusal_then_valid",
    ]  # fmt: skip
    local = _run(tmp_path / "local", *releases, *cells)
    on_ray = _run(tmp_path / "ray", *releases, *cells, "--executor", "ray")
    report = read_manifest(on_ray)["ray"]
    assert report["tasks_per_environment"] == {"openai-agents==0.15.0": 1, "pinned": 1}, report
    assert report["environment_builds"] == [] and report["retried"] == 0, report
    runs = load_run(on_ray)["runs"]
    assert set(runs[runs.environment == "openai-agents==0.15.0"].sdk_version) == {"0.15.0"}
    pd.testing.assert_frame_equal(_table(local), _table(on_ray))


@pytest.mark.slow
def test_an_interrupt_keeps_what_the_tasks_sent_and_resume_on_ray_finishes(tmp_path: Path, local_ray: str) -> None:
    """A ``bench run`` process joining the cluster at ``RAY_ADDRESS``, stopped by SIGINT once a part is
    written: exit 130, an interrupted run of the cells received; ``--resume`` on Ray runs the rest."""
    command = [sys.executable, "-m", "bench.cli", "run", *SMALL[:2], "--reps", "12", "--executor", "ray"]
    process = subprocess.Popen(
        [*command, "--out", str(tmp_path), "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "RAY_ADDRESS": local_ray},
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not any(tmp_path.glob(f"*/{PARTS_DIR}/runs-*.parquet")):  # observable state, not a sleep
        assert time.monotonic() < deadline and process.poll() is None, "no part was written"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    directory = latest_run(tmp_path)
    assert directory is not None
    manifest = read_manifest(directory)
    assert manifest["status"] == "interrupted" and manifest["ray"]["tasks"] > 0
    assert 0 < load_run(directory)["runs"].shape[0] < manifest["cells_planned"]
    code, _, stderr = bench("run", "--resume", directory, "--executor", "ray", "--no-progress")
    assert code == 0, stderr
    run = load_run(directory)
    assert run["runs"].cell_id.is_unique and len(run["runs"]) == run["manifest"]["cells_planned"]


@pytest.mark.slow
def test_a_node_on_another_version_refuses_and_the_run_says_so(
    tmp_path: Path, local_ray: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's misfit-bench is not the workers': their tasks refuse to run, in one line."""
    monkeypatch.setattr("bench.run.suite.harness_version", lambda: "0.0.0-elsewhere")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(tmp_path), "--executor", "ray", "--no-progress"])
    (line,) = result.stderr.strip().splitlines()  # one line, exit 2: the cluster is not the driver's
    assert result.exit_code == 2, result.stderr
    assert line.startswith("error: a Ray task of the run failed: RuntimeError: this node runs misfit-bench "), line
    assert line.endswith("the driver 0.0.0-elsewhere"), line
    directory = latest_run(tmp_path)
    assert directory is not None and read_manifest(directory)["status"] == "interrupted"
