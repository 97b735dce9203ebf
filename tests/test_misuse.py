"""Misuse a demanding user (or an attacker) tries: interruptions at the worst moment, two
writers on one run, proxies, hostile input. Each test drives the real path and fails without
the fix it guards (issue 20)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
import pytest

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from bench.provider.ledger import CLIENT_CLOSED
from bench.results.store import PARTS_DIR, PAUSE_ENV, RUNS_FILE, load_run, read_manifest, read_table
from tests.paths import FIXTURES
from tests.protocol_clients import chat_kwargs

BENCH = [sys.executable, "-m", "bench.cli"]
SMALL_RUN = ["--sdk", "agentmaker", "--protocol", "openai-chat", "--scenario", "valid", "--scenario",
             "malformed_then_valid", "--no-progress"]  # fmt: skip


def wait_until(condition: Callable[[], bool], process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Poll observable state (a file, a process) until ``condition`` holds; fail if the process
    ends first or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the run ended first (exit {process.returncode}): {process.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError("the awaited state never came")
        time.sleep(0.05)


def start_paused_at_merge(out: Path, marker: Path) -> subprocess.Popen[str]:
    """A real ``bench run`` that stops after writing runs.parquet, before removing its parts."""
    env = os.environ | {PAUSE_ENV: f"merged:{marker}"}
    command = [*BENCH, "run", *SMALL_RUN, "--out", str(out)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(marker.exists, process)
    return process


def the_run(out: Path) -> Path:
    (directory,) = [p for p in out.iterdir() if p.is_dir() and not p.is_symlink()]
    return directory


def cells_once(directory: Path) -> int:
    """How many cells the run holds, each counted once (no row or attempt is doubled)."""
    runs, attempts = read_table(directory, "runs"), read_table(directory, "attempts")
    cells = runs.column("cell_id").to_pylist()
    assert len(cells) == len(set(cells))
    keys = list(zip(*(attempts.column(name).to_pylist() for name in ("cell_id", "run_id", "attempt")), strict=True))
    assert len(keys) == len(set(keys)) and {key[0] for key in keys} <= set(cells)
    return len(cells)


def assert_each_cell_once(directory: Path) -> None:
    assert cells_once(directory) == read_manifest(directory)["cells_planned"]


def resume(directory: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != PAUSE_ENV}
    command = [*BENCH, "run", "--resume", str(directory), "--no-progress"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


PROMPT_S = 10.0
"""How soon after a signal the run must have exited (generous for a loaded CI machine; an
unloaded one takes well under a second)."""

SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])


def start_at(stage: str, out: Path) -> subprocess.Popen[str]:
    """A real ``bench run`` at ``stage``: expanding a plan of 900,000 cells (one scenario, 10
    cells, 90,000 reps: under the 1,000,000 cap whatever scenarios the library gains; the signal
    lands in the expansion, which goes on for seconds), paused with its folder
    made but no manifest yet, running cells (each at least 0.3 s, four at a time: seconds of
    cells left after the first part), or paused in the final merge."""
    if stage == "merge":
        process = start_paused_at_merge(out, out / "merged")
        directory = the_run(out)
        assert (directory / RUNS_FILE).exists() and (directory / PARTS_DIR).is_dir(), "paused at the named moment"
        return process
    env = {k: v for k, v in os.environ.items() if k != PAUSE_ENV}
    base = [*BENCH, "run", "--sdk", "agentmaker", "--protocol", "openai-chat", "--procs", "1", "--no-progress"]
    if stage in ("expanding", "created"):
        env[PAUSE_ENV] = f"{stage}:{out / stage}"
        plan = ["--scenario", "valid", "--reps", "90000" if stage == "expanding" else "1"]
        command = [*base, *plan, "--out", str(out)]
    else:
        command = [*base, "--scenario", "slow_then_valid", "--reps", "12", "--out", str(out)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if stage in ("expanding", "created"):
        wait_until((out / stage).exists, process)
    else:
        wait_until(lambda: any(out.glob(f"*/{PARTS_DIR}/runs-*.parquet")), process)
    return process


@pytest.mark.slow
@SIGNALS
@pytest.mark.parametrize("stage", ["expanding", "created", "cells", "merge"])
def test_a_signal_at_every_stage_ends_the_run_promptly_and_resumably(tmp_path: Path, stage: str, signum: int) -> None:
    """SIGINT or SIGTERM while the plan expands, before the manifest is written, while cells
    run, or during the final merge: exit 130 within seconds, no traceback; nothing written (no
    folder), or a run that holds each cell once and that ``--resume`` completes."""
    process = start_at(stage, tmp_path)
    process.send_signal(signum)
    try:
        _, stderr = process.communicate(timeout=PROMPT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"still running {PROMPT_S} s after {signal.Signals(signum).name} ({stage})") from None
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    folders = [path for path in tmp_path.iterdir() if path.is_dir()]
    if stage in ("expanding", "created"):  # no run yet: no folder left behind either
        assert folders == [] and "interrupted before any cell was written" in stderr, stderr
        return
    directory = the_run(tmp_path)
    assert read_manifest(directory)["status"] == "interrupted" and f"bench run --resume {directory}" in stderr
    written, planned = cells_once(directory), read_manifest(directory)["cells_planned"]
    assert written == planned if stage == "merge" else 0 < written < planned
    resumed = resume(directory)
    assert resumed.returncode == 0, resumed.stderr
    assert read_manifest(directory)["status"] == "complete" and not (directory / PARTS_DIR).exists()
    assert_each_cell_once(directory)


@pytest.mark.slow
def test_a_second_writer_is_refused_and_a_dead_writers_lock_is_taken_over(tmp_path: Path) -> None:
    """--resume on a run still being written is one line naming the holder; once the holder is
    SIGKILLed (mid-merge, its lock file left behind) the next --resume takes the run over."""
    process = start_paused_at_merge(tmp_path, tmp_path / "merged")
    directory = the_run(tmp_path)
    refused = resume(directory)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert f"pid {process.pid} on {socket.gethostname()}" in refused.stderr
    process.kill()
    process.communicate(timeout=60)
    assert read_manifest(directory)["status"] == "running", "killed: nothing got to say otherwise"
    assert_each_cell_once(directory)
    resumed = resume(directory)
    assert resumed.returncode == 0, resumed.stderr
    run = load_run(directory)
    assert run["manifest"]["status"] == "complete"
    assert_each_cell_once(directory)


def test_new_parts_never_overwrite_parts_left_on_disk(tmp_path: Path) -> None:
    """A merge cut short while removing parts leaves gaps in their numbers: new parts go after
    the highest number, not after the count (which would overwrite part 1 here)."""
    from bench.results.store import ResultsWriter

    directory = tmp_path / "run"
    writer = ResultsWriter(directory, flush_every=1)
    row = read_table(FIXTURES / "small_run", "runs").slice(0, 1).to_pylist()[0]
    row["cell_id"] = "a"
    writer.add(row, [])
    writer.add(row | {"cell_id": "b"}, [])
    (directory / PARTS_DIR / "runs-000000.parquet").unlink()
    later = ResultsWriter(directory)
    later.add(row | {"cell_id": "c"}, [])
    later.flush()
    assert sorted(read_table(directory, "runs").column("cell_id").to_pylist()) == ["b", "c"]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before_first_byte", "mid_stream"])
def test_a_request_in_flight_when_its_run_closes_is_in_the_ledger(provider: LocalProvider, where: str) -> None:
    """A timed-out cell's run is closed while its request is still being answered: the ledger
    read right after ``close()`` holds that request, every time (not only when the server
    happened to see the client leave before the runner read the ledger)."""
    run = provider.open_script("person", [{"slow": {"delay_s": 10, "where": where}}])
    body = chat_kwargs(Mode.NATIVE) | {"stream": where == "mid_stream"}
    client = httpx.Client(timeout=120)
    url = f"{run.endpoint.openai_base_url}/chat/completions"
    thread = threading.Thread(target=_post_quietly, args=(client, url, body), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while run.state.calls_started == 0:  # observable: the provider has the request and is answering
        assert time.monotonic() < deadline, "the request never reached the provider"
        time.sleep(0.01)
    run.close()
    (attempt,) = run.attempts
    assert (attempt.attempt, attempt.status_code) == (0, CLIENT_CLOSED) and attempt.request_bytes > 0
    thread.join(timeout=60)  # the answer ends by itself (10 s), after the run was closed
    client.close()
    assert not thread.is_alive() and len(run.attempts) == 1, "the answer's end does not record it again"


def _post_quietly(client: httpx.Client, url: str, body: dict) -> None:
    with contextlib.suppress(httpx.HTTPError), client.stream("POST", url, json=body) as response:
        for _ in response.iter_bytes():
            pass


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _proxy_env() -> dict[str, str]:
    proxy = f"http://127.0.0.1:{_dead_port()}"
    return {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")}


@pytest.mark.slow
def test_loopback_traffic_bypasses_a_proxy_for_every_sdk(tmp_path: Path) -> None:
    """With every proxy variable pointing at a dead proxy, all five SDKs (the Claude CLI
    included) still reach the provider: every cell makes its model calls, as without a proxy."""
    from bench.results.golden import BUILTIN_SDKS

    env = {k: v for k, v in os.environ.items() if k not in (PAUSE_ENV, "NO_PROXY", "no_proxy")} | _proxy_env()
    sdks = [arg for sdk in BUILTIN_SDKS for arg in ("--sdk", sdk)]
    command = [*BENCH, "run", *sdks, "--scenario", "valid", "--variant", "default", "--out", str(tmp_path)]
    result = subprocess.run([*command, "--no-progress"], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = load_run(tmp_path / "latest")["runs"]
    ran = runs[runs.outcome != "unsupported"]
    assert set(ran.sdk) == set(BUILTIN_SDKS) and (ran.model_calls >= 1).all()
    assert set(ran.outcome) == {"ok"}


def test_a_cell_no_request_reached_is_flagged_not_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the bypass, a proxy swallows every request: such a cell is a harness error that
    names the likely cause (and fails the run with exit 3), never an SDK outcome."""
    import bench.run.suite
    from bench.run.plan import Filters
    from bench.run.suite import SuiteRequest, run_suite

    for name, value in _proxy_env().items():
        monkeypatch.setenv(name, value)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(bench.run.suite, "loopback_bypasses_proxies", contextlib.nullcontext)
    filters = Filters(
        scenarios=frozenset({"valid"}), variants=frozenset({"default"}), protocols=frozenset({"openai-chat"})
    )
    directory = run_suite(SuiteRequest(sdks=("langchain",), filters=filters, results_root=tmp_path))
    runs = read_table(directory, "runs").to_pandas()
    ran = runs[runs.outcome != "unsupported"]
    seen = ran[["outcome", "model_calls", "exception_type", "exception_message"]].to_dict("records")
    assert len(ran) > 0 and set(ran.outcome) == {"harness_error"} and set(ran.model_calls) == {0}, seen
    assert ran.exception_message.str.contains("HTTP_PROXY").all()
    assert ran.exception_message.str.contains("(the SDK raised langchain_openai.", regex=False).all(), seen


