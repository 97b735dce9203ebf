"""What a smolagents user writes to get a typed final answer out of a ``ToolCallingAgent``.

The agent's built-in ``final_answer`` tool takes one untyped ``answer`` (default_tools.py:83-90)
and hands back whatever the model put there. A user who wants an object of their pydantic type
replaces it: a tool named ``final_answer`` in ``tools`` takes the place of the default one
(agents.py:402, ``setdefault``), its ``inputs`` are the type's fields, and its ``forward`` builds the
type, so a ``ValidationError`` is a tool error the agent feeds back to the model
(agents.py:1483-1502, 597-599). The hardened cells add a ``final_answer_checks`` function that
raises, as the docs' checks do (agents.py:613-618): a failed check is fed back the same way.

``lookup_tool`` is the harness tool as a smolagents ``@tool``: the SDK calls tools synchronously
in its own thread (and several at once in a ``ThreadPoolExecutor``, agents.py:1426), so the
harness's async tool is handed to the cell's event loop and awaited from there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel
from smolagents import Tool, tool

from bench.scenarios.tasks import Task
from bench.tools import OrderLookupTool

FINAL_ANSWER = "final_answer"
"""The name the agent ends its run on (agents.py:1406): the replacement keeps it."""


def final_answer_tool(output_model: type[BaseModel]) -> Tool:
    """A ``final_answer`` tool with the type's fields as its arguments, validating them into it."""

    class TypedFinalAnswer(Tool):
        name = FINAL_ANSWER
        description = f"Provides the final answer to the task: one {output_model.__name__}, one argument per field."
        inputs = _inputs(output_model)
        output_type = "object"
        skip_forward_signature_validation = True

        def forward(self, **fields: Any) -> BaseModel:
            return output_model.model_validate(fields)

    return TypedFinalAnswer()


def _inputs(output_model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """The type's JSON schema fields as smolagents ``inputs`` (a ``type`` and a ``description``
    each, tools.py:170-190), references resolved one level, so the wire schema names every field."""
    schema = output_model.model_json_schema()
    definitions = schema.get("$defs", {})
    return {name: _input(field, definitions) for name, field in schema.get("properties", {}).items()}


def _input(field: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    field = _resolved(field, definitions)
    entry: dict[str, Any] = {"type": field.get("type", "any"), "description": field.get("description", "")}
    if "enum" in field:
        entry["enum"] = field["enum"]
    if entry["type"] == "array" and "items" in field:
        entry["items"] = _resolved(field["items"], definitions)
    return entry


def _resolved(field: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    reference = field.get("$ref")
    return {**definitions[reference.rsplit("/", 1)[-1]], **field} if reference else field


def raising_check(task: Task) -> Any:
    """A ``final_answer_checks`` function (called as ``check(answer, memory, agent=agent)``,
    agents.py:616) that raises with the task's reason when the answer is wrong."""

    def matches_the_request(final_answer: Any, memory: Any, agent: Any = None) -> bool:
        if (reason := task.check(final_answer)) is not None:
            raise ValueError(reason)
        return True

    return matches_the_request


def lookup_tool(harness: OrderLookupTool, loop: asyncio.AbstractEventLoop) -> Tool:
    """``lookup_order`` as a sync smolagents tool running the harness tool on the cell's loop."""
    lookup = harness.as_function()

    def lookup_order(order_id: str) -> dict:  # the bare hint smolagents maps to 'object'
        """Look up one of the customer's orders by its id (e.g. ORD-1042) and return its status.

        Args:
            order_id: The order id, e.g. ORD-1042.
        """

        async def on_the_loop() -> dict[str, Any]:
            return await lookup(order_id)

        return asyncio.run_coroutine_threadsafe(on_the_loop(), loop).result()

    return tool(lookup_order)
