"""A user's own agent under fault (issue 15): loading, bad references, the agent column, and the
gate in the user's own repo, through the CLI as a user runs it."""

from __future__ import annotations

import os
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import load_run, read_table, resolve_run
from tests.paths import FIXTURES, REPO
from tests.ticket_agent import TICKET_MODEL

SMALL = ("--scenario", "valid", "--scenario", "malformed_then_valid", "--scenario", "wrong_persistent")

TICKET = (
    TICKET_MODEL
    + """
def check(ticket: Ticket) -> str | None:
    return None if ticket.label == "bug" else f"label is {ticket.label}, expected bug"
"""
)


def write_module(project: Path, body: str) -> str:
    """A module with a name of its own (imported modules are cached per process)."""
    name = f"user_agents_{uuid.uuid4().hex[:8]}"
    (project / f"{name}.py").write_text(textwrap.dedent(TICKET) + textwrap.dedent(body), encoding="utf-8")
    return name


def write_pyproject(project: Path, entries: str) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "user-project"\nversion = "0"\n' + textwrap.dedent(entries), encoding="utf-8"
    )


def bench(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


PYDANTIC_AI = """
from pydantic_ai import Agent
support = Agent("openai:gpt-4.1", output_type=Ticket, retries={retries}, instructions="Triage the ticket.")
"""

NOT_AN_AGENT = "cannot drive a builtins.dict; known: agentmaker.Agent (from a factory), "  # then every other binding


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("nomodule:x", "no module named 'nomodule'"),
        ("{module}:missing", "has no attribute 'missing'"),
        ("{module}:not_an_agent", NOT_AN_AGENT),
        ("{module}:broken_factory", "the factory raised RuntimeError: no model for you"),
        ("no-colon", "expected module:attr or a [[tool.bench.agents]] name"),
        # A private attribute's name is the agent name without its leading underscores...
        ("{module}:_private", NOT_AN_AGENT),
        ("nomodule:_support", "no module named 'nomodule'"),
        # ...and a reference no agent name can be made from is one line, not a ValidationError.
        ("{module}:__", "'__' is not an agent name"),
        ("{module}:.x", "'.x' is not an agent name"),
    ],
)
def test_bad_references_are_one_line_exit_2_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: str, message: str
) -> None:
    module = write_module(
        tmp_path,
        """
        not_an_agent = {"model": "gpt"}
        _private = {"model": "gpt"}
        def broken_factory(model):
            raise RuntimeError("no model for you")
        """,
    )
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", reference.format(module=module), "--out", "out")
    assert code == 2
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_pyproject_entry_errors_name_file_entry_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pyproject(tmp_path, '[[tool.bench.agents]]\nname = "support"\nagent = "x:y"\nretries = 3\n')
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "support", "--out", "out")
    assert code == 2
    assert "pyproject.toml: [[tool.bench.agents]] entry 'support', field retries: Extra inputs" in err


