"""The Claude Agent SDK adapter: ``query(prompt, options=ClaudeAgentOptions(output_format=...))``.

The Python SDK is a thin driver for the bundled Claude Code CLI: it turns the options into CLI
flags, spawns the binary and reads NDJSON messages from its stdout. ``output_format``
``{"type": "json_schema", "schema": ...}`` becomes ``--json-schema <schema>``
(_internal/transport/subprocess_cli.py:729-738); everything after that (how the schema reaches
the model, validation, retries, giving up) happens inside the CLI binary. On the wire the CLI
offers the schema as an ordinary ``StructuredOutput`` tool (no ``tool_choice``, no ``strict``,
no ``output_config.format``), validates the tool input itself, sends schema errors back as
``is_error`` tool results and gives up after 5 StructuredOutput calls with the result subtype
``error_max_structured_output_retries`` (observed; see adapters/claude_agent_sdk/research.md).
A terminal error result is yielded as a ``ResultMessage`` and then raised as ``ResultError``
once the CLI exits non-zero (_internal/query.py:534-537, 565-590; _errors.py:56).

A task with a harness tool gets it as an in-process SDK MCP tool (``@tool`` +
``create_sdk_mcp_server``, offered by the CLI as ``mcp__harness__lookup_order``); see
``_tool_server`` and adapters/claude_agent_sdk/research.md section 7.

Source references are to claude-agent-sdk 0.2.189 (bundled CLI 2.1.332) under
``site-packages/claude_agent_sdk``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

import psutil
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    HookJSONOutput,
    HookMatcher,
    McpSdkServerConfig,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolUseBlock,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import (
    MODES,
    PROTOCOLS,
    VARIANTS,
    Adapter,
    AdapterResult,
    Cell,
    Endpoint,
    ReportedUsage,
    Support,
    SupportTable,
    grid,
)  # fmt: skip
from bench.sdk.progress import note_progress
from bench.tools import OrderLookupTool, OrderToolError

CLOSE_GRACE_S = 10.0
"""How long a cancelled cell waits for the SDK to unwind once its CLI is dead."""

STDERR_LINES = 20
"""The CLI stderr lines kept (the last ones) for ``details["cli_stderr"]``."""

CLI_WORK_CPU_S = 30.0
"""The most CLI CPU one cell may count as progress (:mod:`bench.sdk.progress`): about fifteen
times a CLI's start (about 2 s of CPU), so a start slowed by load is never taken for a stall,
and a CLI that works without ever calling the provider still stops, at this much CPU and then
the stall limit. CPU seconds, not wall: the same work costs the same CPU at any load."""

CLI_POLL_S = 5.0
"""How often a cell's CLI CPU is read; a cell that ends sooner (nearly every one) is never read."""

CLI_WORKING_SHARE = 0.01
"""The share of a core between two readings that counts as working (an idle CLI waiting on a
socket uses less; one starved by a load of 25 on two cores still gets about 8 %)."""

OUTPUT_TOOL = "StructuredOutput"
"""The tool the CLI builds from ``--json-schema`` (observed on the wire; CLI 2.1.332)."""

HARDENED_MAX_TURNS = 10
"""``max_turns`` (types.py:2509, ``--max-turns``, subprocess_cli.py:559-560): the SDK docs'
production budget. Above the 6 turns the CLI needs to exhaust its 5 structured-output attempts,
so the CLI's own structured-output limit, not the turn cap, decides a repeated schema fault."""

HARDENED_ENV = {
    # Documented Claude Code env vars (code.claude.com/docs/en/env-vars): the transport retry
    # budget (default 10, i.e. 11 calls and ~3 minutes of backoff on a persistent 500) and the
    # per-request timeout (default 600 s), both kept under the cell's time limit.
    "CLAUDE_CODE_MAX_RETRIES": "2",
    "API_TIMEOUT_MS": "20000",
}

