"""Every option that narrows a plan, crossed with the others (issue 47): a thing named (an SDK, an
agent, a release, a mode, a variant, a protocol, a scenario, a fault, the cassette tasks) that the
combination leaves with no cell is one line naming it and the option that emptied it; when every
value of one option is emptied, the run is refused (exit 2). Driven through ``bench run --dry-run``
(the plan, as a run makes it) and, for the issue's reproduction, a real run of a project outside
the repository; ``bench pick --type`` plans the same way and is run for real. (``--stream`` is
``--variant stream``; ``--suite`` chooses the scenarios, and a scenario of another suite is
refused by name.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from tests.paths import FIXTURES, REPO
from tests.ticket_agent import TICKET_MODEL

PYDANTIC_ON_CHAT = "--sdk openai-parse: --protocol openai-responses leaves it no cell (its protocol: openai-chat)"
"""openai-parse, the tests' plugin SDK, has cells on Chat Completions only."""

ONE_CELL_EACH = ["--mode", "native", "--variant", "default", "--protocol", "openai-chat", "--scenario", "valid"]

SWEEP: list[tuple[str, list[str], int, list[str]]] = [
    # (id, arguments, exit code, lines on stderr: a warning when the run goes on, the error when refused)
    ("nothing-emptied", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", "--mode", "native"], 0, []),
    ("sdk-by-protocol", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", "--protocol", "openai-responses"], 0,
     [f"warning: left out: {PYDANTIC_ON_CHAT}"]),
    ("every-sdk-by-protocol", ["--sdk", "openai-parse", "--protocol", "openai-responses"], 2,
     [f"error: the --sdk named is left with no cell: {PYDANTIC_ON_CHAT}"]),
    ("sdk-by-mode", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", "--mode", "prompted"], 0,
     ["warning: left out: --sdk openai-parse: --mode prompted leaves it no cell (its mode: native, tool)"]),
    ("sdk-by-variant", ["--sdk", "langchain", "--sdk", "pydantic-ai", "--variant", "auto"], 0,
     ["warning: left out: --sdk pydantic-ai: --variant auto leaves it no cell (its variant: default, hardened, "
      "stream)"]),
    ("sdk-by-stream", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", "--variant", "stream"], 0,
     ["warning: left out: --sdk openai-parse: --variant stream leaves it no cell (its variant: default)"]),
    ("mode-by-sdk", ["--sdk", "openai-parse", "--mode", "prompted", "--mode", "native"], 0,
     ["warning: left out: --mode prompted: no cell: no chosen adapter (--sdk openai-parse) has a cell of that mode"]),
    ("scenario-by-fault", ["--sdk", "pydantic-ai", "--scenario", "valid", "--scenario", "malformed_then_valid",
                           "--fault", "malformed"], 0,
     ["warning: left out: --scenario valid: --fault malformed leaves it no cell (its faults: none)"]),
    ("scenario-with-fault", ["--sdk", "pydantic-ai", "--scenario", "valid", "--fault", "malformed"], 2,
     ["error: the --sdk named is left with no cell: --sdk pydantic-ai: --scenario valid with --fault malformed "
      "leave it no cell together"]),
    ("suite", ["--sdk", "pydantic-ai", "--scenario", "field_empty_then_valid"], 2,
     ["error: scenario(s) field_empty_then_valid belong to suite 'field', not 'default': add --suite field"]),
    ("release-by-variant", ["--release", "pydantic-ai@pinned", "--release", "langchain@pinned", "--variant", "auto"], 0,
     ["warning: left out: --release pydantic-ai@pinned: --variant auto leaves it no cell (its variant: default, "
      "hardened, stream)"]),
    ("protocol-by-sdk", ["--sdk", "openai-parse", "--protocol", "anthropic-messages", "--protocol", "openai-chat"], 0,
     ["warning: left out: --protocol anthropic-messages: no cell: no chosen adapter (--sdk openai-parse) has a cell of "
      "that protocol"]),
    ("fault-by-scenario", ["--sdk", "pydantic-ai", "--scenario", "valid", "--scenario", "malformed_then_valid",
                           "--fault", "malformed", "--fault", "refusal"], 0,
     ["warning: left out: --scenario valid: --fault malformed,refusal leaves it no cell (its faults: none)",
      "warning: left out: --fault refusal: --scenario malformed_then_valid,valid leaves it no cell (its scenarios: "
      "refusal_persistent, refusal_then_valid)"]),
    ("every-release-by-protocol", ["--release", "openai-agents@pinned", "--protocol", "anthropic-messages"], 2,
     ["error: every cell of the plan is unsupported (369 cells): nothing would run; see 'bench list' for what each "
      "SDK can express"]),
    ("release-by-shard", ["--release", "pydantic-ai@pinned", "--release", "langchain@pinned", *ONE_CELL_EACH[:6],
                          "--scenario", "valid", "--shard", "2/3"], 0,
     ["warning: left out: --release langchain@pinned: --shard 2/3 leaves it no cell (its 1 cells are in other "
      "shards)"]),
    ("scenario-by-shard", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", *ONE_CELL_EACH, "--scenario",
                           "refusal_persistent", "--shard", "1/5"], 0,
     ["warning: left out: --sdk openai-parse: --shard 1/5 leaves it no cell (its 2 cells are in other shards)",
      "warning: left out: --scenario refusal_persistent: --shard 1/5 leaves it no cell (its 2 cells are in other "
      "shards)"]),
    ("shard", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", *ONE_CELL_EACH, "--shard", "2/3"], 0,
     ["warning: left out: --sdk openai-parse: --shard 2/3 leaves it no cell (its 1 cells are in other shards)"]),
    ("every-sdk-by-shard", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", *ONE_CELL_EACH, "--shard", "1/3"], 2,
     ["error: every one of the 2 --sdk named is left with no cell: --sdk openai-parse: --shard 1/3 leaves it no cell "
      "(its 1 cells are in other shards); --sdk pydantic-ai: --shard 1/3 leaves it no cell (its 1 cells are in "
      "other shards)"]),
]  # fmt: skip


