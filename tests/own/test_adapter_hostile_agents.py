"""What a user's agent may do never ends or mislabels the run (issue 25): whatever it raises inside a
cell is that cell's ``raised``, whatever its module does at import is one line and exit 2, and a
factory that uses the harness's model handle as a model is a usage error naming the fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import PARTS_DIR, load_run, read_manifest, read_table
from tests.own import import_gate

REPO = Path(__file__).resolve().parents[2]

TYPE = """
from typing import Literal
from pydantic import BaseModel, ConfigDict, Field

class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str
"""

VALIDATING = """
import sys
from pydantic_ai import Agent

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")

class Mine(BaseException):
    pass

support = Agent("openai:gpt-4.1", output_type=Ticket)

@support.output_validator
def validate(ticket):
    {raise_}
"""


def write_module(project: Path, body: str) -> str:
    """A module with a name of its own (imported modules are cached per process)."""
    name = f"hostile_{uuid.uuid4().hex[:8]}"
    (project / f"{name}.py").write_text(textwrap.dedent(TYPE) + textwrap.dedent(body), encoding="utf-8")
    return name


def bench(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("raise_", "exception_type", "message"),
    [
        ("sys.exit(7)", "builtins.SystemExit", "7"),  # the gate's "empty run" code, were it the run's
        ("raise Unprintable()", ".Unprintable", "<str() of this Unprintable raised RuntimeError>"),
        ("raise KeyboardInterrupt('from the validator')", "builtins.KeyboardInterrupt", "from the validator"),
        ("raise Mine('not an Exception')", ".Mine", "not an Exception"),
    ],
    ids=["sys.exit", "unprintable", "KeyboardInterrupt", "BaseException"],
)
def test_what_an_agent_raises_in_a_cell_is_that_cells_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raise_: str, exception_type: str, message: str
) -> None:
    """``sys.exit(7)`` in a validator (run by pydantic-ai in a task of its own), an exception whose
    ``__str__`` raises, a ``KeyboardInterrupt`` or another ``BaseException`` the agent raises itself:
    each cell is ``raised`` with that class, every cell is written, and the run exits 0."""
    module = write_module(tmp_path, VALIDATING.replace("{raise_}", raise_))
    args = ("run", "--agent", f"{module}:support", "--scenario", "valid", "--scenario", "malformed_then_valid")
    code, _, err = bench(tmp_path, monkeypatch, *args, "--procs", "1", "--out", "out")
    assert code == 0, err
    run = load_run(tmp_path / "out" / "latest")
    runs = run["runs"]
    assert run["manifest"]["status"] == "complete" and len(runs) == 2
    assert set(runs["outcome"]) == {"raised"}
    assert all(kind.endswith(exception_type) for kind in runs["exception_type"]), list(runs["exception_type"])
    assert set(runs["exception_message"]) == {message}
    assert (runs["model_calls"] >= 1).all()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import sys\nsys.exit(4)\n", "raised SystemExit: 4"),
        ("raise KeyboardInterrupt('at import')\n", "raised KeyboardInterrupt: at import"),
        ("from tests.own import import_gate\nimport_gate.RELEASE.wait()\n", "did not finish within 0.5 s"),
    ],
    ids=["sys.exit", "KeyboardInterrupt", "blocks"],
)
def test_what_a_module_does_at_import_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, said: str
) -> None:
    """``sys.exit(4)`` at import exited 4 with nothing said; a module that waits at import hung the
    run with no limit. Each is one line naming the reference, exit 2, nothing written."""
    monkeypatch.setattr("bench.own.config.IMPORT_TIME_LIMIT_S", 0.5)
    monkeypatch.setattr(import_gate, "RELEASE", threading.Event())
    module = write_module(tmp_path, body)
    try:
        code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", f"{module}:support", "--out", "out")
    finally:
        import_gate.RELEASE.set()  # the import left waiting in its thread finishes
    assert code == 2, err
    assert err.count("\n") == 1 and f"agent '{module}:support': importing {module} {said}" in err, err
    assert not (tmp_path / "out").exists()


LANGCHAIN_HANDLE = """
from langchain.agents import create_agent

def make(model):
    return create_agent(model, response_format=Ticket)
"""

LANGCHAIN_HANDLE_IN_MIDDLEWARE = """
from langchain.agents import create_agent
from langchain.agents.middleware import before_model

def make(model):
    @before_model
    def summarise(state, runtime):
        model.invoke("summarise the ticket")  # the handle, where model.langchain() was meant
        return None

    return create_agent(model.langchain(), response_format=Ticket, middleware=[summarise])
"""

AGENTMAKER_HANDLE = """
from agentmaker import Agent

def make(model):
    return Agent("support", model)