def _connected_claude_clis(harness: int) -> list[psutil.Process]:
    """The Claude CLI processes under ``harness`` (they carry their cell's scratch HOME), once
    one of them has a connection open (to the provider)."""
    found = []
    for proc in psutil.Process(harness).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "misfit-claude-" in proc.environ().get("CLAUDE_CONFIG_DIR", ""):
                found.append(proc)
    with contextlib.suppress(psutil.Error):
        if any(connection.raddr for proc in found for connection in proc.net_connections("inet")):
            return found
    return []


@pytest.mark.slow
def test_sigkill_during_a_claude_cell_takes_the_cli_and_its_folder_with_it(tmp_path: Path) -> None:
    """SIGKILL leaves the harness no chance to clean up: the CLI, retrying a persistent 500,
    would go on for minutes against the dead provider; it dies with the harness (parent-death
    signal), and the next Claude run removes the dead harness's scratch folder."""
    from adapters.claude_agent_sdk import adapter as claude_agent_sdk

    hang = tmp_path / "e500.yaml"
    hang.write_text("version: 1\nscenarios:\n  - {name: e500, task: person, script: [{http_error: 500}]}\n")
    command = [*BENCH, "run", "--sdk", "claude-agent-sdk", "--variant", "default", "--scenarios", str(hang)]
    command += ["--time-limit", "600", "--out", str(tmp_path / "results"), "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clis: list[psutil.Process] = []
    try:
        wait_until(lambda: bool(clis.extend(_connected_claude_clis(process.pid)) or clis), process)
        scratch = Path(clis[0].environ()["HOME"]).parent
        process.kill()
        process.communicate(timeout=60)
        _, alive = psutil.wait_procs(clis, timeout=30)
        assert alive == [], "the CLI outlived the harness"
    finally:
        for proc in clis:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    assert scratch.is_dir()
    claude_agent_sdk._SWEPT.clear()
    claude_agent_sdk.sweep_stale_scratch()
    assert not scratch.exists()


def bench_cli(*args: object) -> tuple[int, str]:
    """``bench ARGS`` in-process; (exit code, stderr)."""
    from typer.testing import CliRunner

    from bench.cli import app

    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.stderr


def assert_one_line(code: int, stderr: str, *expected: str) -> None:
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and "Traceback" not in stderr, stderr
    for text in expected:
        assert text in stderr, stderr


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--seed", 2**64], "--seed: Input should be less than or equal to 9223372036854775807"),
        (["--time-limit", "0"], "--time-limit: Input should be greater than 0"),
        (["--time-limit", "-1"], "--time-limit: Input should be greater than 0"),
        (["--time-limit", "nan"], "--time-limit: Input should be a finite number"),
        (["--reps", "100000000"], "--reps: Input should be less than or equal to 100000"),
        (["--reps", "100000", "--suite", "full"], "a run may plan at most 1,000,000"),
    ],
    ids=["seed-65-bits", "time-limit-0", "time-limit-negative", "time-limit-nan", "reps-huge", "plan-huge"],
)
def test_run_settings_out_of_range_are_one_line_before_anything_runs(
    tmp_path: Path, flags: list[object], expected: str
) -> None:
    code, stderr = bench_cli("run", "--sdk", "agentmaker", "--out", tmp_path, "--no-progress", *flags)
    assert_one_line(code, stderr, expected)
    assert list(tmp_path.iterdir()) == [], "no run folder, and results/latest not moved"