def dry_run(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["run", *args, "--dry-run"])
    return result.exit_code, result.stderr.splitlines()


@pytest.mark.parametrize(("args", "code", "said"), [row[1:] for row in SWEEP], ids=[row[0] for row in SWEEP])
def test_sweep(args: list[str], code: int, said: list[str], tmp_path: Path) -> None:
    got, stderr = dry_run(*args, "--out", str(tmp_path))
    assert (got, stderr) == (code, said)


CASSETTES = FIXTURES / "cassettes" / "pydantic-ai"


def test_cassette_tasks_crossed(tmp_path: Path) -> None:
    """``--tasks cassettes`` draws every adapter's tasks from the folder; a filter still empties
    an SDK by name (the draw's own skipped answers are said before, as ever)."""
    args = ["--cassettes", str(CASSETTES), "--tasks", "cassettes", "--sdk", "openai-parse", "--sdk", "pydantic-ai"]
    code, stderr = dry_run(*args, "--protocol", "openai-responses", "--out", str(tmp_path))
    assert code == 0 and f"warning: left out: {PYDANTIC_ON_CHAT}" in stderr, stderr
    code, stderr = dry_run(*args[:6], "--protocol", "openai-responses", "--out", str(tmp_path))
    assert code == 2 and stderr[-1] == f"error: the --sdk named is left with no cell: {PYDANTIC_ON_CHAT}", stderr