"""


@pytest.mark.parametrize(
    ("body", "where"),
    [(LANGCHAIN_HANDLE, "the model create_agent got"), (AGENTMAKER_HANDLE, "the LLM client Agent got")],
    ids=["langchain", "agentmaker"],
)
def test_a_factory_that_passes_the_handle_itself_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, where: str
) -> None:
    """``create_agent(model, ...)`` instead of ``create_agent(model.langchain(), ...)`` exited 0 with
    every cell ``raised AttributeError`` and 0 model calls: now one line naming the fix, exit 2."""
    module = write_module(tmp_path, body)
    args = ("run", "--agent", f"{module}:make", "--scenario", "valid", "--out", "out")
    code, _, err = bench(tmp_path, monkeypatch, *args)
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert f"{where} is the harness's model handle itself, not a model" in err
    assert "model.langchain() for langchain" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_handle_used_as_a_model_inside_the_graph_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the load check cannot see the handle (a middleware calls it), the cell fails on the
    handle's own API before any model call: the run says so, naming the fix, and exits 2."""
    module = write_module(tmp_path, LANGCHAIN_HANDLE_IN_MIDDLEWARE)
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", f"{module}:make", "--scenario", "valid")
    assert code == 2, err
    assert "error: the model handle has no 'invoke'" in err and "model.langchain() for langchain" in err
    assert "fix the factory; these cells measured nothing" in err
    runs = load_run(tmp_path / "results" / "latest")["runs"]
    assert list(runs["model_calls"]) == [0]


@pytest.mark.slow
def test_a_factory_without_a_parameter_builds_an_agent_that_needs_no_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``def make(): return Agent(...)`` is accepted for an SDK whose agent is pointed at the
    provider as it is; for one that needs the handle, the one line says how to take it."""
    module = write_module(
        tmp_path,
        """
        from langchain.agents import create_agent
        from langchain_openai import ChatOpenAI
        from pydantic_ai import Agent

        def make():
            return Agent("openai:gpt-4.1", output_type=Ticket)

        def make_graph():
            return create_agent(ChatOpenAI(model="gpt-4.1"), response_format=Ticket)
        """,
    )
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", f"{module}:make", "--scenario", "valid")
    assert code == 0, err
    runs = load_run(tmp_path / "results" / "latest")["runs"]
    assert list(runs["outcome"]) == ["ok"] and list(runs["sdk"]) == ["pydantic-ai"]

    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", f"{module}:make_graph", "--out", "graph")
    assert code == 2 and err.count("\n") == 1, err
    assert "give a factory taking the model handle: def make(model): return create_agent(model.langchain()" in err


def test_a_misspelled_entry_field_gets_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n'
        '[[tool.bench.agents]]\nname = "support"\nagent = "x:y"\nexmaple = "ticket.json"\n'
        '[[tool.bench.agents]]\nname = "tooled"\nagent = "x:z"\ntools = { lookup = { fakes = "m:f" } }\n',
        encoding="utf-8",
    )
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "support", "--out", "out")
    assert code == 2 and err.count("\n") == 1, err
    assert "entry 'support', field exmaple: Extra inputs are not permitted; did you mean 'example'?" in err

    text = (tmp_path / "pyproject.toml").read_text().replace('exmaple = "ticket.json"\n', "")
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "tooled", "--out", "out")
    assert code == 2, err
    assert "entry 'tooled', field tools.lookup.fakes: Extra inputs are not permitted; did you mean 'fake'?" in err


PROMPT_S = 15.0
"""How soon after the signal the run must have exited (generous for a loaded CI machine)."""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_users_interrupt_still_ends_a_run_whose_agent_raises_keyboard_interrupt(
    tmp_path: Path, signum: int
) -> None:
    """The agent's own ``KeyboardInterrupt`` is its cells' outcome; a signal of the user's, while
    those cells run, still interrupts the run (exit 130, the finished cells written)."""
    module = write_module(tmp_path, VALIDATING.replace("{raise_}", "raise KeyboardInterrupt('mine')"))
    command = [sys.executable, "-m", "bench.cli", "run", "--agent", f"{module}:support", "--scenario",
               "slow_then_valid", "--reps", "200", "--procs", "1", "--no-progress", "--out", "out"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    process = subprocess.Popen(command, cwd=tmp_path, env=env, **pipes)
    try:
        deadline = time.monotonic() + 180
        while not any((tmp_path / "out").glob(f"*/{PARTS_DIR}/runs-*.parquet")):
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no cell was written"
            time.sleep(0.05)  # polling observable state: the first part on disk
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=PROMPT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    (directory,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir() and not p.is_symlink()]
    assert read_manifest(directory)["status"] == "interrupted"
    runs = read_table(directory, "runs").to_pandas()
    assert 0 < len(runs) < 200
    assert set(runs["exception_type"]) == {"builtins.KeyboardInterrupt"} and set(runs["outcome"]) == {"raised"}