def test_plan_size_counts_each_release_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agentmaker's full suite at 600 reps is 957,600 cells, under the cap; two releases of it
    plan twice that, refused before any environment is built (the build would be minutes)."""
    import bench.releases.prepare

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("an environment was prepared for a plan over the cap")

    monkeypatch.setattr(bench.releases.prepare, "prepare", no_build)
    releases = ["--release", "agentmaker==0.1.0", "--release", "agentmaker@pinned"]
    code, stderr = bench_cli("run", "--sdk", "agentmaker", "--out", tmp_path, "--no-progress", "--suite", "full",
                             "--reps", "600", *releases)  # fmt: skip
    assert_one_line(code, stderr, "the plan has 1,915,200 cells", "a run may plan at most 1,000,000")
    assert list(tmp_path.iterdir()) == []


def _resumable(tmp_path: Path) -> Path:
    """A run folder whose manifest says how it was made, as --resume reads it."""
    from bench.run.plan import Filters
    from bench.run.suite import SuiteRequest, request_to_json

    directory = tmp_path / "run"
    directory.mkdir()
    request = request_to_json(SuiteRequest(filters=Filters(scenarios=frozenset({"valid"}))), ("agentmaker",))
    (directory / "manifest.json").write_text(json.dumps({"suite_id": "x", "status": "interrupted", "request": request}))
    return directory


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"options": {"call_cap": 0}}, "field request.options.call_cap: Input should be greater than or equal to 1"),
        ({"options": {"time_limit_s": -1}}, "field request.options.time_limit_s: Input should be greater than 0"),
        ({"options": {"call_cap": "x"}}, "field request.options.call_cap: Input should be a valid integer"),
        ({"sdks": "pydantic-ai"}, "field request.sdks: Input should be a valid list"),
        ({"reps": 1e12}, "field request.reps: Input should be a valid integer"),
        ({"seed": 2**64}, "field request.seed: Input should be less than or equal to"),
        ({"surprise": True}, "field request.surprise: Extra inputs are not permitted"),
        ({"filters": "all"}, "field request.filters: Input should be a valid dictionary"),
    ],
    ids=[
        "call-cap-0",
        "time-limit-negative",
        "call-cap-string",
        "sdks-string",
        "reps-1e12",
        "seed-65-bits",
        "extra-field",
        "filters-string",
    ],
)
def test_a_hand_edited_manifest_is_one_line_naming_file_and_field(tmp_path: Path, edit: dict, expected: str) -> None:
    directory = _resumable(tmp_path)
    manifest = json.loads((directory / "manifest.json").read_text())
    for key, value in edit.items():
        if isinstance(value, dict):
            manifest["request"][key] |= value
        else:
            manifest["request"][key] = value
    (directory / "manifest.json").write_text(json.dumps(manifest))
    code, stderr = bench_cli("run", "--resume", directory)
    assert_one_line(code, stderr, f"{directory / 'manifest.json'}: {expected}", "cannot resume")


def test_a_part_with_foreign_columns_is_refused_by_every_reader(tmp_path: Path) -> None:
    """A parquet file dropped in parts/ by another tool would read as rows of nulls (reading
    with the declared schema drops unknown columns): resume, report and gate refuse it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = _resumable(tmp_path)
    (directory / PARTS_DIR).mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), directory / PARTS_DIR / "runs-000000.parquet")
    for command in (["run", "--resume", directory], ["report", directory], ["gate", directory]):
        code, stderr = bench_cli(*command)
        assert_one_line(code, stderr, "runs-000000.parquet: not a misfit-bench table: unknown column(s) x")