@pytest.mark.slow
def test_pydantic_ai_agent_gate_catches_a_lost_retry_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's agent with ``retries=2`` is the baseline; the same agent at ``retries=0`` fails
    the gate naming the cell; an unchanged rerun passes."""
    sound = write_module(tmp_path, PYDANTIC_AI.format(retries=2))
    weak = write_module(tmp_path, PYDANTIC_AI.format(retries=0))
    entry = '[[tool.bench.agents]]\nname = "support"\nagent = "{module}:support"\ncheck = "{module}:check"\n'

    write_pyproject(tmp_path, entry.format(module=sound))
    code, out, err = bench(tmp_path, monkeypatch, "run", "--agent", "support", *SMALL, "--out", "baseline")
    assert code == 0, err
    assert "support (pydantic-ai)" in out  # the landing matrix names the agent, with its SDK
    baseline = load_run(tmp_path / "baseline" / "latest")
    runs = baseline["runs"]
    assert set(runs["agent"]) == {"support"} and set(runs["sdk"]) == {"pydantic-ai"}
    assert set(runs["protocol"]) == {"openai-responses"}  # "openai:" is the Responses model in pydantic-ai
    assert (runs["outcome"] != "harness_error").all()
    assert dict(zip(runs["scenario"], runs["outcome"], strict=True)) == {
        "valid": "ok",
        "malformed_then_valid": "recovered",
        "wrong_persistent": "wrong",  # the agent has no validator: the check's wrong answer reaches the user
    }
    answers = read_table(resolve_run(tmp_path / "baseline" / "latest"), "attempts").to_pandas()["answer"]
    assert answers.notna().all()  # every derived answer the agent was sent is recorded

    # The same agent again, in two shard processes (each loads the agent from the recorded request).
    code, out, err = bench(
        tmp_path, monkeypatch, "run", "--agent", "support", *SMALL, "--procs", "2", "--out", "results"
    )
    assert code == 0, err
    code, out, _ = bench(tmp_path, monkeypatch, "gate", "results/latest", "--baseline", "baseline/latest")
    assert code == 0, out

    write_pyproject(tmp_path, entry.format(module=weak))
    code, out, err = bench(tmp_path, monkeypatch, "run", "--agent", "support", *SMALL, "--out", "results")
    assert code == 0, err
    code, out, _ = bench(tmp_path, monkeypatch, "gate", "results/latest", "--baseline", "baseline/latest")
    assert code == 1
    assert "support (pydantic-ai)/tool/own/openai-responses x malformed_then_valid" in out


@pytest.mark.slow
def test_wrong_is_not_applicable_without_a_meaning_of_correct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = write_module(tmp_path, PYDANTIC_AI.format(retries=1))
    code, _, err = bench(
        tmp_path,
        monkeypatch,
        "run",
        "--agent",
        f"{module}:support",
        "--scenario",
        "wrong_persistent",
        "--scenario",
        "valid",
        "--out",
        "out",
    )  # with `valid` beside it the plan is not empty (an all-unsupported plan is refused with exit 2)
    assert code == 0, err
    runs = load_run(tmp_path / "out" / "latest")["runs"].set_index("scenario")
    assert runs.loc["wrong_persistent", "outcome"] == "unsupported"
    assert runs.loc["wrong_persistent", "note"].startswith("not applicable: wrong needs a check")
    assert runs.loc["valid", "outcome"] == "ok"


TOOLED = """
from pathlib import Path
from typing import Any
from pydantic_ai import Agent

HERE = Path(__file__).parent

def lookup_order(order_id: str) -> str:
    '''Look up an order by its id.'''
    (HERE / "REAL_TOOL_CALLED").write_text(order_id)
    raise RuntimeError("the user's real tool was called")

def fake_lookup(order_id: str) -> str:
    with (HERE / "fake_calls.txt").open("a") as calls:
        calls.write(order_id + "\\n")
    return "order found: shipped"

tooled = Agent("openai:gpt-4.1", output_type=Ticket, tools=[lookup_order], retries=2)
"""


def test_derived_tool_faults_replace_the_harness_tools_and_never_run_the_real_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not opted in, the user's tool still gets its derived faults (bench.own.tools), none of
    which runs its real code; the harness tool's scenarios are gone, not `-` rows."""
    module = write_module(tmp_path, TOOLED)
    args = ("run", "--agent", f"{module}:tooled", "--scenario", "valid", "--scenario", "*tool_*", "--out", "out")
    code, _, err = bench(tmp_path, monkeypatch, *args)
    assert code == 0, err
    runs = load_run(tmp_path / "out" / "latest")["runs"]
    assert not runs["scenario"].str.startswith("tool_").any()
    assert set(runs["scenario"]) == {
        "valid", "own_tool_unknown_then_valid", "own_tool_lookup_order_bad_args_then_valid",
        "own_tool_lookup_order_raises_then_valid", "own_tool_lookup_order_parallel_then_valid",
    }  # fmt: skip
    assert "unsupported" not in set(runs["outcome"])
    assert not (tmp_path / "REAL_TOOL_CALLED").exists()


