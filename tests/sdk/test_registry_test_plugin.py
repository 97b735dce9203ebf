"""The runner's test plugin SDK (``openai-parse``, tests/plugin/misfit_echo.py) exists for the tests
only (issue 25): the README's second command used to ``pip install -e tests/plugin``, after which
the first command's ``bench run`` planned 27 ``openai-parse`` cells. tests/conftest.py now puts
tests/plugin (with its committed dist-info) on sys.path and PYTHONPATH, so the entry point is
found inside the test run and nowhere else."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from bench.sdk import registry

REPO = Path(__file__).resolve().parents[2]
TEST_PLUGIN = REPO / "tests" / "plugin"
DIST = "misfit_bench_echo_plugin"


def test_the_install_commands_never_install_the_test_plugin() -> None:
    """What a user or CI runs to set up (README, .ci/run, Makefile) leaves tests/plugin alone."""
    for name in ("README.md", ".ci/run", "Makefile"):
        install_lines = [line for line in (REPO / name).read_text().splitlines() if "pip install" in line]
        assert install_lines, name
        assert not [line for line in install_lines if "tests/plugin" in line], name


def test_the_tests_see_the_plugin_through_the_committed_dist_info() -> None:
    """Inside the test run the entry point comes from tests/plugin's dist-info (not an install)."""
    (entry,) = [ep for ep in registry.entry_points(group=registry.GROUP) if ep.name == "openai-parse"]
    assert entry.dist is not None and Path(str(entry.dist.locate_file(""))) == TEST_PLUGIN


@pytest.fixture(scope="module")
def user_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv as the README's first command leaves it: this environment's packages (symlinked,
    nothing installed), except the test plugin's distribution, which a venv set up by the old
    second command (``-e tests/plugin``) still holds; that install is what this file retires."""
    root = tmp_path_factory.mktemp("user-venv")
    venv.create(root, with_pip=False, symlinks=True)
    own = Path(sysconfig.get_paths(vars={"base": str(root), "platbase": str(root)})["purelib"])
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if DIST not in entry.name and not (own / entry.name).exists():
            (own / entry.name).symlink_to(entry)
    return root / "bin" / "python"


def _bench(python: Path, cwd: Path, *args: str, pythonpath: list[Path]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(str(path) for path in pythonpath)
    done = subprocess.run(
        [str(python), "-m", "bench.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("with_tests_path", [False, True])
def test_bench_list_and_dry_run_show_openai_parse_only_with_the_tests_path(
    user_python: Path, tmp_path: Path, with_tests_path: bool
) -> None:
    """Without the tests' PYTHONPATH, ``bench list`` and ``bench run --dry-run`` (every installed
    SDK) name no openai-parse; with tests/plugin on it they do (so the first half can fail)."""
    path = [REPO, TEST_PLUGIN] if with_tests_path else [REPO]
    listed = {row["sdk"] for row in json.loads(_bench(user_python, tmp_path, "list", "--json", pythonpath=path))}
    assert "pydantic-ai" in listed and ("openai-parse" in listed) is with_tests_path
    plan = _bench(user_python, tmp_path, "run", "--dry-run", "--out", str(tmp_path / "out"), pythonpath=path)
    assert bool(re.search(r"^\s*openai-parse\s", plan, re.MULTILINE)) is with_tests_path, plan
    assert sys.executable != str(user_python)