QUIET_ENV = {
    # Without this the CLI sends HEAD /api/hello and a session-title side query (a second
    # /v1/messages call with output_config.format) to ANTHROPIC_BASE_URL, and resolves
    # telemetry hosts in DNS (observed with strace; adapters/claude_agent_sdk/research.md).
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # Credentials or cloud routes inherited from the caller's shell must not win over the
    # local endpoint (isEnvTruthy treats "" as off).
    "ANTHROPIC_AUTH_TOKEN": "",
    "CLAUDE_CODE_USE_BEDROCK": "",
    "CLAUDE_CODE_USE_VERTEX": "",
    "CLAUDE_CODE_USE_FOUNDRY": "",
}


LEAN_START_ENV = {
    # Start-up work the harness switches off (docs/performance.md, "Claude CLI start-up"): each
    # cell runs in a fresh, empty HOME and an empty cwd, so there is no memory, CLAUDE.md, marketplace,
    # skill or checkpoint to load, and nothing here reaches the provider. Recorded request
    # bodies are byte-identical with and without them, apart from per-cell ids.
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
}

LEAN_START_ARGS: dict[str, str | None] = {
    # ``extra_args`` become ``--flag`` (subprocess_cli.py:690-695): no session transcript written
    # to disk, no MCP configuration looked up, no skills or slash commands loaded (tools=[]
    # already offers none to the model).
    "no-session-persistence": None,
    "strict-mcp-config": None,
    "disable-slash-commands": None,
}


TOOL_SERVER = "harness"
"""The SDK MCP server holding the harness tool; the CLI offers the tool as
``mcp__harness__lookup_order``."""


@dataclass
class _HookLog:
    """What the hardened variant's hooks did in one run (reported in ``details``)."""

    denials: list[str] = field(default_factory=list)
    """Reasons the StructuredOutput validator gave for the answers it denied."""
    fatal_tool_errors: list[str] = field(default_factory=list)
    """Error codes of the non-retryable tool errors the PostToolUseFailure hook saw."""
    tool_calls_stopped: int = 0
    """Tool calls the PreToolUse guard refused (with ``continue: false``) after one of those."""


@dataclass(frozen=True)
class _Spec:
    """How one supported cell is built."""

    hardened: bool = False
    partial_messages: bool = False
    """``include_partial_messages=True``: the SDK's streaming entry point (StreamEvent messages,
    types.py:1828; ``--include-partial-messages``, subprocess_cli.py:643-644)."""


def _spec(cell: Cell) -> _Spec:
    """How a supported cell is built: the variant decides it (the support table lists the cells)."""
    return _Spec(hardened=cell.variant == Variant.HARDENED, partial_messages=cell.stream)


_DEFAULT_NOTE = (
    "output_format json_schema -> --json-schema (subprocess_cli.py:729-738); the CLI sends it as "
    "an unforced, non-strict StructuredOutput tool and validates the input itself"
)
_HARDENED_NOTE = (
    "as default + PreToolUse hook on StructuredOutput denying task.check failures, "
    f"max_turns={HARDENED_MAX_TURNS}, CLAUDE_CODE_MAX_RETRIES=2, API_TIMEOUT_MS=20000; "
    "no SDK error handler exists for exhausted retries (no fallback); a harness tool returns its "
    "errors as is_error results, and a non-retryable one stops the run (PostToolUseFailure + "
    "PreToolUse hooks with continue: false)"
)
_STREAM_NOTE = "as default + include_partial_messages=True (StreamEvent per SSE event)"


_NO_OPENAI = (
    "the bundled CLI speaks only Anthropic Messages (ANTHROPIC_BASE_URL; Bedrock/Vertex/Foundry "
    "are Anthropic-shaped too); there is no OpenAI endpoint option"
)
_NO_NATIVE = (
    "output_format reaches the main loop only as the StructuredOutput tool; the CLI puts "
    "output_config.format on its own side queries (e.g. session titles), never on the task call"
)
_NO_PROMPTED = (
    "without output_format the CLI returns only ResultMessage.result text; turning it into an "
    "object would be our own parsing"
)
_TOOL_NOTES: dict[Variant | str, str] = {
    Variant.DEFAULT: _DEFAULT_NOTE,
    Variant.HARDENED: _HARDENED_NOTE,
    Variant.STREAM: _STREAM_NOTE,
}


