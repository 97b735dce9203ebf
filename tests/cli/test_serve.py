"""`bench serve` runs standalone: a plain client pointed at it sees the scripted faults in
their real shapes, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator

import anthropic
import openai
import pytest

from bench.core.vocabulary import Mode
from tests.protocol_clients import anthropic_kwargs, chat_kwargs


@pytest.fixture
def served() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    command = [sys.executable, "-m", "bench.cli", "serve", "--port", "0", "--scenario", "refusal_then_valid"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)/v1", first)
        assert match, (
            f"unexpected first line: {first!r}; stderr: {process.stderr.read() if process.poll() is not None else ''}"
        )
        yield match.group(1), process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)  # waits and closes the pipes


@pytest.mark.slow
def test_serve_scripts_the_default_run_and_stops_on_sigint(served: tuple[str, subprocess.Popen[str]]) -> None:
    base, process = served
    with openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0) as client:
        first = client.chat.completions.create(**chat_kwargs(Mode.NATIVE)).choices[0].message
    with anthropic.Anthropic(base_url=base, api_key="x", max_retries=0) as client_a:
        second = client_a.messages.create(**anthropic_kwargs(Mode.NATIVE))
    assert first.refusal and first.content is None
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith('{"name"')
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=10) == 0


def test_serve_rejects_a_non_loopback_host() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "loopback" in result.stderr and "Traceback" not in result.stderr