TYPED: list[tuple[str, list[str], int, list[str]]] = [
    ("type-sdk-by-protocol", ["--sdk", "openai-parse", "--sdk", "pydantic-ai", "--protocol", "openai-responses"], 0,
     [f"warning: left out: {PYDANTIC_ON_CHAT}", "narrowed by --sdk openai-parse,pydantic-ai; --protocol "
      "openai-responses; --scenario valid: the ranking covers only these"]),
    ("type-every-sdk-by-protocol", ["--sdk", "openai-parse", "--protocol", "openai-responses"], 2,
     [f"error: the --sdk named is left with no cell: {PYDANTIC_ON_CHAT}"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "said"), [row[1:] for row in TYPED], ids=[row[0] for row in TYPED])
def test_a_users_type_crossed(
    args: list[str], code: int, said: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench pick --type`` plans through the same step: an SDK its filters empty is said the same way."""
    (tmp_path / "tickets.py").write_text(TICKET_MODEL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    pick = ["pick", "--type", "tickets:Ticket", *args, "--scenario", "valid", "--no-progress"]
    result = CliRunner().invoke(app, [*pick, "--results", str(tmp_path / "results")])
    assert (result.exit_code, result.stderr.splitlines()) == (code, said)


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project (a Pydantic AI and an OpenAI Agents agent, both on Responses; a
    LangChain one on Chat Completions), copied outside the repository."""
    project = tmp_path_factory.mktemp("helpdesk") / "project"
    shutil.copytree(REPO / "examples" / "own_agent", project, ignore=shutil.ignore_patterns("baseline", "tests"))
    return project


AGENTS: list[tuple[str, list[str], int, list[str]]] = [
    ("agent-by-protocol", ["--agent", "support", "--agent", "intake", "--protocol", "openai-chat"], 0,
     ["warning: left out: --agent support: --protocol openai-chat leaves it no cell (its protocol: openai-responses)"]),
    ("every-agent-beside-an-sdk", ["--agent", "support", "--sdk", "openai-parse", "--protocol", "openai-chat"], 2,
     ["error: the --agent named is left with no cell: --agent support: --protocol openai-chat leaves it no cell "
      "(its protocol: openai-responses)"]),
    ("agent-by-variant", ["--agent", "intake", "--sdk", "pydantic-ai", "--variant", "default"], 2,
     ["error: the --agent named is left with no cell: --agent intake: --variant default leaves it no cell (its "
      "variant: own)"]),
    ("agent-by-scenario", ["--agent", "support", "--sdk", "pydantic-ai", "--scenario", "tool_ok"], 2,
     ["error: the --agent named is left with no cell: --agent support: --scenario tool_ok leaves it no cell (its "
      "scenarios: expense_bad_category_then_valid, expense_valid, expense_wrong_total_persistent, "
      "http_400_persistent, http_429_no_retry_after_then_valid, http_429_should_not_retry and 22 more)"]),
    ("agent-by-shard", ["--agent", "support", "--agent", "intake", "--scenario", "valid", "--shard", "2/2"], 0,
     ["warning: left out: --agent intake: --shard 2/2 leaves it no cell (its 1 cells are in other shards)"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "said"), [row[1:] for row in AGENTS], ids=[row[0] for row in AGENTS])
def test_agents_crossed(
    args: list[str], code: int, said: list[str], helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(helpdesk)
    got, stderr = dry_run(*args, "--out", str(helpdesk / "results"))
    assert (got, stderr) == (code, said)


@pytest.mark.slow
def test_issue_reproduction(helpdesk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's run: three agents and ``--protocol openai-chat``. The two on Responses are each
    one line, LangChain's cells run; with only the two, the run is refused. ``bench run`` through
    Typer's CliRunner from the project's folder, as :func:`test_agents_crossed` plans it (a
    process of its own cost two interpreters importing three SDKs, for the same lines)."""
    monkeypatch.chdir(helpdesk)
    three = ["--agent", "support", "--agent", "triage", "--agent", "intake", "--protocol", "openai-chat"]
    done = CliRunner().invoke(app, ["run", *three, "--scenario", "valid", "--no-progress", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: left out: --agent {name}: --protocol openai-chat leaves it no cell (its protocol: openai-responses)"
        for name in ("support", "triage")
    ]
    assert "1 cells: " in done.stdout
    done = CliRunner().invoke(app, ["run", *three[:4], *three[6:], "--scenario", "valid", "--out", str(tmp_path)])
    assert done.exit_code == 2 and done.stdout == "", done.stderr
    assert done.stderr.startswith("error: every one of the 2 --agent named is left with no cell: --agent support: ")
