"""A results folder the run cannot write to (issue 26, point 6): a full disk or a read-only
folder is one line and exit 2, not an internal error (exit 3), and the run it leaves says
``interrupted`` (``--resume`` finishes it), never ``running``. Tests run as root, where chmod
stops no write: the failures are raised where the write happens, as the kernel would."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app

SMALL_RUN = ["--sdk", "agentmaker", "--protocol", "openai-chat", "--scenario", "valid", "--no-progress", "--procs", "1"]


def bench(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.stderr


def failing(code: int) -> Any:
    """A stand-in for ``pyarrow.parquet.write_table`` that fails as the kernel does with ``code``."""

    def write_table(table: object, where: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code), str(where))

    return write_table


@pytest.mark.slow
@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.EACCES, errno.EROFS], ids=["disk-full", "no-permission", "read-only"]
)
def test_a_table_write_that_fails_is_one_line_and_the_run_says_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(pq, "write_table", failing(code))
    exit_code, stderr = bench("run", *SMALL_RUN, "--out", tmp_path)
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert exit_code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: cannot write ") and "Traceback" not in stderr
    assert os.strerror(code) in stderr and f"bench run --resume {run}" in stderr
    assert json.loads((run / "manifest.json").read_text())["status"] == "interrupted"


def test_a_results_folder_that_cannot_be_created_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = Path.mkdir

    def mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.is_relative_to(tmp_path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    exit_code, stderr = bench("run", *SMALL_RUN, "--out", tmp_path / "results")
    assert exit_code == 2, stderr
    assert stderr.count("\n") == 1 and "Permission denied" in stderr and "nothing was run" in stderr, stderr
