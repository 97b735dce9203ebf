"""A user's Claude Agent SDK ``ClaudeAgentOptions`` (plus the prompt), driven through ``query()``.

The Python SDK drives the bundled Claude Code CLI, which reads its endpoint from the
environment: ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` (code.claude.com/docs/en/env-vars).
``ClaudeAgentOptions.env`` is merged over the inherited environment (subprocess_cli.py:764-770),
so the binding adds the endpoint there, together with what keeps the CLI off the network
(``QUIET_ENV``) and a scratch ``HOME`` (so neither the host's login nor its settings apply, and
this cell's CLI processes can be found and killed on a time limit). Everything else in the
options (output_format, hooks, max_turns, allowed tools, MCP servers, model, system prompt) is
the user's, unchanged. The process handling is the built-in adapter's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import tempfile
from collections import deque
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, cast

from adapters.claude_agent_sdk import (
    QUIET_ENV,
    STDERR_LINES,
    ClaudeAgentSdkAdapter,
    _cli_processes,
    _drain,
    _kill,
    _on_cancel,
    _result,
    _Spec,
)
from bench.adapter import AdapterResult, Endpoint
from bench.own.binding import Binding
from bench.vocabulary import Mode, Protocol

try:
    from claude_agent_sdk import ClaudeAgentOptions, query
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

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        stderr: deque[str] = deque(maxlen=STDERR_LINES)
        messages: list[tuple[float, Any]] = []
        user: ClaudeAgentOptions = self.built(endpoint)
        with tempfile.TemporaryDirectory(prefix="misfit-own-claude-") as scratch:
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
            if options.cwd is None:
                options = dataclasses.replace(options, cwd=scratch)
            stream = cast(AsyncGenerator[Any, None], query(prompt=self.prompt, options=options))
            consumer = asyncio.create_task(_drain(stream, messages))
            try:
                exception = await asyncio.shield(consumer)
            except asyncio.CancelledError:
                await _on_cancel(consumer, env["CLAUDE_CONFIG_DIR"])
                raise
            leftovers = _cli_processes(env["CLAUDE_CONFIG_DIR"])
            _kill(leftovers)
        result = _result(messages, exception, _Spec(partial_messages=bool(user.include_partial_messages)))
        if stderr:
            result.details["cli_stderr"] = "\n".join(stderr)[-500:]
        return result
