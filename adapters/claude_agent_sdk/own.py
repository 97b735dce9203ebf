"""A user's Claude Agent SDK ``ClaudeAgentOptions`` (plus the prompt), driven through ``query()``.

The Python SDK drives the bundled Claude Code CLI, which reads its endpoint from the
environment: ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` (code.claude.com/docs/en/env-vars).
``ClaudeAgentOptions.env`` is merged over the inherited environment (subprocess_cli.py:764-770),
so the binding adds the endpoint there, together with what keeps the CLI off the network
(``QUIET_ENV``) and a scratch ``HOME`` (so neither the host's login nor its settings apply, and
this cell's CLI processes can be found and killed on a time limit). Everything else in the
options (output_format, hooks, max_turns, allowed tools, MCP servers, model, system prompt) is
the user's, unchanged. The process handling is the built-in adapter's: its scratch folder
(``SCRATCH_PREFIX`` with this process's pid, swept by ``sweep_stale_scratch`` once the process is
gone), its launcher that makes the CLI die with the harness (``cli_path``, unless the user set
one), its kill of the cell's CLI processes on every exit path.

The user's tools are MCP tools, offered by the CLI as ``mcp__<server>__<tool>``. Those of an SDK
MCP server (``mcp_servers={name: create_sdk_mcp_server(...)}``, an in-process ``mcp.server.Server``)
are listed the way the CLI lists them, over MCP (``tools/list``, through ``mcp.Client`` in
memory). A fake replaces that server in a copy of the options (``dataclasses.replace``, as for
``env``): ``create_sdk_mcp_server`` under the same name, with the listed tools (name, description,
input schema, annotations), the faked ones calling the user's handler-shaped stand-in
(``async def fake(args) -> {"content": [...]}``) and the others forwarding to the user's server.
An external server (stdio, SSE, HTTP, a config file) cannot be listed without starting it: its
tools can be opted in with explicit ``args`` and run for real, never faked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import tempfile
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, cast

from adapters.claude_agent_sdk.adapter import (
    QUIET_ENV,
    SCRATCH_PREFIX,
    STDERR_LINES,
    ClaudeAgentSdkAdapter,
    _cli_dying_with_parent,
    _cli_processes,
    _consume,
    _kill,
    _result,
    _Spec,
    shared_workdir,
    sweep_stale_scratch,
    wire_tool_name,
)
from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding
from bench.own.config import OwnAgentError
from bench.sdk.adapter import AdapterResult, Endpoint
from bench.tools.own import current

try:
    from claude_agent_sdk import ClaudeAgentOptions, McpSdkServerConfig, SdkMcpTool, create_sdk_mcp_server, query
    from mcp.types import Tool as McpTool
except ImportError as e:  # pragma: no cover - exercised only without the extra installed
    raise ImportError("a Claude agent needs the Claude Agent SDK: pip install 'misfit-bench[claude-agent-sdk]'") from e


class ClaudeBinding(Binding):
    sdk: ClassVar[str] = "claude-agent-sdk"
    distribution: ClassVar[str] = "claude-agent-sdk"
    agent_type: ClassVar[type] = ClaudeAgentOptions
    time_limit_s: ClassVar[float] = ClaudeAgentSdkAdapter.time_limit_s
    max_concurrency: ClassVar[int] = ClaudeAgentSdkAdapter.max_concurrency

    @classmethod
    def protocol_of(cls, agent: Any, configured: Protocol | None) -> Protocol:
        return Protocol.ANTHROPIC  # the CLI speaks only Anthropic Messages

    def output(self) -> Any:
        output_format = self.agent.output_format or {}
        return output_format.get("schema") if output_format.get("type") == "json_schema" else None

    def mode(self) -> Mode:
        return Mode.TOOL  # the CLI offers output_format as its StructuredOutput tool

    def note(self) -> str:
        return "the user's ClaudeAgentOptions with ANTHROPIC_BASE_URL in env, query(prompt)"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        return {name: tool.input_schema for name, (_, tool) in self._listed.items()}

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        if name not in self._listed and _external(self.agent, _server_of(name)):
            return None  # an external server's tools are known only once it runs: explicit args
        return super().tool_schema(name)

    def fake(self, name: str, implementation: Any) -> None:
        if name not in self._listed:
            server = _server_of(name)
            raise OwnAgentError(
                f"only a tool of an SDK MCP server (create_sdk_mcp_server) can be faked; {server!r} is external"
            )
        super().fake(name, implementation.handler if isinstance(implementation, SdkMcpTool) else implementation)

    def with_fakes(self, agent: Any) -> Any:
        """A copy of the options with each server that has a faked tool rebuilt (see the module);
        in a tool scenario every SDK server, each tool's handler wrapped (bench.tools.own)."""
        servers = dict(agent.mcp_servers)
        owners = {owner for owner, _ in self._listed.values()} if current() is not None else set()
        for server in owners | {self._listed[name][0] for name in self.fakes}:
            instance = servers[server]["instance"]
            tools = [tool for name, (owner, tool) in self._listed.items() if owner == server]
            handlers = {
                tool.name: self.implementation(
                    wire := wire_tool_name(tool.name, server), self.fakes.get(wire) or _forward(instance, tool.name)
                )
                for tool in tools
            }
            servers[server] = _rebuilt(server, tools, handlers)
        return dataclasses.replace(agent, mcp_servers=servers)

    @functools.cached_property
    def _listed(self) -> dict[str, tuple[str, McpTool]]:
        """The SDK servers' tools by wire name, with their server; listed once, at load."""
        return _list_tools(_sdk_servers(self.agent))

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        messages: list[tuple[float, Any]] = []
        user: ClaudeAgentOptions = self.built(endpoint)
        sweep_stale_scratch()
        with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as scratch:
            home = os.path.join(scratch, "home")
            env = {
                **user.env,
                **QUIET_ENV,
                "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
                "ANTHROPIC_API_KEY": endpoint.api_key,
                "HOME": home,
                "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
            }
            options = dataclasses.replace(user, env=env, stderr=user.stderr or stderr.append)
            if options.cwd is None:  # the same path every run: the CLI bills it in every request
                options = dataclasses.replace(options, cwd=shared_workdir())
            if options.cli_path is None and (guarded := _cli_dying_with_parent(scratch)) is not None:
                options = dataclasses.replace(options, cli_path=guarded)
            stream = cast(AsyncGenerator[Any, None], query(prompt=self.prompt, options=options))
            exception = await _consume(stream, messages, env["CLAUDE_CONFIG_DIR"])
            leftovers = _cli_processes(env["CLAUDE_CONFIG_DIR"])
            _kill(leftovers)
        result = _result(messages, exception, _Spec(partial_messages=bool(user.include_partial_messages)))
        if stderr:
            result.details["cli_stderr"] = "\n".join(stderr)[-500:]
        return result