def test_an_opted_in_tool_runs_with_generated_and_broken_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = write_module(tmp_path, TOOLED)
    write_pyproject(
        tmp_path,
        f'[[tool.bench.agents]]\nname = "tooled"\nagent = "{module}:tooled"\n'
        f'tools = {{lookup_order = {{fake = "{module}:fake_lookup"}}}}\n',
    )
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "tooled", "--scenario", "own_tool_*", "--out", "out")
    assert code == 0, err
    runs = load_run(tmp_path / "out" / "latest")["runs"].set_index("scenario")
    assert runs.loc["own_tool_lookup_order_then_valid", "outcome"] == "ok"  # the round trip is a tool turn
    assert runs.loc["own_tool_lookup_order_then_valid", "tool_calls"] == 1  # the fake, logged
    assert runs.loc["own_tool_lookup_order_bad_args_then_valid", "fault"] == "tool_bad_args:missing_field"
    assert not (tmp_path / "REAL_TOOL_CALLED").exists()
    calls = (tmp_path / "fake_calls.txt").read_text().splitlines()
    assert len(calls) == 1  # the broken call never reaches the tool: the SDK rejects its arguments


CLAUDE_TOOLS = """
from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool

@tool("lookup_order", "Look up an order by its id.", {"order_id": str})
async def lookup_order(args):
    raise RuntimeError("the user's real tool was called")

async def fake(args):
    return {"content": [{"type": "text", "text": "shipped"}]}

options = ClaudeAgentOptions(
    output_format={"type": "json_schema", "schema": Ticket.model_json_schema()},
    mcp_servers={"helpdesk": create_sdk_mcp_server("helpdesk", tools=[lookup_order]), "crm": {"command": "crm-mcp"}},
)
"""


@pytest.mark.parametrize(
    ("opt_in", "message"),
    [
        (
            'lookup_order = {fake = "{module}:fake"}',
            "field tools.lookup_order: the agent has no tool 'lookup_order' (its tools: mcp__helpdesk__lookup_order)",
        ),
        ('mcp__crm__find = {fake = "{module}:fake"}', "SDK MCP server (create_sdk_mcp_server) can be faked; 'crm'"),
        ("mcp__crm__find = {}", "field tools.mcp__crm__find: give args = {...}"),
        ('mcp__helpdesk__lookup_order = {fake = "{module}:options"}', "fake {module}:options: a ClaudeAgentOptions"),
    ],
)
def test_claude_tool_opt_ins_name_the_server_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opt_in: str, message: str
) -> None:
    """Claude's tools are the MCP tools the CLI offers (mcp__<server>__<tool>); only an SDK
    server's tool can be listed and faked; an external server's needs explicit args."""
    module = write_module(tmp_path, CLAUDE_TOOLS)
    entry = f'[[tool.bench.agents]]\nname = "claude"\nagent = "{module}:options"\n'
    write_pyproject(tmp_path, entry + "tools = {" + opt_in.replace("{module}", module) + "}\n")
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "claude", "--out", "out")
    assert code == 2
    assert err.count("\n") == 1 and message.replace("{module}", module) in err, err
    assert not (tmp_path / "out").exists()


EXAMPLE = REPO / "examples" / "own_agent"


def test_the_example_project_loads_and_its_baseline_is_current() -> None:
    """examples/own_agent: its three agents load (the LangChain one from a factory of the model
    handle), and its committed baseline holds exactly the cells the project's default run plans
    (so `bench gate --baseline baseline` compares every cell)."""
    from bench.run.suite import SuiteRequest, plan_suite

    adapters, plans = plan_suite(SuiteRequest(agents=(), project=EXAMPLE), warn=lambda message: None)
    assert {name: adapter.binding.sdk for name, adapter in adapters.items()} == {  # type: ignore[attr-defined]
        "support": "pydantic-ai",
        "triage": "openai-agents",
        "intake": "langchain",
    }
    baseline = load_run(EXAMPLE / "baseline")
    runs = baseline["runs"]
    assert set(runs["cell_id"]) == {plan.cell_id for plan in plans}
    assert not (runs["outcome"] == "harness_error").any()
    assert baseline["manifest"]["agents"]["triage"]["wrong"]["label"] != "bug"


