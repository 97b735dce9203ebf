"""docs/adding-an-adapter.md runs: its code blocks are the tutorial SDK's files, so the page cannot
drift from the code it teaches.

Every fenced block whose info string names ``file=PATH`` is written into a temporary folder: the
SDK and the plugin folder into a ``site`` folder put on ``sys.path`` (``adapters/echo/`` joins the
``adapters`` package's path, where a sixth built-in SDK would live), the user's agent module into
a project folder, the adapter tests into a folder of their own. The plugin is registered the way
``pip install`` leaves one: an installed-distribution folder (``*.dist-info``) on ``sys.path``
whose ``entry_points.txt`` holds the entry point of the page's ``pyproject.toml`` block, read by
``importlib.metadata``; a second one gives ``echo-sdk`` its version. Then the ``bench`` lines of
the page's ``bash test`` blocks run through the CLI (typer's CliRunner) against the real local
provider over loopback, and the page's adapter tests run on the session's provider.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import adapters
import bench
from bench.cli import app
from bench.provider import LocalProvider
from bench.results.store import load_run
from tests.cell_runner import CellRunner

SLOW_FIXTURES = ("tutorial",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adding-an-adapter.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
TEMPORARY_MODULES = ("echo_sdk", "adapters.echo", "helpdesk", "tutorial_echo_tests")


@dataclass(frozen=True)
class Block:
    language: str
    attributes: dict[str, str]
    """``key=value`` words of the info string; a bare word maps to itself (``test``)."""
    text: str


def blocks(text: str) -> list[Block]:
    found = []
    for language, info, body in FENCE.findall(text):
        words = [word.partition("=") for word in info.split()]
        found.append(Block(language, {key: value or key for key, _, value in words}, body))
    return found


@dataclass(frozen=True)
class Tutorial:
    files: dict[str, str]
    site: Path
    project: Path
    tests: Path
    commands: list[list[str]]


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tutorial]:
    page = blocks(DOC.read_text(encoding="utf-8"))
    files = {block.attributes["file"]: block.text for block in page if "file" in block.attributes}
    root = tmp_path_factory.mktemp("tutorial")
    site, project, tests = root / "site", root / "project", root / "tests"
    for name, text in files.items():
        if name == "pyproject.toml":
            continue
        folder = project
        if name.startswith(("echo_sdk/", "adapters/", "tests/")):
            folder = tests if name.startswith("tests/") else site
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    _installed(site, files)
    commands = [
        shlex.split(line)[1:]
        for block in page
        if block.language == "bash" and "test" in block.attributes
        for line in block.text.splitlines()
        if line.startswith("bench ")
    ]
    # another test's project may have left a module of the page's names (examples/own_agent is a
    # `helpdesk` package too): the page's own must be the one imported
    for name in [n for n in sys.modules if n.startswith(TEMPORARY_MODULES)]:
        del sys.modules[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))  # restores sys.path after, project folder included
        patch.setattr(adapters, "__path__", [*adapters.__path__, str(site / "adapters")])
        yield Tutorial(files, site, project, tests, commands)
    for name in [n for n in sys.modules if n.startswith(TEMPORARY_MODULES)]:
        del sys.modules[name]


def _installed(site: Path, files: dict[str, str]) -> None:
    """What ``pip install`` would leave: misfit-bench's entry point (from the page's pyproject
    block, under a distribution name of its own) and the SDK's distribution with its version."""
    pyproject = tomllib.loads(files["pyproject.toml"])
    entry_points = pyproject["project"]["entry-points"]["misfit_bench.adapters"]
    plugin = site / "misfit_bench_tutorial-0.dist-info"
    plugin.mkdir(parents=True)
    (plugin / "METADATA").write_text("Metadata-Version: 2.1\nName: misfit-bench-tutorial\nVersion: 0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (plugin / "entry_points.txt").write_text(f"[misfit_bench.adapters]\n{lines}")
    found = re.search(r'^__version__ = "(.+)"$', files["echo_sdk/__init__.py"], re.MULTILINE)
    assert found, "the SDK block declares __version__"
    sdk = site / f"echo_sdk-{found.group(1)}.dist-info"
    sdk.mkdir()
    (sdk / "METADATA").write_text(f"Metadata-Version: 2.1\nName: echo-sdk\nVersion: {found.group(1)}\n")


def test_the_page_holds_the_whole_plugin(tutorial: Tutorial) -> None:
    """Every file the page's table lists is a block, and nothing else is written."""
    assert set(tutorial.files) == {
        "echo_sdk/__init__.py", "adapters/echo/__init__.py", "adapters/echo/adapter.py", "adapters/echo/own.py",
        "pyproject.toml", "helpdesk.py", "tests/adapters/echo/test_echo_adapter.py",
    }  # fmt: skip
    assert [command[:2] for command in tutorial.commands] == [["run", "--sdk"], ["run", "--agent"]]


def test_the_plugin_files_keep_the_layering(tutorial: Tutorial) -> None:
    """The rule tests/test_layers.py holds adapters/ to: only the packages an adapter may import,
    no private name of another package."""
    wrong = []
    for path in sorted((tutorial.site / "adapters").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench."):
                package = node.module.split(".")[1]
                if package not in bench.ADAPTERS_MAY_IMPORT:
                    wrong.append(f"{path.name}: {node.module}")
                wrong += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert wrong == []


def bench_cli(tutorial: Tutorial, args: list[str], out: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """One ``bench`` line of the page; a run writes under ``out`` in this process (the tutorial's
    files are importable here only, so no shard process), an ``--agent`` run from the project."""
    if args[0] == "run":
        args = [*args, "--out", str(out), "--no-progress", "--procs", "1"]
    if "--agent" in args:
        monkeypatch.chdir(tutorial.project)
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture(scope="module")
def ran(tutorial: Tutorial, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each command of the page once: its exit code, its output and, for a run, its runs table."""
    done: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch:
        for index, args in enumerate(tutorial.commands):
            out = tmp_path_factory.mktemp(f"command-{index}")
            code, output = bench_cli(tutorial, args, out, patch)
            runs = load_run(out / "latest")["runs"] if args[0] == "run" and code == 0 else None
            done[" ".join(args[:2])] = {"code": code, "output": output, "runs": runs}
    return done


def outcome(runs: pd.DataFrame, scenario: str, **cell: str) -> tuple[str, int, str]:
    rows = runs[(runs.scenario == scenario) & (runs.outcome != "unsupported")]
    for column, value in cell.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, (scenario, cell, rows)
    row = rows.iloc[0]
    return row.outcome, int(row.model_calls), "" if pd.isna(row.exception_type) else row.exception_type


def test_bench_list_shows_the_sixth_sdk(tutorial: Tutorial) -> None:
    """The page's excerpt of ``bench list``, rendered by its own code for the echo row alone
    (the whole command imports every SDK installed: seconds of CPU this test need not spend)."""
    from bench.sdk import registry
    from bench.sdk.listing import adapter_row, render

    adapter = registry.load("echo")
    row = adapter_row("echo", registry.adapter_target("echo"), adapter, registry.sdk_version(adapter))
    lines = render([row]).splitlines()
    page = DOC.read_text(encoding="utf-8")
    assert f"\n{lines[0]}\n" in page
    assert f"\n  unsupported: {', '.join(row['unsupported'][0]['cells'][:2])}, ...\n" in page
    assert f"\n    why: {row['unsupported'][0]['reason']}\n" in page


@pytest.mark.slow
def test_the_built_in_cells_do_what_the_page_says(ran: dict[str, Any]) -> None:
    """The page's table: default cells raise EchoOutputError on a malformed answer after one
    call, hardened ones recover on the second; every other chat cell is listed unsupported."""
    run = ran["run --sdk"]
    assert run["code"] == 0, run["output"]
    runs = run["runs"]
    assert set(runs.sdk) == {"echo"} and set(runs.sdk_version) == {"0.2.0"}
    for mode in ("native", "prompted"):
        for variant in ("default", "hardened"):
            assert outcome(runs, "valid", mode=mode, variant=variant) == ("ok", 1, "")
        assert outcome(runs, "malformed_then_valid", mode=mode, variant="default") == (
            "raised", 1, "echo_sdk.EchoOutputError",
        )  # fmt: skip
        assert outcome(runs, "malformed_then_valid", mode=mode, variant="hardened") == ("recovered", 2, "")
    unsupported = runs[runs.outcome == "unsupported"]
    assert set(unsupported["mode"]) == {"tool", "native", "prompted"}
    assert set(unsupported[unsupported["mode"] != "tool"].variant) == {"stream"}


def test_a_users_own_agent_runs_through_the_binding(ran: dict[str, Any]) -> None:
    run = ran["run --agent"]
    assert run["code"] == 0, run["output"]
    runs = run["runs"]
    assert set(runs.agent) == {"triage"} and set(runs.sdk) == {"echo"}
    assert set(runs["mode"]) == {"prompted"} and set(runs.variant) == {"own"}
    assert outcome(runs, "valid") == ("ok", 1, "")
    assert outcome(runs, "malformed_then_valid") == ("recovered", 2, "")


async def test_the_pages_adapter_tests_pass(tutorial: Tutorial, provider: LocalProvider) -> None:
    """The page's tests/adapters/echo/ module, each test with the ``run_cell`` fixture's object."""
    path = tutorial.tests / "tests" / "adapters" / "echo" / "test_echo_adapter.py"
    spec = importlib.util.spec_from_file_location("tutorial_echo_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [value for name, value in vars(module).items() if name.startswith("test_")]
    assert len(tests) == 3
    run_cell = CellRunner(provider)
    for test in tests:
        await test(run_cell)


def test_the_release_notes_on_the_page_are_what_the_code_says(tutorial: Tutorial) -> None:
    """The refusal of an unsupported release and the note of a cell an older release cannot
    express, quoted on the page, come from the adapter's class variables as the code reads them."""
    from bench.core.vocabulary import Mode, ModeSupport, Protocol
    from bench.releases.envs import EnvBuildError, EnvironmentStore
    from bench.releases.prepare import package_of
    from bench.sdk import registry
    from bench.sdk.adapter import Cell

    page = " ".join(DOC.read_text(encoding="utf-8").split())  # quoted across a line break
    adapter = registry.load("echo")
    prompted = Cell("echo", Mode.PROMPTED, "default", Protocol.CHAT, False, ModeSupport.BUILTIN)
    gap = adapter.release_gap(prompted, "0.1.0")
    assert gap is not None and f'"{gap}"' in page
    assert adapter.release_gap(prompted, "0.2.0") is None
    with pytest.raises(EnvBuildError) as refused:
        EnvironmentStore(tutorial.site / "cache").build(package_of(adapter), "0.0.9")
    assert f'"{refused.value}"' in page


def test_the_annotation_example_cites_the_line_that_raises(tutorial: Tutorial) -> None:
    page = DOC.read_text(encoding="utf-8")
    found = re.search(r'source: "echo_sdk/__init__.py:(\d+)"', page)
    assert found, "the page's annotation example cites the SDK"
    line = tutorial.files["echo_sdk/__init__.py"].splitlines()[int(found.group(1)) - 1]
    assert "raise EchoOutputError" in line
