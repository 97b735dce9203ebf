"""A user's own agno ``Agent``, driven as it is on a copy whose model points at the local provider.

``agent.deep_copy(update={"model": ...})`` (agent/agent.py:1037-1038) is agno's own copy: the
user's output schema, structured-outputs switch (``use_json_mode``, ``structured_outputs``),
instructions, retries, hooks and tools are kept, and the user's object is never touched. The
model is a ``dataclasses.replace`` of the user's own (their class, id, ``strict_output``,
``max_tokens``, ``retries``) with ``base_url`` and ``api_key`` set (``client_params["base_url"]``
for ``Claude``, whose client takes it there, models/anthropic/claude.py:201-222), its cached
clients cleared and an ``httpx.AsyncClient`` of this binding's, closed after the cell. The copy
runs with ``telemetry=False`` and ``AGNO_TELEMETRY=false`` (which wins over the agent's own
setting, agent/_init.py:62-66): no request leaves loopback.

This module runs in the user's interpreter, where their agno is installed (``bench run --agent``
from their project), not in the built-in cells' environment (adapters/agno/environment.txt).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, ClassVar

import httpx
from agno.agent import Agent
from agno.models.anthropic import Claude
from agno.models.openai import OpenAIChat, OpenAIResponses
from agno.run.agent import RunErrorEvent, RunOutput
from agno.tools.function import Function

from bench.core.vocabulary import Mode, Protocol
from bench.own.binding import Binding
from bench.sdk.adapter import AdapterResult, Endpoint, ReportedUsage

os.environ["AGNO_TELEMETRY"] = "false"
"""Set once for the bench process: per cell it would be restored under a concurrent cell's feet."""


class AgnoBinding(Binding):
    sdk: ClassVar[str] = "agno"
    distribution: ClassVar[str] = "agno"
    agent_type: ClassVar[type] = Agent
    model_protocols: ClassVar[tuple[tuple[type, Protocol], ...]] = (
        (OpenAIResponses, Protocol.RESPONSES),
        (OpenAIChat, Protocol.CHAT),
        (Claude, Protocol.ANTHROPIC),
    )

    def output(self) -> Any:
        return self.agent.output_schema

    def mode(self) -> Mode:
        """Native when agno sends the schema as the model's structured-output parameter, prompted
        when it puts the JSON prompt in the system message instead: the condition of
        agent/_messages.py:1186-1194."""
        model, agent = self.agent.model, self.agent
        structured = bool(
            model is not None
            and (model.supports_native_structured_outputs or model.supports_json_schema_outputs)
            and (not agent.use_json_mode or agent.structured_outputs is True)
        )
        return Mode.NATIVE if structured else Mode.PROMPTED

    def note(self) -> str:
        return f"the user's agno Agent on a copy of its {type(self.agent.model).__name__} pointed at the provider"

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """The user's plain-callable and ``Function`` tools, with the parameters agno derives
        (tools/function.py:1446, 1624); a toolkit's functions are the toolkit's own business."""
        schemas: dict[str, dict[str, Any]] = {}
        for tool in self.agent.tools or []:
            function = _function(tool)
            if function is not None:
                schemas[function.name] = function.parameters
        return schemas

    def with_fakes(self, agent: Any) -> Any:
        """A copy whose callable tools are each the user's fake or their own code, wrapped for the
        cell's log (``implementation``), under the same name."""
        tools = [self._swapped(tool) for tool in agent.tools or []]
        return agent.deep_copy(update={"tools": tools})

    def _swapped(self, tool: Any) -> Any:
        function = _function(tool)
        if function is None or function.entrypoint is None:
            return tool
        original = tool if callable(tool) and not isinstance(tool, Function) else function.entrypoint
        return Function.from_callable(self.implementation(function.name, original), name=function.name)

    async def run(self, endpoint: Endpoint, output: Any) -> AdapterResult:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http:
            user = self.built(endpoint)
            agent = user.deep_copy(update={"model": _pointed(user.model, endpoint, http), "telemetry": False})
            kwargs = dict(self.run_kwargs)
            result = AdapterResult(details={"model": type(agent.model).__name__})
            try:
                if kwargs.pop("stream", False):
                    final: Any = None
                    async for event in agent.arun(self.prompt, stream=True, yield_run_output=True, **kwargs):
                        if isinstance(event, RunOutput | RunErrorEvent):
                            final = event
                else:
                    final = await agent.arun(self.prompt, **kwargs)
            except Exception as error:  # agno's own, as it reached the caller
                result.exception = error
                return result
        result.output = getattr(final, "content", None)
        status = getattr(final, "status", None)
        result.details["run_status"] = "no final event" if final is None else str(getattr(status, "value", status))
        metrics = getattr(final, "metrics", None)
        if metrics is not None:
            result.usage = ReportedUsage(metrics.input_tokens, metrics.output_tokens)
        return result


def _pointed(model: Any, endpoint: Endpoint, http: httpx.AsyncClient) -> Any:
    """The user's model, copied onto the provider; a user's agent without a model gets agno's
    default (``OpenAIChat``) as agno itself would pick it."""
    model = model if model is not None else OpenAIChat()
    common = {"api_key": endpoint.api_key, "http_client": http, "client": None, "async_client": None}
    if isinstance(model, Claude):
        params = {**(model.client_params or {}), "base_url": endpoint.anthropic_base_url}
        return dataclasses.replace(model, **common, auth_token=None, client_params=params)
    return dataclasses.replace(model, **common, base_url=endpoint.openai_base_url)


def _function(tool: Any) -> Function | None:
    if isinstance(tool, Function):
        return tool
    if callable(tool) and not hasattr(tool, "functions"):
        return Function.from_callable(tool)
    return None
