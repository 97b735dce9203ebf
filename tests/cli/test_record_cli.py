"""``bench record`` and ``bench serve --cassettes`` as a user runs them, each its own process:
record through the proxy in front of ``bench serve``, stop it with Ctrl-C, replay the folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.core.vocabulary import Mode, Protocol
from bench.sdk.adapter import Endpoint
from tests.cassette_recorder import SECRET, raw_reply


@contextmanager
def bench(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A long-running bench command; its base URL (first line of stdout) and the process."""
    command = [sys.executable, "-m", "bench.cli", *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)/v1", first)
        assert match, f"unexpected first line: {first!r}"
        yield match.group(1), process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


def test_record_then_replay_with_no_key(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    with (
        bench("serve", "--port", "0") as (upstream, _),
        bench("record", "--upstream", upstream, "--out", str(folder), "--port", "0") as (proxy, recorder),
    ):
        seen = raw_reply(Protocol.CHAT, Mode.NATIVE, True, Endpoint(root=proxy, api_key=SECRET))
        recorder.send_signal(signal.SIGINT)
        assert recorder.wait(timeout=10) == 0
        _, err = recorder.communicate(timeout=10)
        assert "1 cassette(s) written" in err
    [cassette] = list(folder.iterdir())
    assert SECRET not in cassette.read_text()
    with bench("serve", "--port", "0", "--cassettes", str(folder)) as (replay, _):
        assert raw_reply(Protocol.CHAT, Mode.NATIVE, True, Endpoint(root=replay, api_key="none")) == seen


def test_an_unreadable_cassette_is_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "0000-openai-chat-x.json").write_text('{"cassette_version": 1, "protocol": "openai-chat"}')
    result = subprocess.run(
        [sys.executable, "-m", "bench.cli", "serve", "--port", "0", "--cassettes", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "0000-openai-chat-x.json: field provenance" in result.stderr


def test_record_refuses_an_upstream_that_is_not_a_url(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.cli", "record", "--upstream", "api.openai.com", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "expected http(s)://HOST" in result.stderr and "Traceback" not in result.stderr


OWN_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "own_agent"


def test_record_runs_your_agent_on_its_declared_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench record --agent support``: the agent runs once through the proxy, the upstream (the
    provider, answering the agent's own type) gets the key from OPENAI_API_KEY, the cassette not."""
    from typer.testing import CliRunner

    from bench.cli import app
    from bench.own.adapter import load_agents
    from bench.provider import LocalProvider
    from bench.scenarios.behaviours import Script, Valid

    monkeypatch.chdir(OWN_PROJECT)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    task = load_agents(["support"], OWN_PROJECT)["support"].task
    folder = tmp_path / "cassettes"
    with LocalProvider() as upstream, upstream.open_run(task, Script([Valid()])) as run:
        args = ["record", "--upstream", run.endpoint.root, "--out", str(folder), "--port", "0", "--agent", "support"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(run.attempts) == 1
    assert "agent support: 1 exchange(s) recorded" in result.stderr
    [cassette] = list(folder.iterdir())
    assert SECRET not in cassette.read_text() and "CSV" in cassette.read_text()


def test_record_agent_needs_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    monkeypatch.chdir(OWN_PROJECT)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = ["record", "--upstream", "http://127.0.0.1:9", "--out", str(tmp_path), "--agent", "support"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "set OPENAI_API_KEY to your key" in result.stderr


def test_serve_refuses_redact_without_cassettes() -> None:
    """As `bench run` does: a flag that applies to nothing is refused, not ignored."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.cli", "serve", "--port", "0", "--redact", "secret"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr == "error: --redact applies to --cassettes only\n"


@pytest.mark.slow
def test_ctrl_c_while_your_agent_waits_on_the_upstream_stops_the_recording(tmp_path: Path) -> None:
    """With --agent the command waits on the agent's own call: Ctrl-C interrupts that call, the
    proxy stops, and the command ends 130 (the proxy-only wait for a signal is not installed)."""
    import os
    import signal
    import time

    from bench.own.adapter import load_agents
    from bench.provider import LocalProvider
    from bench.scenarios.behaviours import Script, Slow, Valid

    task = load_agents(["support"], OWN_PROJECT)["support"].task
    env = os.environ | {"OPENAI_API_KEY": SECRET, "PYTHONPATH": str(OWN_PROJECT.parents[1])}
    with LocalProvider() as upstream, upstream.open_run(task, Script([Slow(delay_s=120, answer=Valid())])) as run:
        args = ["record", "--upstream", run.endpoint.root, "--out", str(tmp_path), "--port", "0", "--agent", "support"]
        process = subprocess.Popen([sys.executable, "-m", "bench.cli", *args], cwd=OWN_PROJECT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]  # the proxy listens: the agent starts
        assert lines[1].startswith("Anthropic base URL"), lines
        deadline = time.monotonic() + 120  # a stall, not slowness: the call arrives in about a second
        while run.state.calls_started == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the agent's call waits on the 120 s answer (a read of the ledger)
        assert run.state.calls_started == 1 and process.poll() is None
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted: 0 cassette(s) written" in stderr and "Traceback" not in stderr


def test_record_agent_all_beside_a_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    monkeypatch.chdir(OWN_PROJECT)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    args = [
        "record",
        "--upstream",
        "http://127.0.0.1:9",
        "--out",
        str(tmp_path),
        "--agent",
        "all",
        "--agent",
        "support",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "--agent all means every declared agent: give it alone" in result.stderr


@pytest.mark.slow
def test_serve_skips_a_partial_cassette_only_under_skip_bad(tmp_path: Path) -> None:
    """A cassette cut short (an interrupted copy) beside a good one: refused as before, one line
    naming it, exit 2; with ``--skip-bad`` named in a warning, and the good one served."""
    from tests.cassette_recorder import PROMPT_PHRASE, record

    folder = tmp_path / "cassettes"
    combo = (Protocol.CHAT, Mode.NATIVE, False)
    seen = record(folder, ["valid"], [combo])[combo]
    [good] = list(folder.iterdir())
    partial = folder / "0001-openai-chat-partial.json"
    partial.write_text(good.read_text()[:200])
    refused = subprocess.run(
        [sys.executable, "-m", "bench.cli", "serve", "--port", "0", "--cassettes", str(folder)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: --cassettes {partial}: not a JSON cassette")
    serve = ("serve", "--port", "0", "--cassettes", str(folder), "--redact", PROMPT_PHRASE.patterns[0])
    with bench(*serve, "--skip-bad") as (replay, server):
        assert raw_reply(*combo, Endpoint(root=replay, api_key="none")) == seen
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=10)
    assert err.startswith(f"warning: --skip-bad: skipped {partial}: not a JSON cassette"), err


def test_skip_bad_applies_to_cassettes_only() -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    result = CliRunner().invoke(app, ["serve", "--port", "0", "--skip-bad"])
    assert result.exit_code == 2 and result.stderr == "error: --skip-bad applies to --cassettes only\n"


@pytest.mark.slow
def test_record_says_which_answer_it_cut_and_the_agent_gets_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept part lowered to 64 bytes: the agent's SDK still gets its whole answer (it runs
    without error), the cassette notes the cut, and the command names the cut cassette."""
    import json

    from typer.testing import CliRunner

    from bench.cassettes import record as recording
    from bench.cli import app
    from bench.own.adapter import load_agents
    from bench.provider import LocalProvider
    from bench.scenarios.behaviours import Script, Valid

    monkeypatch.setattr(recording, "MAX_ANSWER_BYTES", 64)
    monkeypatch.chdir(OWN_PROJECT)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    task = load_agents(["support"], OWN_PROJECT)["support"].task
    folder = tmp_path / "cassettes"
    with LocalProvider() as upstream, upstream.open_run(task, Script([Valid()])) as run:
        args = ["record", "--upstream", run.endpoint.root, "--out", str(folder), "--port", "0", "--agent", "support"]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "agent support: 1 exchange(s) recorded\n" in result.stderr  # its SDK raised nothing
    [cassette] = list(folder.iterdir())
    assert f"cut: {cassette}: the answer passed 64 bytes" in result.stderr
    cut = json.loads(cassette.read_text())["response"]["cut"]
    assert cut["kept_bytes"] <= 64 < cut["received_bytes"]
