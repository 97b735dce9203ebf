"""A user's own ``LlmAgent`` through ``bench run --agent``, in a user's project environment.

google-adk cannot be installed beside the harness's pins, so a user runs bench from their own
project's environment, where google-adk and misfit-bench are both installed. The test builds that
environment (the adapter's lock plus this checkout, with uv, cached by content) and runs the CLI
there, as the user would: not through CliRunner, since this interpreter has no google-adk.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.releases.envs import uv_binary

pytestmark = [pytest.mark.serial, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
LOCK = REPO / "adapters" / "google_adk" / "environment.txt"

AGENT = """
from typing import Literal

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from pydantic import BaseModel, ConfigDict, Field


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str


triage = LlmAgent(
    name="triage",
    model=LiteLlm(model="openai/gpt-4.1-mini"),
    instruction="Triage the ticket.",
    output_schema=Ticket,
    output_key="ticket",
)
keyless = triage.clone(update={"name": "keyless", "output_key": None})
"""


@pytest.fixture(scope="module")
def user_python() -> Path:
    """A user's project environment: google-adk's lock and misfit-bench (this checkout's metadata,
    so its entry points; PYTHONPATH makes the checkout's code the one that runs)."""
    digest = hashlib.sha256(LOCK.read_bytes() + (REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    root = Path.home() / ".cache" / "misfit-bench" / "test-envs" / "google-adk-user" / digest
    python = root / "bin" / "python"
    if not python.exists():
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        uv = uv_binary()
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(root)], check=True, env=env)
        subprocess.run([uv, "pip", "install", "-q", "-p", str(root), "-r", str(LOCK), str(REPO)], check=True, env=env)
    return python


def _bench(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [str(python), "-m", "bench.cli", "run", *args, "--results", str(project / "results")],
        cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_a_users_llm_agent_runs_as_its_own_cell(user_python: Path, tmp_path: Path) -> None:
    """The user's agent under clone(update={'model': ...}): ok on valid; a malformed answer raises
    ADK's ValidationError after one call (agents/llm_agent.py:1146), never fed back."""
    (tmp_path / "helpdesk.py").write_text(textwrap.dedent(AGENT))
    done = _bench(user_python, tmp_path, "--agent", "helpdesk:triage", "--scenario", "valid",
                  "--scenario", "malformed_then_valid")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 cells: ok 1, raised 1" in done.stdout


def test_an_agent_without_output_key_is_refused_in_one_line(user_python: Path, tmp_path: Path) -> None:
    (tmp_path / "helpdesk.py").write_text(textwrap.dedent(AGENT))
    done = _bench(user_python, tmp_path, "--agent", "helpdesk:keyless", "--scenario", "valid")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "output_key" in line]
    assert len(said) == 1 and "Traceback" not in done.stderr
