"""A user's own tools under fault: their real code, wrapped so a scripted call raises.

A derived tool scenario of a user's agent (bench.own.tools) scripts the model's side (a call
with arguments that fail the tool's schema, a call of a tool the agent does not have, a call
the tool answers by raising, parallel calls) through the provider like any other behaviour.
The tool's side is this module: each binding hands its SDK the user's tool wrapped by
:func:`wrap`, built where the SDK lets a test replace a tool, never on the user's objects. The
wrapper logs every call that reached the tool and, on a call the cell's :class:`OwnToolPlan`
names, raises :class:`ScriptedToolError` instead of running the tool; on any other call it runs
the user's real code (or the user's fake), whose own exception is logged and re-raised as is.
Each SDK then does what it does with a raising tool; nothing here catches on its behalf.

The cell's log is a context variable set around the cell's run (asyncio tasks and the SDKs'
worker threads copy the context), so concurrent cells never see each other's log; outside a
cell the wrapper is the user's tool and nothing else.

No bench import, like the rest of bench.tools: the exception's name
(``bench.tools.own.ScriptedToolError``) is data in the ``exception`` column.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from bench.tools import OrderLookupTool, ToolInvocation

SCRIPTED_RAISE = "SCRIPTED_RAISE"
"""The ``error_code`` of a logged call the plan made raise."""


class ScriptedToolError(RuntimeError):
    """What the wrapped tool raises on a scripted call: an ordinary exception, as a user's tool
    raises one when its upstream fails, so the SDK's own handling of a raising tool applies."""


@dataclass(frozen=True)
class OwnToolPlan:
    """Which tool a derived scenario calls and which of its calls raise."""

    tool: str
    """The tool the model calls (for the unknown-tool scenario, a name the agent has no tool for)."""
    schema: dict[str, Any] | None = None
    """The tool's parameter schema as the SDK sends it: a call whose arguments fail it never
    reaches the tool (the SDK refuses them), so it is matched to no logged call."""
    raise_on: frozenset[int] = frozenset()
    """Indexes of the calls that reached the tool (0 is the first) that raise."""


@dataclass
class OwnToolLog(OrderLookupTool):
    """One cell's log of the calls that reached a user's tool; the runner summarises it
    (bench.run.toolcalls). It is the cell's ``task.tool``, the runner's one place for a cell's
    tool log, hence a kind of the harness tool's log: ``invocations`` holds each call that
    reached the user's tool, in the order they ended (``index``: the order they started)."""

    own: OwnToolPlan = field(default_factory=lambda: OwnToolPlan(""))
    started: int = 0

    def arguments_valid(self, arguments: Any) -> bool:
        """Whether a call's arguments pass the tool's schema (and the SDK would let it run)."""
        if self.own.schema is None:
            return False
        return isinstance(arguments, dict) and jsonschema.Draft202012Validator(self.own.schema).is_valid(arguments)

    def _start(self, name: str, arguments: dict[str, Any]) -> int | None:
        """The call's index among this tool's calls, or None for a call of another tool."""
        if name != self.own.tool:
            return None
        self.started += 1  # reserved at the start: parallel calls in threads each get their own
        return self.started - 1

    def _record(self, index: int, arguments: dict[str, Any], error: BaseException | None, started: float) -> None:
        code = (
            None if error is None else SCRIPTED_RAISE if isinstance(error, ScriptedToolError) else type(error).__name__
        )
        self.invocations.append(ToolInvocation(index, arguments, 1, code, None, started))


_ACTIVE: contextvars.ContextVar[OwnToolLog | None] = contextvars.ContextVar("own_tool_log", default=None)


@contextmanager
def active(log: OwnToolLog | None) -> Iterator[None]:
    """Within the block (one cell's run), the wrapped tools log to ``log`` and follow its plan."""
    token = _ACTIVE.set(log)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def current() -> OwnToolLog | None:
    """The running cell's log: a binding wraps the user's tools only when there is one."""
    return _ACTIVE.get()


def wrap(name: str, tool: Callable[..., Any], takes_ctx: bool = False) -> Any:
    """``tool`` (sync or async, its signature kept for the SDK to read), logged to the running
    cell's log under ``name``; a scripted call raises :class:`ScriptedToolError` instead of
    running it. ``takes_ctx``: the first parameter is the SDK's context, not an argument."""

    def named(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            bound = dict(inspect.signature(tool).bind_partial(*args, **kwargs).arguments)
        except (TypeError, ValueError):
            return dict(kwargs)
        return dict(list(bound.items())[1:]) if takes_ctx else bound

    def before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[OwnToolLog | None, int, dict[str, Any]]:
        log = current()
        index = log._start(name, called := named(*args, **kwargs)) if log is not None else None
        if log is not None and index is not None and index in log.own.raise_on:
            error = ScriptedToolError(f"{name} raised on a scripted call (call {index + 1} of the cell)")
            log._record(index, called, error, time.time())
            raise error
        return (log if index is not None else None), index or 0, called

    if inspect.iscoroutinefunction(tool):

        @functools.wraps(tool)
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            log, index, called = before(args, kwargs)
            started = time.time()
            try:
                result = await tool(*args, **kwargs)
            except Exception as error:
                if log is not None:
                    log._record(index, called, error, started)
                raise
            if log is not None:
                log._record(index, called, None, started)
            return result

        return wrapped_async

    @functools.wraps(tool)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        log, index, called = before(args, kwargs)
        started = time.time()
        try:
            result = tool(*args, **kwargs)
        except Exception as error:
            if log is not None:
                log._record(index, called, error, started)
            raise
        if log is not None:
            log._record(index, called, None, started)
        return result

    return wrapped
