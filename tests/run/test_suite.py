"""Bounded, isolated, durable runs: interrupted runs resume to the same table, hung cells are
killed within their limit with no process left behind, the default run needs no network and
writes no secret, and bad input never crashes a parser."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest

from bench.results import golden
from bench.results.store import PARTS_DIR, ResultsError, load_run, read_manifest, read_table
from bench.run.plan import Filters
from bench.run.runner import RunOptions
from bench.run.suite import SuiteRequest, run_suite

BENCH = [sys.executable, "-m", "bench.cli"]


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([*BENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_parts(out: Path, process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Poll the results folder until a committed part exists (observable state, not a sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if any(out.glob(f"*/{PARTS_DIR}/runs-*.parquet")):
            return
        time.sleep(0.1)
    raise AssertionError("no part was written before the deadline")


def _compare_with_golden(runs: pd.DataFrame, sdks: set[str], protocol: str = "openai-chat") -> list[str]:
    expected = golden.read()
    expected = expected[expected.sdk.isin(sdks) & (expected.protocol == protocol)]
    return golden.differences(runs, expected)


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_uninterrupted_table(tmp_path: Path) -> None:
    """Ctrl-C mid-run, then ``--resume``: the golden table. SIGTERM is the same path (the CLI
    turns it into SIGINT); tests/test_misuse.py interrupts every stage with either and resumes."""
    signum = signal.SIGINT
    sdks = ["pydantic-ai", "agentmaker"]
    sdk_args = [arg for sdk in sdks for arg in ("--sdk", sdk)]
    process = _start(["run", *sdk_args, "--protocol", "openai-chat", "--out", str(tmp_path), "--no-progress"])
    _wait_for_parts(tmp_path, process)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "bench run --resume" in stderr and "Traceback" not in stderr
    (directory,) = [p for p in tmp_path.iterdir() if p.is_dir() and not p.is_symlink()]
    assert read_manifest(directory)["status"] == "interrupted"
    partial = read_table(directory, "runs").to_pandas()
    assert 0 < len(partial) < read_manifest(directory)["cells_planned"], "the interrupt came mid-run"

    resumed = subprocess.run(
        [*BENCH, "run", "--resume", str(directory), "--no-progress"], capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    run = load_run(directory)
    assert run["manifest"]["status"] == "complete" and run["manifest"]["resumed"]
    assert run["runs"].cell_id.is_unique and len(run["runs"]) == run["manifest"]["cells_planned"]
    assert not (directory / PARTS_DIR).exists()
    assert _compare_with_golden(run["runs"], set(sdks)) == []


@pytest.mark.slow
def test_a_hung_cli_cell_is_killed_within_its_limit_and_leaves_no_process(tmp_path: Path) -> None:
    hang = tmp_path / "hang.yaml"
    hang.write_text("version: 1\nscenarios:\n  - {name: hang, task: person, script: [{slow: 3600}]}\n")
    started = time.monotonic()
    directory = run_suite(
        SuiteRequest(
            sdks=("claude-agent-sdk",),
            filters=Filters(variants=frozenset({"default"})),
            scenario_paths=(hang,),
            results_root=tmp_path,
            options=RunOptions(time_limit_s=4),
        )
    )
    elapsed = time.monotonic() - started
    runs = read_table(directory, "runs").to_pandas()
    ran = runs[runs.outcome != "unsupported"]
    assert set(ran.outcome) == {"timeout"}
    assert (ran.latency_ms < (4 + 5) * 1000).all(), "killed within the limit plus a small grace"
    assert elapsed < 60
    leftovers = [
        p for p in psutil.Process().children(recursive=True) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert leftovers == [], [p.cmdline()[:2] for p in leftovers]


SECRETS = {
    "OPENAI_API_KEY": "sk-proj-LEAKCANARY0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-api03-LEAKCANARY0123456789",
    "ANTHROPIC_AUTH_TOKEN": "LEAKCANARY-auth-token-42",
    "LANGSMITH_API_KEY": "lsv2_pt_LEAKCANARY",
}


@pytest.fixture
def secret_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SECRETS.items():
            patch.setenv(name, value)
        yield


@pytest.mark.slow
def test_no_secret_from_the_environment_reaches_any_result_file(tmp_path: Path, secret_env: None) -> None:
    directory = run_suite(
        SuiteRequest(
            sdks=golden.BUILTIN_SDKS,
            filters=Filters(scenarios=frozenset({"valid", "malformed_then_valid"}), variants=frozenset({"default"})),
            results_root=tmp_path,
            options=RunOptions(record_bodies=True),
        )
    )
    runs = read_table(directory, "runs").to_pandas()
    assert (runs.outcome != "harness_error").all()
    for path in directory.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            for value in SECRETS.values():
                assert value.encode() not in content, f"{path.name} contains {value[:12]}..."


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare to make a network namespace")
def test_the_default_run_needs_no_network(tmp_path: Path) -> None:
    """Inside a network namespace with only loopback, every SDK still completes as usual."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("this machine does not allow creating a network namespace")
    command = " ".join(
        [
            "ip link set lo up &&", sys.executable, "-m bench.cli run --no-progress",
            *(f"--sdk {sdk}" for sdk in golden.BUILTIN_SDKS),
            "--scenario valid --scenario malformed_then_valid --scenario http_429_then_valid",
            f"--out {tmp_path}",
        ]
    )  # fmt: skip
    result = subprocess.run(["unshare", "-n", "sh", "-c", command], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = load_run(tmp_path / "latest")["runs"]
    assert _compare_with_golden(runs, set(golden.BUILTIN_SDKS)) == [] or _only_missing(runs)


def _only_missing(runs: pd.DataFrame) -> bool:
    """The namespaced run covers three scenarios: every cell it ran equals the golden one."""
    expected = golden.read()
    ran = golden.golden_frame(runs)
    merged = ran.merge(expected, on=golden.KEY, suffixes=("", "_golden"))
    assert len(merged) == len(ran) > 0

    def text(column: pd.Series) -> pd.Series:  # a missing value (no tokens reported) as text too: NaN != NaN
        return column.astype(object).where(column.notna(), "<null>").astype(str)

    for value in golden.VALUES:
        assert (text(merged[value]) == text(merged[f"{value}_golden"])).all(), value
    return True


@pytest.mark.parametrize("damage", ["parquet", "manifest"])
def test_a_corrupt_run_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    from bench.run.suite import request_to_json

    directory = tmp_path / "run"
    directory.mkdir()
    request = request_to_json(SuiteRequest(filters=Filters(scenarios=frozenset({"valid"}))), ("agentmaker",))
    manifest = {"suite_id": "x", "status": "interrupted", "request": request if damage == "parquet" else {"sdks": 1}}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    (directory / "runs.parquet").write_bytes(b"PAR1 this is not parquet")
    if damage == "parquet":
        with pytest.raises(ResultsError, match="cannot read the runs table"):
            read_table(directory, "runs")
    result = subprocess.run([*BENCH, "run", "--resume", str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and str(directory) in result.stderr


def test_a_manifest_names_built_in_scenarios_portably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A committed baseline must not carry the checkout it was made in: the built-in scenarios are
    recorded relative to the project and found again from any working directory; a user's own
    scenario file keeps its absolute path."""
    from bench.run.suite import request_from_json, request_to_json
    from bench.scenarios.files import SCENARIO_DIR

    own = tmp_path / "mine.yaml"
    recorded = request_to_json(SuiteRequest(scenario_paths=(SCENARIO_DIR, own)), ("agentmaker",))
    assert recorded["scenario_paths"] == ["scenarios", str(own.resolve())]
    monkeypatch.chdir(tmp_path)
    restored = request_from_json(json.loads(json.dumps(recorded)), tmp_path)
    assert restored.scenario_paths == (SCENARIO_DIR, own.resolve())


@pytest.mark.slow
def test_nothing_outlives_a_run_and_the_environment_is_unchanged(tmp_path: Path) -> None:
    """No thread, socket or child process, and no environment variable change, after a run of
    every SDK (the SDKs cache HTTP clients in globals: the run closes their connections)."""
    import threading

    before_env, before_threads = dict(os.environ), set(threading.enumerate())
    scenarios = frozenset({"valid", "malformed_persistent"})
    run_suite(SuiteRequest(sdks=golden.BUILTIN_SDKS, filters=Filters(scenarios=scenarios), results_root=tmp_path))
    assert dict(os.environ) == before_env
    assert set(threading.enumerate()) <= before_threads
    tcp = [c for c in psutil.Process().net_connections(kind="tcp") if c.status != psutil.CONN_LISTEN]
    assert tcp == [], tcp[:5]
    assert [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE] == []