@pytest.mark.parametrize("fixture", ["small_run", "tool_run"])
def test_runs_from_before_the_agent_column_still_load(fixture: str) -> None:
    """Runs written before schema 3 (the vendored schema-1 and schema-2 runs) have no agent column:
    they load, every row a built-in adapter ("")."""
    directory = FIXTURES / fixture
    assert "agent" not in pq.read_schema(directory / "runs.parquet").names
    runs = read_table(directory, "runs").to_pandas()
    assert len(runs) > 0 and set(runs["agent"]) == {""}


def test_the_placeholder_keys_hold_while_loading_and_are_unset_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent built at import time sees a key; the process's environment is as it was after."""
    from bench.own.adapter import load_agents
    from bench.sdk.adapter import LOCAL_API_KEY

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "the-users-own")
    module = write_module(tmp_path, PYDANTIC_AI.format(retries=1) + "import os\nseen = dict(os.environ)\n")
    adapters = load_agents([f"{module}:support"], tmp_path)
    seen = __import__(module).seen
    assert seen["OPENAI_API_KEY"] == LOCAL_API_KEY and seen["ANTHROPIC_API_KEY"] == "the-users-own"
    assert "OPENAI_API_KEY" not in os.environ and os.environ["ANTHROPIC_API_KEY"] == "the-users-own"
    assert set(adapters) == {"support"}


OPENAI_AGENTS = """
from agents import Agent, RunHooks

class Counting(RunHooks):
    def __init__(self):
        self.llm_starts = 0
        self.agent_starts = 0

    async def on_llm_start(self, context, agent, system_prompt, input_items):
        self.llm_starts += 1

    async def on_agent_start(self, context, agent):
        self.agent_starts += 1

hooks = Counting()
with_hooks = {{"hooks": hooks}}
triage = Agent("triage", model="gpt-4.1", output_type=Ticket, instructions="Triage the ticket.")
"""


@pytest.mark.slow
@pytest.mark.parametrize("own_hooks", [False, True])
def test_openai_agents_usage_is_reported_when_an_http_error_carries_no_run_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_hooks: bool
) -> None:
    """A 400 raises openai's BadRequestError, which the SDK gives no run_data (run.py:2431-2443):
    the usage is the run's own wrapper, seen by the built-in adapter's probe, in front of the
    user's hooks when they pass some (which still see every call)."""
    module = write_module(tmp_path, OPENAI_AGENTS.format())
    entry = f'[[tool.bench.agents]]\nname = "triage"\nagent = "{module}:triage"\n'
    if own_hooks:
        entry += f'run_kwargs = "{module}:with_hooks"\n'
    write_pyproject(tmp_path, entry)
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", "triage", "--scenario", "http_400_persistent")
    assert code == 0, err
    runs = load_run(tmp_path / "results" / "latest")["runs"]
    assert list(runs["exception_type"]) == ["openai.BadRequestError"]
    assert list(runs["input_tokens_reported"]) == [0] and list(runs["output_tokens_reported"]) == [0]
    assert runs["details"].iloc[0]["usage_source"] == "hooks.context_wrapper"
    if own_hooks:
        hooks = __import__(module).hooks
        assert hooks.llm_starts >= 1 and hooks.agent_starts == 1


CLAUDE = """
from claude_agent_sdk import ClaudeAgentOptions

options = ClaudeAgentOptions(output_format={"type": "json_schema", "schema": Ticket.model_json_schema()})
"""


