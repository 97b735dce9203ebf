"""The harness tool: real code an agent calls, with failures scripted per scenario.

``lookup_order(order_id)`` reads an order from a small in-memory order service. The model's
side (which arguments it sends) is scripted through the provider like any other behaviour; the
tool's side is scripted here, per scenario, by a :class:`ToolPlan` of what the order service
does on each upstream call. A failure reaches the SDK the way a user's tool would report it: as
an exception, :class:`OrderToolError`, whose message is the structured error an agent should
hand the model (code, retryable, attempt, what to do next). Each SDK then does what it does
with a raised tool exception; the adapters never catch it on the SDK's behalf.

Upstream timeouts belong to the tool's own transport layer: the tool retries them (with a
short backoff) before the SDK sees anything, as an HTTP client with retries would.

A package of its own, importing nothing of bench, because its exception's name
(``bench.tools.OrderToolError``) is data: it is recorded in every run's ``exception`` column, the
golden matrix and the committed baseline.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TOOL_NAME = "lookup_order"
TOOL_DESCRIPTION = "Look up one of the customer's orders by its id (e.g. ORD-1042) and return its status."
SUCCESS_MARKER = "1Z999AA10123456784"
"""The tracking number in every successful result: a request whose tool result contains it
carried a success back to the model."""
ERROR_MARKER = "error_code"
"""The key every structured error carries: a tool result containing it carried the structured
error back to the model (not just "an error occurred")."""

ORDERS: dict[str, dict[str, Any]] = {
    "ORD-1042": {
        "order_id": "ORD-1042",
        "status": "shipped",
        "total": 59.9,
        "carrier": "UPS",
        "tracking": SUCCESS_MARKER,
    },
}

UpstreamStep = Literal["ok", "timeout", "permission_denied", "quota_exceeded"]
UPSTREAM_RETRIES = 2
"""Retries of an upstream timeout inside the tool (its transport layer), before giving up."""
UPSTREAM_BACKOFF_S = 0.02


class LookupOrderArgs(BaseModel):
    """The tool's argument schema, as every SDK derives it from the function signature."""

    model_config = ConfigDict(extra="forbid")
    order_id: str = Field(description="The order id, e.g. ORD-1042")


class ToolPlan(BaseModel):
    """What the order service does on each upstream call of one run (a scenario's ``tool``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    upstream: list[UpstreamStep] = Field(default_factory=lambda: list[UpstreamStep](["ok"]), min_length=1)
    """One step per upstream call, in order; the last step repeats."""

    def step(self, index: int) -> UpstreamStep:
        return self.upstream[min(index, len(self.upstream) - 1)]


class OrderToolError(Exception):
    """A structured tool error: ``str(error)`` is the JSON an agent should show the model."""

    def __init__(self, code: str, retryable: bool, attempt: int, message: str) -> None:
        self.code, self.retryable, self.attempt, self.detail = code, retryable, attempt, message
        super().__init__(self.to_json())

    def to_json(self) -> str:
        return json.dumps(
            {ERROR_MARKER: self.code, "retryable": self.retryable, "attempt": self.attempt, "message": self.detail}
        )


_FATAL = {
    "permission_denied": (
        "PERMISSION_DENIED",
        "This account may not read orders. Do not retry; tell the user to contact support.",
    ),
    "quota_exceeded": (
        "QUOTA_EXCEEDED",
        "The order service's daily quota is used up. Do not retry; tell the user to try tomorrow.",
    ),
}


@dataclass(frozen=True)
class ToolInvocation:
    """One call of the tool function, as the harness saw it."""

    index: int
    arguments: dict[str, Any]
    upstream_calls: int
    error_code: str | None
    retryable: bool | None
    started_at: float


@dataclass
class OrderLookupTool:
    """One run's tool: its plan and the log of every invocation (the runner reads the log)."""

    plan: ToolPlan = field(default_factory=ToolPlan)
    invocations: list[ToolInvocation] = field(default_factory=list)
    upstream_calls: int = 0
    name: str = TOOL_NAME
    description: str = TOOL_DESCRIPTION
    args_model: type[BaseModel] = LookupOrderArgs

    @property
    def parameters(self) -> dict[str, Any]:
        """The argument JSON schema, for SDKs that take one (MCP tools, raw tool specs)."""
        return LookupOrderArgs.model_json_schema()

    async def lookup(self, order_id: str) -> dict[str, Any]:
        """Run the tool once: the order record, or :class:`OrderToolError`."""
        index = len(self.invocations)
        started, calls = time.time(), 0
        try:
            while True:
                step = self.plan.step(self.upstream_calls)
                self.upstream_calls += 1
                calls += 1
                if step != "timeout":
                    break
                if calls > UPSTREAM_RETRIES:
                    raise OrderToolError(
                        "UPSTREAM_TIMEOUT", True, index + 1, "The order service timed out. Try the same call again."
                    )
                await asyncio.sleep(UPSTREAM_BACKOFF_S * calls)
            if step in _FATAL:
                code, message = _FATAL[step]
                raise OrderToolError(code, False, index + 1, message)
            record = ORDERS.get(str(order_id).strip())
            if record is None:
                raise OrderToolError(
                    "ORDER_NOT_FOUND",
                    True,
                    index + 1,
                    f"No order {order_id!r} on this account. Check the id in the user's message "
                    "(ids look like ORD-1234) and call lookup_order again.",
                )
        except OrderToolError as error:
            self._log(index, order_id, calls, error.code, error.retryable, started)
            raise
        self._log(index, order_id, calls, None, None, started)
        return dict(record)

    def _log(
        self, index: int, order_id: Any, calls: int, code: str | None, retryable: bool | None, started: float
    ) -> None:
        self.invocations.append(ToolInvocation(index, {"order_id": order_id}, calls, code, retryable, started))

    def as_function(self) -> Callable[[str], Awaitable[dict[str, Any]]]:
        """An ``async def lookup_order(order_id: str) -> dict`` bound to this run, with the name,
        signature and docstring SDKs read to build the tool's schema."""

        async def lookup_order(order_id: str) -> dict[str, Any]:
            """Look up one of the customer's orders by its id (e.g. ORD-1042) and return its status.

            Args:
                order_id: The order id, e.g. ORD-1042.
            """
            return await self.lookup(order_id)

        return lookup_order

    @contextmanager
    def current(self) -> Iterator[None]:
        """Make this the tool that :func:`current_run_function` calls in this context (and the
        tasks started from it) while the block runs."""
        token = _CURRENT_TOOL.set(self)
        try:
            yield
        finally:
            _CURRENT_TOOL.reset(token)


_CURRENT_TOOL: ContextVar[OrderLookupTool | None] = ContextVar("misfit_bench_tool", default=None)


def current_run_function() -> Callable[[str], Awaitable[dict[str, Any]]]:
    """``lookup_order`` as :meth:`OrderLookupTool.as_function` makes it (the same name, signature
    and docstring, so the same tool schema), calling the tool made current by
    :meth:`OrderLookupTool.current` in the context it is called from: an agent built once
    holds this function and each cell's call reaches that cell's own tool and log."""

    async def lookup_order(order_id: str) -> dict[str, Any]:
        tool = _CURRENT_TOOL.get()
        if tool is None:
            raise RuntimeError("lookup_order called outside a cell: no current tool")
        return await tool.lookup(order_id)

    bound = OrderLookupTool().as_function()
    lookup_order.__doc__, lookup_order.__qualname__ = bound.__doc__, bound.__qualname__
    return lookup_order
