"""Every numeric option of every command refuses a value out of its range: one line on stderr naming
the option, exit 2 (issue 45 point 6: ``bench view --port 99999`` was ``internal error:
OverflowError``, exit 3, and ``bench serve --port -1`` the same). The options are found by walking
the Typer app's commands and parameters, so an option added later is swept without being listed."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest
import typer
from typer.testing import CliRunner

from bench.cli import app

PAST_INT64 = 2**64
"""Out of range for every integer option: the widest an integer option may take is int64 (``bench
run --seed``, the runs table's column)."""
REQUIRED = {"record": ["--upstream", "http://127.0.0.1:9", "--out", "cassettes"]}
"""What a command needs besides the swept option, so the error is about the option and not a missing
one (the addresses are never reached: the command stops at its options)."""
GUARD_S = 60
"""A value taken for valid would start the command (``bench serve`` serves until stopped): the test
fails after this long instead of hanging."""


@dataclass(frozen=True)
class NumericOption:
    command: tuple[str, ...]
    flag: str
    kind: type
    low: float | None
    high: float | None

    def out_of_range(self) -> list[str]:
        """Just past each declared bound, and the values past every range: beyond int64 for an
        integer, NaN and the infinities for a float."""
        values = [] if self.low is None else [str(self.low - 1)]
        values += [] if self.high is None else [str(self.high + 1)]
        if self.kind is int:
            return [*values, str(PAST_INT64), str(-PAST_INT64)]
        return [*values, "nan", "inf", "-inf"]


def numeric_options() -> Iterator[NumericOption]:
    def walk(command: object, path: tuple[str, ...]) -> Iterator[NumericOption]:
        for name, sub in (getattr(command, "commands", None) or {}).items():
            yield from walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            kind = param.type_descriptor.annotation  # `int | None` is int here
            if kind in (int, float) and param.opts[0].startswith("--"):
                yield NumericOption(path, param.opts[0], kind, param.min, param.max)

    yield from walk(typer.main.get_command(app), ())


OPTIONS = list(numeric_options())


def test_the_sweep_finds_the_numeric_options() -> None:
    """The walk sees the options of every level (``bench view --port`` among them), and every
    required parameter of a command it sweeps has a value in :data:`REQUIRED`."""
    found = {(" ".join(o.command), o.flag) for o in OPTIONS}
    assert {("view", "--port"), ("serve", "--port"), ("record", "--port"), ("run", "--seed")} <= found
    assert {("run", "--time-limit"), ("gate", "--alpha"), ("pick", "--reps")} <= found
    root = typer.main.get_command(app)
    for command in {o.command for o in OPTIONS}:
        node = root
        for name in command:
            node = node.commands[name]  # type: ignore[attr-defined]
        required = [p.opts[0] for p in node.params if p.required and p.opts[0].startswith("--")]
        assert all(flag in REQUIRED.get(" ".join(command), []) for flag in required), (command, required)


def _timed_out(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError(f"the command ran for {GUARD_S} s: a value out of range was taken")


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: f"{' '.join(o.command)} {o.flag}")
def test_a_value_out_of_range_is_one_line_and_exit_2(
    option: NumericOption, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a value taken would write its results here, not in the repository
    previous = signal.signal(signal.SIGALRM, _timed_out)
    try:
        for value in option.out_of_range():
            signal.alarm(GUARD_S)
            args = [*option.command, option.flag, value, *REQUIRED.get(" ".join(option.command), [])]
            result = CliRunner().invoke(app, args)
            signal.alarm(0)
            lines = result.stderr.strip().splitlines()
            said = f"{' '.join(option.command)} {option.flag} {value}: exit {result.exit_code}, {result.exception!r}"
            assert result.exit_code == 2, f"{said}, {lines}"
            assert len(lines) == 1 and lines[0].startswith("error: ") and option.flag in lines[0], f"{said}, {lines}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_port_out_of_range_names_the_range() -> None:
    """``bench view --port 99999``: the range, before anything is read or bound."""
    result = CliRunner().invoke(app, ["view", "--port", "99999", "/nonexistent/run"])
    assert result.exit_code == 2 and "--port" in result.stderr and "65535" in result.stderr, result.stderr