def _server_of(name: str) -> str:
    return name.removeprefix("mcp__").partition("__")[0]


def _sdk_servers(options: ClaudeAgentOptions) -> dict[str, Any]:
    servers = options.mcp_servers if isinstance(options.mcp_servers, dict) else {}
    # "type": "sdk" is what tells an McpSdkServerConfig from the other configs (their "type" is
    # optional, so the checker cannot narrow the union on it).
    sdk = {name: cast(McpSdkServerConfig, config) for name, config in servers.items() if config.get("type") == "sdk"}
    return {name: config["instance"] for name, config in sdk.items()}


def _external(options: ClaudeAgentOptions, server: str) -> bool:
    """Whether ``server`` is one of the options' servers that are not in-process (any name, when
    the servers come from a config file)."""
    servers = options.mcp_servers
    return not isinstance(servers, dict) or (server in servers and servers[server].get("type") != "sdk")


def _list_tools(servers: dict[str, Any]) -> dict[str, tuple[str, McpTool]]:
    """``tools/list`` on each in-process server, in a thread of its own (the caller may be inside
    an event loop: a plan built from a pytest-asyncio test)."""

    async def listing() -> dict[str, tuple[str, McpTool]]:
        from mcp import Client  # here: the mcp of an older release (0.2.108's 1.28) has no Client

        tools = {}
        for server, instance in servers.items():
            async with Client(instance) as client:
                for tool in (await client.list_tools()).tools:
                    tools[wire_tool_name(tool.name, server)] = (server, tool)
        return tools

    if not servers:
        return {}
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, listing()).result()


Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _forward(instance: Any, name: str) -> Handler:
    """A handler that forwards the call to the user's own server ``instance``'s tool ``name``."""

    async def call(args: dict[str, Any]) -> dict[str, Any]:
        from mcp import Client  # 0.2.108's mcp has no Client: imported where a forwarded call needs it

        async with Client(instance) as client:
            result = await client.call_tool(name, args)
        content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
        return {"content": content, "is_error": result.is_error}

    return call


def _rebuilt(server: str, tools: list[McpTool], handlers: dict[str, Handler]) -> Any:
    """``create_sdk_mcp_server(server, ...)`` offering ``tools`` as listed, each calling its
    handler (a fake, or a forward to the user's own server)."""
    return create_sdk_mcp_server(
        server,
        tools=[
            SdkMcpTool(
                name=tool.name,
                description=tool.description or "",
                input_schema={"properties": {}, **tool.input_schema},
                handler=handlers[tool.name],
                annotations=tool.annotations,
            )
            for tool in tools
        ],
    )