def _support(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
    """One output mode (the StructuredOutput tool) on one protocol, in every variant; the gaps
    are listed once, under the default variant (None: no cell for the other variants)."""
    if (mode, protocol) == (Mode.TOOL, Protocol.ANTHROPIC):
        return Support.builtin(_TOOL_NOTES[variant])
    if variant != Variant.DEFAULT:
        return None
    if protocol is not Protocol.ANTHROPIC:
        return Support.unsupported(_NO_OPENAI)
    return Support.unsupported(_NO_NATIVE if mode is Mode.NATIVE else _NO_PROMPTED)


class ClaudeAgentSdkAdapter(Adapter):
    """claude-agent-sdk 0.2.189: ``query()`` with ``output_format``, via the bundled CLI."""

    name: ClassVar[str] = "claude-agent-sdk"
    distribution: ClassVar[str] = "claude-agent-sdk"
    support: ClassVar[SupportTable] = grid(MODES, PROTOCOLS, VARIANTS, _support)
    """One output mode (the StructuredOutput tool) on one protocol; the gaps are listed once,
    under the default variant."""
    harness_tools: ClassVar[bool] = True
    """Every supported cell runs the harness tool as an SDK MCP tool (``@tool`` +
    ``create_sdk_mcp_server``, __init__.py:277-357, 517-646), served in-process over the
    control protocol (``mcp_message``, _internal/query.py:711-729)."""
    worker_requirements: ClassVar[tuple[str, ...]] = ("psutil",)
    supported_releases: ClassVar[str] = ">=0.2.108"
    """0.2.x releases with their bundled CLI (platform wheels, ``_bundled/claude``); every option
    used here is in 0.2.82, the first 0.2. Before 0.2.108 (bundled CLI 2.1.186 and older) the
    CLI asks the model again after a StructuredOutput call it accepted (the tool result
    "Structured output provided successfully", then a new /v1/messages call; observed on the
    wire, anthropics/claude-code#17125). A model would end that turn; the scripted provider
    answers every call from the scenario, so it would measure our script, not the SDK: those
    releases are out of range (``bench bisect claude-agent-sdk valid``, run between 0.2.82 and
    0.2.139 before this range was set, named 0.2.108, CLI 2.1.187, where the run ends at the
    accepted call)."""
    time_limit_s: ClassVar[float] = 60.0
    """A subprocess per cell (~0.4 s to the init message) plus the CLI's own retry backoff."""
    max_concurrency: ClassVar[int] = 2

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Spawn the CLI through ``query()`` once, collect every message, record what came back.

        Only the ``async for`` over ``query()`` is guarded, and its body only appends; reading
        the messages happens afterwards, so a bug here escapes as a harness error. The CLI
        subprocess is killed on every exit path, cancellation included.
        """
        spec = _spec(cell)
        hooks = _HookLog()
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        messages: list[tuple[float, Any]] = []
        sweep_stale_scratch()
        with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as scratch:
            options = _options(spec, task, endpoint, scratch, hooks, lambda line: _keep_stderr(stderr, line))
            marker = options.env["CLAUDE_CONFIG_DIR"]
            # query() is declared as AsyncIterator but is an async generator (query.py:12-132);
            # its aclose() is what runs the SDK's teardown.
            stream = cast(AsyncGenerator[Any, None], query(prompt=task.prompt, options=options))
            exception = await _consume(stream, messages, marker)
            leftovers = _cli_processes(marker)
            _kill(leftovers)
        result = _result(messages, exception, spec)
        result.details["cli_left_running"] = str(len(leftovers))
        if stderr:
            result.details["cli_stderr"] = "\n".join(stderr)[-500:]
        if spec.hardened:
            result.details["hook_denials"] = str(len(hooks.denials))
        if spec.hardened and task.tool is not None:
            result.details["fatal_tool_errors"] = ",".join(hooks.fatal_tool_errors)
            result.details["tool_calls_stopped"] = str(hooks.tool_calls_stopped)
        return result


async def _consume(
    stream: AsyncGenerator[Any, None], messages: list[tuple[float, Any]], marker: str
) -> Exception | None:
    """:func:`_drain` in a task of its own, so that a cancellation reaches us first: we kill the
    CLI, then let the SDK unwind against a dead process (:func:`_on_cancel`). Meanwhile the
    CLI's CPU is watched (:func:`_watch_cli`)."""
    consumer = asyncio.create_task(_drain(stream, messages))
    watcher = asyncio.create_task(_watch_cli(marker))
    try:
        return await asyncio.shield(consumer)
    except asyncio.CancelledError:
        await _on_cancel(consumer, marker)
        raise
    finally:
        watcher.cancel()


async def _watch_cli(marker: str, budget_s: float = CLI_WORK_CPU_S) -> None:
    """Note progress (:mod:`bench.sdk.progress`) while this cell's CLI processes use CPU, up to
    ``budget_s`` of it in all: a CLI starting slowly on a loaded machine is working, not stalled,
    though the provider has not heard from it yet."""
    used: dict[int, float] = {}
    counted = 0.0
    while counted < budget_s:
        read_at = time.monotonic()
        await asyncio.sleep(CLI_POLL_S)
        worked = 0.0
        for proc in _cli_processes(marker):
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                now = times.user + times.system
                worked += max(0.0, now - used.get(proc.pid, 0.0))
                used[proc.pid] = now
        if worked >= CLI_WORKING_SHARE * CLI_POLL_S:  # some time since the last reading: dated at it
            counted += worked
            note_progress(ago_s=time.monotonic() - read_at)


async def _drain(stream: AsyncGenerator[Any, None], messages: list[tuple[float, Any]]) -> Exception | None:
    """Iterate ``query()`` to its end, keeping each message with its arrival time; returns the
    exception the SDK raised, if any.

    The loop body only appends, so anything caught here is the SDK's. Closing the generator
    runs the SDK's own teardown (``Query.close()`` -> ``SubprocessCLITransport.close()``,
    _internal/client.py:55-71, 209-211), which waits for the CLI to exit.
    """
    started = time.monotonic()
    try:
        async for message in stream:
            messages.append((time.monotonic() - started, message))
    except Exception as exc:  # the SDK's own, e.g. ResultError, ProcessError
        return exc
    finally:
        await stream.aclose()
    return None


async def _on_cancel(consumer: asyncio.Task[Exception | None], marker: str) -> None:
    """Kill this cell's CLI processes, then cancel the SDK's task and let it unwind.

    Left to itself, the SDK's close waits up to 5 s for the CLI to exit after stdin EOF before
    SIGTERM (subprocess_cli.py:984-1001), and under a raw asyncio cancellation that escalation
    can be skipped altogether (its own docstring, subprocess_cli.py:934-943). With the process
    already dead, ``process.wait()`` returns at once.
    """
    _kill(_cli_processes(marker))
    consumer.cancel()
    await asyncio.wait({consumer}, timeout=CLOSE_GRACE_S)
    _kill(_cli_processes(marker))  # one spawned while we were killing the first


def _options(
    spec: _Spec, task: Task, endpoint: Endpoint, scratch: str, hooks: _HookLog, stderr: Callable[[str], None]
) -> ClaudeAgentOptions:
    """The options a user would write, pointed at the local provider and isolated from the host.

    ``env`` is merged over the inherited environment (subprocess_cli.py:764-770), so these
    values win; ``setting_sources=[]`` loads no user or project settings (types.py:2759-2770,
    ``--setting-sources=``, subprocess_cli.py:678-679); ``tools=[]`` offers no built-in tool,
    leaving the CLI's StructuredOutput tool alone (``--tools ""``, subprocess_cli.py:541-547).
    The documented ``stderr`` callback (types.py:2613-2617, subprocess_cli.py:825-848) keeps the
    CLI's diagnostics in the result instead of the runner's terminal. ``LEAN_START_*`` skip
    start-up work that an empty HOME makes moot (10-40 ms of a ~0.46 s cell, docs/performance.md).
    """
    home = os.path.join(scratch, "home")
    workdir = shared_workdir()
    env = {
        **QUIET_ENV,
        **LEAN_START_ENV,
        "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
        "ANTHROPIC_API_KEY": endpoint.api_key,
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        **(HARDENED_ENV if spec.hardened else {}),
    }
    extra: dict[str, Any] = {}
    if task.tool is not None:
        extra["mcp_servers"] = {TOOL_SERVER: _tool_server(task.tool, spec.hardened)}
        extra["allowed_tools"] = [wire_tool_name(task.tool.name)]
    if spec.hardened:
        extra["max_turns"] = HARDENED_MAX_TURNS
        extra["hooks"] = {"PreToolUse": [HookMatcher(matcher=OUTPUT_TOOL, hooks=[_validator(task, hooks.denials)])]}
        if task.tool is not None:
            _add_tool_stop_hooks(extra["hooks"], wire_tool_name(task.tool.name), hooks)
    if spec.partial_messages:
        extra["include_partial_messages"] = True
    if (guarded := _cli_dying_with_parent(scratch)) is not None:
        extra["cli_path"] = guarded
    return ClaudeAgentOptions(
        output_format={"type": "json_schema", "schema": task.schema},
        model=endpoint.anthropic_model,
        tools=[],
        setting_sources=[],
        cwd=workdir,
        env=env,
        stderr=stderr,
        extra_args=dict(LEAN_START_ARGS),
        **extra,
    )


SCRATCH_PREFIX = "misfit-claude-"
"""Each cell's HOME: ``<tmp>/misfit-claude-<harness pid>-<random>/home``."""
WORKDIR_NAME = "misfit-claude-cwd"


def shared_workdir() -> str:
    """Every cell's cwd: ``<tmp>/misfit-claude-cwd``, one empty read-only folder, the same path in
    every run. The CLI writes its working directory into the first message of every request
    ("Primary working directory: ..."), which is billed; a folder of its own per cell
    (``<tmp>/misfit-claude-<pid>-<random>/work``) made the same cell bill up to 6 input tokens more
    or less from run to run (issue 48). The CLI keeps its session files under the cell's own HOME
    (``CLAUDE_CONFIG_DIR``), not in the cwd; read-only, a write there fails instead of reaching
    another cell."""
    path = os.path.join(tempfile.gettempdir(), WORKDIR_NAME)
    os.makedirs(path, mode=0o555, exist_ok=True)
    return path


def _cli_dying_with_parent(scratch: str) -> str | None:
    """A launcher for the CLI the SDK would pick (its own ``_find_cli``) that exec's it with
    ``PR_SET_PDEATHSIG=SIGKILL`` (util-linux ``setpriv``), so the CLI dies with the harness even
    under SIGKILL, when no cleanup of ours can run; otherwise it keeps retrying against the dead
    provider for minutes. The exec keeps the pid, pipes and arguments the SDK gave it.

    None (the SDK spawns its CLI itself, unguarded) off Linux, without ``setpriv``, or when no
    CLI is found (the SDK then raises its own CLINotFoundError). One difference: the SDK labels
    the client app only for its bundled CLI path, a header the provider does not read."""
    setpriv = shutil.which("setpriv")
    if not sys.platform.startswith("linux") or setpriv is None:
        return None
    try:  # the SDK's own lookup (bundled CLI first, then PATH; it reads no instance state)
        cli = SubprocessCLITransport._find_cli(cast(Any, object.__new__(SubprocessCLITransport)))
    except Exception:  # CLINotFoundError, or a lookup that changed shape: leave the spawn to the SDK
        return None
    launcher = os.path.join(scratch, "claude")
    with open(launcher, "w", encoding="utf-8") as script:
        script.write(f'#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(cli)} "$@"\n')
    os.chmod(launcher, 0o700)
    return launcher


def sweep_stale_scratch() -> None:
    """Remove the scratch folders of harness processes that are gone (killed before their
    ``TemporaryDirectory`` could clean up): once per process, at its first Claude cell."""
    if _SWEPT:
        return
    _SWEPT.append(True)
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        owner = folder.name.removeprefix(SCRATCH_PREFIX).partition("-")[0]
        if owner.isdigit() and not psutil.pid_exists(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


_SWEPT: list[bool] = []


def wire_tool_name(name: str, server: str = TOOL_SERVER) -> str:
    """The name the CLI offers an SDK MCP tool under: ``mcp__<server>__<tool>``."""
    return f"mcp__{server}__{name}"


def _tool_server(order_tool: OrderLookupTool, hardened: bool) -> McpSdkServerConfig:
    """The harness tool as an in-process SDK MCP server (``@tool`` + ``create_sdk_mcp_server``).

    Default: the handler lets :class:`OrderToolError` propagate; what the SDK does with it is
    what is measured. Hardened: the handler returns the structured error as an ``is_error``
    result, the SDK's documented way to report a tool failure (``tool()`` docstring).
    """

    async def lookup_order(args: dict[str, Any]) -> dict[str, Any]:
        record = await order_tool.lookup(args["order_id"])
        return {"content": [{"type": "text", "text": json.dumps(record)}]}

    async def lookup_order_hardened(args: dict[str, Any]) -> dict[str, Any]:
        try:
            return await lookup_order(args)
        except OrderToolError as error:
            return {"content": [{"type": "text", "text": str(error)}], "is_error": True}

    handler = lookup_order_hardened if hardened else lookup_order
    sdk_tool = tool(order_tool.name, order_tool.description, order_tool.parameters)(handler)
    return create_sdk_mcp_server(TOOL_SERVER, tools=[sdk_tool])


def _add_tool_stop_hooks(hooks: dict[str, list[HookMatcher]], tool_name: str, log: _HookLog) -> None:
    """Hardened: end the run on a non-retryable tool error, with the hooks' documented
    ``continue: false`` ("whether Claude should proceed after hook execution", types.py:822-842;
    sent as ``continue``, _internal/query.py:143-159).

    The place the docs point to is the hook that sees the failure, PostToolUseFailure
    (types.py:410-421; an ``is_error`` MCP result fires it, not PostToolUse). CLI 2.1.332 ignores
    ``continue: false`` there (its PostToolUseFailure runner only forwards messages, blocking
    errors and additionalContext), so the model gets another turn; a PreToolUse hook on the
    tool (whose ``continue: false`` the CLI does honour) then refuses the next call and ends the
    run before the tool runs again. See adapters/claude_agent_sdk/research.md, "Tool errors".
    """

    async def on_failure(hook_input: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        error = _structured_error(hook_input.get("error"))
        if error is None or error.get("retryable") is not False:
            return {}
        log.fatal_tool_errors.append(str(error.get("error_code")))
        return {"continue_": False, "stopReason": _stop_reason(log)}

    async def guard(hook_input: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        if not log.fatal_tool_errors:
            return {}
        log.tool_calls_stopped += 1
        reason = _stop_reason(log)
        return {
            "continue_": False,
            "stopReason": reason,
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            },
        }

    hooks.setdefault("PreToolUse", []).append(HookMatcher(matcher=tool_name, hooks=[guard]))
    hooks.setdefault("PostToolUseFailure", []).append(HookMatcher(matcher=tool_name, hooks=[on_failure]))


def _structured_error(text: Any) -> dict[str, Any] | None:
    """The harness tool's structured error, if ``text`` is one (the JSON of ``OrderToolError``)."""
    try:
        error = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return error if isinstance(error, dict) and "error_code" in error else None


def _stop_reason(log: _HookLog) -> str:
    return f"non-retryable tool error {log.fatal_tool_errors[-1]}: not calling the tool again"


def _validator(task: Task, denials: list[str]) -> Any:
    """A PreToolUse hook (the docs' "validate, modify, or block tool calls") that denies a
    StructuredOutput call whose input is schema-valid but fails ``task.check``.

    Schema-invalid input is left alone (``{}`` = no opinion, types.py:895-901) so the CLI's own
    schema validation still produces its own error; the CLI sends the deny reason back to the
    model as an ``is_error`` tool result (the SDK answers the ``hook_callback`` control request,
    _internal/query.py:695-708).
    """

    async def validate(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        value = hook_input.get("tool_input")
        valid, correct = task.judge(value)
        if not valid or correct:
            return {}
        reason = task.check(value) or "semantic check failed"
        denials.append(reason)
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }

    return validate


def _cli_processes(marker: str) -> list[psutil.Process]:
    """Descendants of this process that inherited this cell's CLAUDE_CONFIG_DIR."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("CLAUDE_CONFIG_DIR") == marker and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def _kill(processes: list[psutil.Process]) -> None:
    """SIGKILL without reaping: the CLI is the SDK's child, and its ``process.wait()`` (anyio's
    asyncio child watcher) must be the one to collect the exit status."""
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)


def _result(messages: list[tuple[float, Any]], exception: Exception | None, spec: _Spec) -> AdapterResult:
    """What reached the caller: ``ResultMessage.structured_output`` (the documented place for
    the answer), the exception, and the usage the CLI reported.

    A terminal error is yielded as a ResultMessage before the ResultError is raised
    (_internal/query.py:534-537, 565-590), so usage is reported on the raising path too.
    """
    final = next((m for _, m in reversed(messages) if isinstance(m, ResultMessage)), None)
    result = AdapterResult(exception=exception)
    result.details["structured_output_calls"] = str(_output_tool_calls(messages))
    init_at = next((t for t, m in messages if isinstance(m, SystemMessage) and m.subtype == "init"), None)
    if init_at is not None:
        result.details["cli_init_ms"] = f"{init_at * 1000:.0f}"
    if spec.partial_messages:
        result.details["stream_events"] = str(sum(isinstance(m, StreamEvent) for _, m in messages))
    if final is None:
        return result
    result.output = final.structured_output
    result.usage = _usage(final)
    result.details.update(_result_details(final))
    return result


def _output_tool_calls(messages: list[tuple[float, Any]]) -> int:
    return sum(
        isinstance(block, ToolUseBlock) and block.name == OUTPUT_TOOL
        for _, message in messages
        if isinstance(message, AssistantMessage)
        for block in message.content
    )


def _usage(final: ResultMessage) -> ReportedUsage | None:
    """``ResultMessage.usage`` (types.py:1777): the CLI's accumulated Anthropic usage dict."""
    usage = final.usage
    if not usage:
        return None
    return ReportedUsage(input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"))


def _result_details(final: ResultMessage) -> dict[str, str]:
    details = {
        "result_subtype": final.subtype,
        "result_is_error": str(final.is_error),
        # Bridge: ResultMessage has no terminal_reason in 0.2.108-0.2.116 (0.2.139 has, types.py:1332).
        "terminal_reason": str(getattr(final, "terminal_reason", None)),
        "stop_reason": str(final.stop_reason),
        "num_turns": str(final.num_turns),
        "total_cost_usd": str(final.total_cost_usd),
    }
    if final.structured_output is None and final.result:
        details["result_text"] = final.result[:200]
    if final.errors:
        details["result_errors"] = "; ".join(final.errors)[:300]
    return details


def _keep_stderr(kept: deque[str], line: str) -> None:
    """A line the CLI wrote on its stderr: kept for ``details`` and written to the SDK's own stderr,
    which a run sends to sdk.log (never the user's terminal)."""
    kept.append(line)
    print(f"claude cli: {line}", file=sys.stderr)
