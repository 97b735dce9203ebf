"""No flag combination of ``bench run`` is silently ignored (issue 23.1): every pair that cannot
go together is refused in one line with exit 2, and the rest are said to apply.

The walk is over the command's own parameters, so a flag added later is walked too: with
``--resume``/``--rerun`` only what a recorded run takes may be given, with ``--dry-run`` only
what makes the plan.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from bench.cli import app
from bench.cli.run import DRY_RUN_FLAGS, RECORDED_RUN_FLAGS

runner = CliRunner()
SAMPLES = {
    "sdk": "pydantic-ai", "agent": "refunds", "mode": "tool", "variant": "default", "protocol": "openai-chat",
    "scenario": "malformed_then_valid", "fault": "malformed", "suite": "full", "scenario_paths": "scenarios",
    "reps": "2", "seed": "3", "call_cap": "5", "time_limit": "9", "concurrency": "2", "shard": "1/2",
    "release": "pydantic-ai==2.0.0", "outcome": "timeout", "out": "results", "procs": "1", "resume": "RUN",
    "rerun": "RUN", "executor": "ray", "cassettes": "cassettes", "redact": "secret",
    "tasks": "cassettes", "verify_cache": "2", "cell_cache": "cells",
}  # fmt: skip


def _params() -> list[Any]:
    """The options of ``bench run`` (typer's own copy of click's, hence untyped here)."""
    command: Any = get_command(app)
    return [p for p in command.commands["run"].params if p.param_type_name == "option"]


def _given(param: Any) -> list[str]:
    """The option on a command line: a flag alone, else with a sample value."""
    if param.is_flag:
        return [param.opts[0]]
    return [param.opts[0], SAMPLES[param.name or ""]]


def _bench(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["run", *args])
    return result.exit_code, result.stderr


def test_every_option_has_a_sample() -> None:
    """A new option must be walked: give it a sample value here."""
    missing = [p.name for p in _params() if not p.is_flag and p.name not in SAMPLES]
    assert not missing, missing


@pytest.mark.slow
@pytest.mark.parametrize("action", ["--resume", "--rerun"])
def test_recorded_run_refuses_every_other_flag(action: str) -> None:
    base = [action, "RUN", *(["--outcome", "timeout"] if action == "--rerun" else [])]
    for param in _params():
        if param.name in RECORDED_RUN_FLAGS or param.name == "dry_run":
            continue
        code, stderr = _bench(*base, *_given(param))
        assert code == 2, (param.name, stderr)
        assert stderr.count("\n") == 1 and param.opts[0] in stderr, (param.name, stderr)


def test_dry_run_refuses_what_shapes_a_run_output() -> None:
    for param in _params():
        if param.name in DRY_RUN_FLAGS or param.name in ("resume", "rerun", "outcome"):
            continue
        code, stderr = _bench("--dry-run", *_given(param))
        assert code == 2, (param.name, stderr)
        assert stderr == f"error: --dry-run prints the plan and runs nothing; it does not take {param.opts[0]}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--resume", "RUN", "--rerun", "RUN", "--outcome", "timeout"], "--resume and --rerun go separately"),
        (["--resume", "RUN", "--outcome", "timeout"], "--rerun RUN and --outcome go together"),
        (["--outcome", "timeout"], "--rerun RUN and --outcome go together"),
        (["--rerun", "RUN"], "--rerun RUN and --outcome go together"),
        (["--resume", "RUN", "--dry-run"], "--dry-run prints the plan of a new run"),
        (["--sdk", "openai-agents", "--release", "pydantic-ai==2.0.0"], "which --sdk leaves out"),
        (["--executor", "ray", "--procs", "2"], "--procs applies to --executor local"),
        (["--executor", "dask"], "unknown executor 'dask'"),
        (["--tasks", "cassettes"], "--tasks cassettes draws the tasks from a cassette folder: give --cassettes DIR"),
        (["--tasks", "mine"], "unknown --tasks 'mine'"),
    ],
)
def test_exclusive_pairs(args: list[str], said: str) -> None:
    code, stderr = _bench(*args)
    assert code == 2 and stderr.count("\n") == 1 and said in stderr, stderr