@pytest.mark.parametrize("kind", ["nested", "huge"])
def test_a_hostile_scenario_file_is_one_line(tmp_path: Path, kind: str) -> None:
    """Thousands of levels of nesting (once a RecursionError, exit 3) and a 20 MB file (once
    110 s and 2.3 GB to validate) are refused with one line."""
    from bench.scenarios.files import MAX_FILE_BYTES

    path = tmp_path / f"{kind}.yaml"
    head = "version: 1\nscenarios:\n  - name: deep\n    task: person\n    script: "
    if kind == "nested":
        path.write_text(head + "[" * 5000 + "valid" + "]" * 5000 + "\n")
        expected = "nested too deeply"
    else:
        path.write_text(head + "[valid]\n" + "# padding\n" * (MAX_FILE_BYTES // 10 + 1))
        expected = f"a scenario file may have at most {MAX_FILE_BYTES:,}"
    code, stderr = bench_cli("scenarios", "validate", path)
    assert_one_line(code, stderr, str(path), expected)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[1, 2]", "the body must be a JSON object, got list"),
        (b'"run"', "the body must be a JSON object, got str"),
        (b"{not json", "the body is not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "the body is not JSON"),
        (b'{"call_cap": "x"}', "field call_cap: Input should be a valid integer"),
        (b'{"call_cap": 0}', "field call_cap: Input should be greater than or equal to 1"),
        (b'{"script": ["malformd"]}', "unknown behaviour 'malformd'; did you mean 'malformed'?"),
        (b'{"scenario": "malformed_then_vaild"}', "did you mean 'malformed_then_valid'?"),
        (b'{"scenario": "valid", "script": ["valid"]}', "give either 'scenario' or 'task'"),
        (b'{"surprise": 1}', "field surprise: Extra inputs are not permitted"),
    ],
    ids=["list", "string", "not-json", "deep", "call-cap-string", "call-cap-0", "behaviour-typo", "scenario-typo",
         "scenario-and-script", "extra-field"],
)  # fmt: skip
def test_post_runs_answers_bad_bodies_with_one_line_in_the_api_error_shape(
    provider: LocalProvider, body: bytes, expected: str
) -> None:
    response = httpx.post(f"{provider.base_url}/runs", content=body, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and expected in error["message"]
    assert "\n" not in error["message"] and len(error["message"]) < 300


def test_post_runs_opens_a_named_scenario_and_answers_with_its_urls(provider: LocalProvider) -> None:
    """The scenario scripts the run (malformed first, then valid), and the URLs answered are the
    ones a client uses: the endpoint serves, the ledger shows what was served."""
    response = httpx.post(f"{provider.base_url}/runs", json={"scenario": "malformed_then_valid"}, timeout=30)
    assert response.status_code == 201, response.text
    run = response.json()
    assert run["openai_base_url"] == run["endpoint"] + "/v1" and run["anthropic_base_url"] == run["endpoint"]
    kwargs = chat_kwargs(Mode.NATIVE)
    first = httpx.post(f"{run['openai_base_url']}/chat/completions", json=kwargs, timeout=30).json()
    second = httpx.post(f"{run['openai_base_url']}/chat/completions", json=kwargs, timeout=30).json()
    with pytest.raises(ValueError):
        json.loads(first["choices"][0]["message"]["content"])
    assert json.loads(second["choices"][0]["message"]["content"])["name"]
    ledger = httpx.get(run["ledger"], timeout=30).json()
    assert [a["behaviour"].split(":")[0] for a in ledger["attempts"]] == ["malformed", "valid"]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_an_oversized_body_is_refused_unread_with_413_in_the_api_shape(provider: LocalProvider, path: str) -> None:
    from bench.provider.app import MAX_BODY_BYTES

    run = provider.open_script("person", ["valid"])
    body = b'{"messages": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = httpx.post(f"{run.endpoint.root}{path}", content=body, timeout=60)
    assert response.status_code == 413
    error = response.json()
    if path == "/v1/messages":
        assert error["type"] == "error" and error["error"]["type"] == "request_too_large"
    else:
        assert error["error"]["code"] == "request_too_large" and error["error"]["type"] == "invalid_request_error"
    assert run.attempts == [] and run.state.calls_started == 0


def test_post_runs_refuses_a_body_past_its_own_limit_with_413_unparsed(provider: LocalProvider) -> None:
    """``POST /runs`` takes at most MAX_ADMIN_BODY_BYTES, well under the app's 32 MB: a bigger
    body (here a run spec padded with whitespace, which opens a run once parsed) is refused in
    the same 413 shape, and no run is opened; the same spec at the limit opens one."""
    from bench.provider.admin import MAX_ADMIN_BODY_BYTES

    spec = b'{"scenario": "valid", "run_id": "admin-limit"}'
    at_limit = spec + b" " * (MAX_ADMIN_BODY_BYTES - len(spec))
    response = httpx.post(f"{provider.base_url}/runs", content=at_limit + b" ", timeout=60)
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "request_too_large" and error["type"] == "invalid_request_error"
    assert f"{MAX_ADMIN_BODY_BYTES:,} bytes" in error["message"]
    assert "admin-limit" not in provider.app.runs
    opened = httpx.post(f"{provider.base_url}/runs", content=at_limit, timeout=60)
    assert opened.status_code == 201, opened.text
    provider.close_run("admin-limit")


def test_a_serve_run_keeps_a_bounded_ledger(provider: LocalProvider) -> None:
    """A long-lived ``bench serve`` run keeps its last SERVE_LEDGER_LIMIT attempts, not every
    request body it was ever sent; the ledger says so."""
    run = provider.open_script("person", ["valid"], ledger_limit=3)
    with httpx.Client(timeout=30) as client:
        for _ in range(5):
            client.post(f"{run.endpoint.openai_base_url}/chat/completions", json=chat_kwargs(Mode.NATIVE))
        ledger = client.get(f"{provider.base_url}/runs/{run.run_id}/ledger").json()
    assert ledger["ledger_limit"] == 3 and [a["attempt"] for a in ledger["attempts"]] == [2, 3, 4]


def test_an_idle_connection_is_closed(provider: LocalProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that connects and sends half a request line, then nothing, is disconnected after
    the idle timeout instead of holding a descriptor forever."""
    from bench.provider import server

    monkeypatch.setattr(server, "IDLE_TIMEOUT_S", 0.5)
    with LocalProvider() as fresh, socket.create_connection((fresh.host, fresh.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/compl")
        assert sock.recv(1024) == b"", "the server closed the connection"


def test_serve_on_ipv6_loopback_prints_urls_a_client_can_use() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        provider = LocalProvider(host="::1").start()
    except OSError:
        pytest.skip("::1 cannot be bound here")
    try:
        assert provider.base_url.startswith("http://[::1]:")
        assert httpx.get(f"{provider.base_url}/health", timeout=30).json()["status"] == "ok"
    finally:
        provider.stop()
