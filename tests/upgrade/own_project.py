"""A small own-agent project, written outside the repository by the tests of issue 23: a
Pydantic AI agent (``refunds``) and a caller with an ``except ModelHTTPError`` handler, and
``bench`` run on it as a user runs it, from the project's folder, as a separate process with this
worktree's ``bench`` on ``PYTHONPATH`` (the shared venv's editable install points elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

WORKTREE = Path(__file__).resolve().parent.parent.parent

PYPROJECT = """
[project]
name = "refundsapp"
version = "0.1.0"
dependencies = [{dependencies}]

[[tool.bench.agents]]
name = "refunds"
agent = "refundsapp.agent:agent"
"""

AGENT = """
from pydantic import BaseModel
from pydantic_ai import Agent


class Refund(BaseModel):
    order_id: str
    amount: int


agent = Agent("openai:gpt-4o", output_type=Refund)
"""

API = """
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

from refundsapp.agent import agent


def refund(text: str):
    try:
        return agent.run_sync(text).output
    except ModelHTTPError:
        return None
    except (UnexpectedModelBehavior, ValueError):
        raise
"""

HANDLER_LINE = 9
"""The line of ``except ModelHTTPError:`` in refundsapp/api.py."""


def write_project(root: Path, dependencies: str = '"pydantic-ai-slim[openai]"') -> Path:
    package = root / "refundsapp"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(dependencies=dependencies), encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "agent.py").write_text(textwrap.dedent(AGENT).lstrip(), encoding="utf-8")
    (package / "api.py").write_text(textwrap.dedent(API).lstrip(), encoding="utf-8")
    assert (package / "api.py").read_text().splitlines()[HANDLER_LINE - 1].strip() == "except ModelHTTPError:"
    return root


def bench(project: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(WORKTREE)}
    return subprocess.run(
        [sys.executable, "-m", "bench.cli", *args], cwd=project, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
