"""Every command's help shows the words its source gives it: a bracketed name such as
``[tool.bench.pick]`` or ``misfit-bench[ray]`` is text, not console markup that rich drops."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from bench.cli import app

BRACKETED = re.compile(r"\\?\[[^\]\s]*\]+")


def helps() -> Iterator[tuple[tuple[str, ...], str]]:
    """(command path, help text as written) for every command and every option of each."""

    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
        if text := getattr(command, "help", None):
            yield path, text
        for param in getattr(command, "params", []):
            if text := getattr(param, "help", None):
                yield path, text
        for name, sub in (getattr(command, "commands", None) or {}).items():
            yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


BRACKETED_HELPS = [(path, text) for path, text in helps() if BRACKETED.search(text)]


def test_the_sweep_finds_bracketed_help() -> None:
    assert len(BRACKETED_HELPS) >= 5


@pytest.mark.parametrize(("path", "text"), BRACKETED_HELPS, ids=lambda value: str(value)[:40])
def test_a_bracketed_name_in_help_is_shown(path: tuple[str, ...], text: str) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=400, env={"COLUMNS": "400"})
    shown = " ".join(result.output.split())
    for written in BRACKETED.findall(text):
        assert written.lstrip("\\").replace("\\[", "[") in shown, f"bench {' '.join(path)} --help drops {written}"