@pytest.mark.slow
def test_claude_cells_use_the_built_in_launcher_and_a_scratch_the_sweep_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The CLI is started through the built-in adapter's launcher (PR_SET_PDEATHSIG: it dies with
    the harness), from a scratch folder named with the harness's pid, which the stale-scratch sweep
    removes once that process is gone, in the one working directory every cell shares (the CLI
    bills its path in every request: issue 48)."""
    import subprocess
    import sys
    import tempfile

    import adapters.claude_agent_sdk.adapter as builtin
    import adapters.claude_agent_sdk.own as own

    if not sys.platform.startswith("linux") or builtin.shutil.which("setpriv") is None:
        pytest.skip("the launcher needs Linux and setpriv")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path(tempfile.gettempdir()) / f"{builtin.SCRATCH_PREFIX}{int(gone.stdout)}-left"
    stale.mkdir()
    request.addfinalizer(lambda: stale.exists() and stale.rmdir())
    monkeypatch.setattr(builtin, "_SWEPT", [])
    seen: list[tuple[str | None, str, bool]] = []
    real_query = own.query

    def recording(*, prompt: str, options: Any) -> Any:
        launcher = options.cli_path
        guarded = launcher is not None and "--pdeathsig KILL" in Path(launcher).read_text()
        seen.append((launcher, str(options.cwd), guarded))
        return real_query(prompt=prompt, options=options)

    monkeypatch.setattr(own, "query", recording)
    module = write_module(tmp_path, CLAUDE)
    code, _, err = bench(tmp_path, monkeypatch, "run", "--agent", f"{module}:options", "--scenario", "valid")
    assert code == 0, err
    assert list(load_run(tmp_path / "results" / "latest")["runs"]["outcome"]) == ["ok"]
    [(launcher, cwd, guarded)] = seen
    assert launcher is not None and Path(launcher).name == "claude" and guarded
    assert Path(launcher).parent.name.startswith(f"{builtin.SCRATCH_PREFIX}{os.getpid()}-")
    assert cwd == builtin.shared_workdir()
    assert not stale.exists()  # swept: its process is gone


NATIVE_ON_HAIKU = """
from pydantic_ai import Agent, NativeOutput
support = Agent("anthropic:claude-3-5-haiku-latest", output_type=NativeOutput(Ticket))
"""


@pytest.mark.slow
def test_an_agent_its_sdk_refuses_before_sending_is_raised_not_a_harness_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's NativeOutput on a model whose profile has no native structured output: Pydantic
    AI raises UserError before any request, as it would in production. That is the agent's
    outcome (raised, 0 calls), not the harness's problem (harness_error, exit 3)."""
    module = write_module(tmp_path, NATIVE_ON_HAIKU)
    code, _, err = bench(
        tmp_path, monkeypatch, "run", "--agent", f"{module}:support", "--scenario", "valid", "--out", "out"
    )
    assert code == 0, err
    runs = load_run(tmp_path / "out" / "latest")["runs"]
    ran = runs[runs["outcome"] != "unsupported"]
    assert len(ran) > 0 and set(ran["outcome"]) == {"raised"}, ran[["outcome", "exception_type"]]
    assert set(ran["exception_type"]) == {"pydantic_ai.exceptions.UserError"}
    assert set(ran["model_calls"]) == {0}


def test_a_connection_failure_stays_the_harness_problem_for_a_users_agent() -> None:
    """Only a refusal before sending is the agent's outcome: a request that could not reach the
    provider (a proxy, a refused connection; wrapped by the SDK, or named by a release worker)
    keeps the no-model-call harness error."""
    import httpx
    from pydantic_ai.exceptions import UserError

    from bench.releases.protocol import RemoteError
    from bench.run.classify import _transport_failure

    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as cause:
            raise RuntimeError("the SDK's own wrapper") from cause
    except RuntimeError as wrapped:
        assert _transport_failure(wrapped)
    assert _transport_failure(httpx.ConnectError("refused"))
    assert not _transport_failure(UserError("Native structured output is not supported by this model."))
    assert not _transport_failure(ValueError("no"))
    assert _transport_failure(RemoteError("openai.APIConnectionError", "Connection error."))
    assert not _transport_failure(RemoteError("pydantic_ai.exceptions.UserError", "not supported"))
