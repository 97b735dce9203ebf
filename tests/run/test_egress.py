"""Nothing a run does leaves the machine (issue 25): a user's agent that opens a socket to a public
address, looks a public name up or sends a datagram off loopback is refused, and the cell says so.

The run under test goes on inside a network namespace with no route out (``unshare --net``, with
only loopback up), so no packet can leave even if the guard fails: without the guard, the calls
below fail there with "network unreachable" instead, and the refusals are missing from the cell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.results.store import load_run
from bench.run.egress import loopback

REPO = Path(__file__).resolve().parents[2]

AGENT = """
import socket
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from pydantic_ai import Agent

HERE = Path(__file__).parent


class Ticket(BaseModel):
    label: Literal["billing", "bug", "feature"]
    priority: int
    summary: str


support = Agent("openai:gpt-4.1", output_type=Ticket)


def attempt(name, call):
    try:
        call()
        said = "went through"
    except OSError as error:
        said = type(error).__name__
    with (HERE / "attempts.txt").open("a") as log:
        log.write(f"{name} {said}\\n")


@support.output_validator
def phone_home(ticket):
    attempt("connect", lambda: socket.create_connection(("93.184.216.34", 80), timeout=5).close())
    attempt("lookup", lambda: socket.getaddrinfo("example.com", 443))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attempt("datagram", lambda: udp.sendto(b"x", ("8.8.8.8", 53)))
    udp.close()
    return ticket
"""


def _no_namespace() -> str | None:
    """Why no network namespace can be made here (None when one can)."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    made = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"unshare --net needs root (or user namespaces): {made.stderr.strip()[:200]}"
    return None


@pytest.mark.network
def test_an_agents_connections_off_loopback_are_refused_and_recorded(tmp_path: Path) -> None:
    if reason := _no_namespace():
        pytest.skip(f"no network namespace with no route out can be made: {reason}")
    (tmp_path / "phone_home.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    run = [sys.executable, "-m", "bench.cli", "run", "--agent", "phone_home:support", "--scenario", "valid",
           "--procs", "1", "--no-progress", "--out", "out"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    inside = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *run]
    done = subprocess.run(inside, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    attempts = (tmp_path / "attempts.txt").read_text().splitlines()
    assert attempts == ["connect EgressRefused", "lookup EgressRefused", "datagram EgressRefused"]
    (cell,) = load_run(tmp_path / "out" / "latest")["runs"].to_dict("records")
    assert cell["outcome"] == "ok" and cell["model_calls"] == 1  # loopback, to the provider, is untouched
    notes = dict(cell["details"]["other"])
    assert notes["refused_connections"] == '["93.184.216.34:80", "example.com:443", "8.8.8.8:53"]'


@pytest.mark.parametrize(
    ("host", "stays"),
    [
        ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("::ffff:127.0.0.1", True), ("localhost", True),
        ("0.0.0.0", True), ("", True), (None, True), (b"/run/socket", False),
        ("93.184.216.34", False), ("10.0.0.1", False), ("::ffff:8.8.8.8", False), ("example.com", False),
        ("[2001:db8::1]", False),
    ],
)  # fmt: skip
def test_only_loopback_stays_on_the_machine(host: object, stays: bool) -> None:
    """A name is refused whatever it would resolve to: resolving it asks a DNS server off the
    machine. (A bytes host is a name too: a Unix socket's path never reaches the check.)"""
    assert loopback(host) is stays
