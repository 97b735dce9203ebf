"""What crosses the pipe between the parent and a worker: one JSON object per line.

The parent sends a cell (its configuration, the task's name, the tool plan, the endpoint); the
worker answers with what the SDK returned, raised and reported (an :class:`AdapterResult` in JSON
form) and the harness tool's invocation log, which the parent's tool summary reads. Before its
answer it may send ``{"progress": true, "ago_s": S}`` lines: its subprocess at work S seconds
ago, which the parent counts against the cell's stall limit (:mod:`bench.sdk.progress`). Both
sides import this module, so it needs nothing beyond pydantic and the standard library.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, replace
from typing import Any

from pydantic import BaseModel

from bench.core.names import lineage, qualified_name
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import AdapterResult, Cell, Endpoint, ReportedUsage
from bench.sdk.failures import MissingImport, sdk_import_failure
from bench.tools import ToolInvocation, ToolPlan

MESSAGE_LIMIT = 4000
"""Exception messages are cut here (classification keeps 2000 characters)."""


class RemoteError(Exception):
    """An exception raised in a worker, carried back by name, message and its class's lineage
    (the MRO's ``module.Class`` names, taken in the worker where the class exists): what
    classification reads (:mod:`bench.core.names` honours ``remote_type`` and ``remote_mro``)."""

    def __init__(
        self,
        remote_type: str,
        message: str,
        remote_mro: tuple[str, ...] = (),
        missing_import: MissingImport | None = None,
    ) -> None:
        super().__init__(message)
        self.remote_type = remote_type
        self.remote_mro = remote_mro
        self.missing_import = missing_import
        """An SDK's own import failure, as the worker decided it from the traceback."""


def encode_request(cell: Cell, task: Task, endpoint: Endpoint) -> dict[str, Any]:
    plan = task.tool.plan.model_dump(mode="json") if task.tool is not None else None
    return {"cell": asdict(cell), "task": task.name, "tool_plan": plan, "endpoint": asdict(endpoint),
            "planned_calls": getattr(task, "planned_calls", 0)}  # fmt: skip


def decode_request(message: dict[str, Any], own: Task | None = None) -> tuple[Cell, Task, Endpoint]:
    """The cell, its task and the endpoint. ``own``: the worker's user agent's derived task (not
    a built-in task by name), with the scenario's planned calls (a tool round trip by design)."""
    raw = message["cell"]
    cell = Cell(
        **raw | {"mode": Mode(raw["mode"]), "protocol": Protocol(raw["protocol"]),
                 "mode_support": ModeSupport(raw["mode_support"])}
    )  # fmt: skip
    plan = message["tool_plan"]
    if own is not None and message["task"] == own.name:
        derived: Any = own  # bench.own's DerivedTask, which this module cannot import
        base = replace(derived, planned_calls=message.get("planned_calls", 0)) if hasattr(own, "planned_calls") else own
    else:
        base = get_task(message["task"])
    task = base.with_tool(ToolPlan.model_validate(plan) if plan is not None else None)
    return cell, task, Endpoint(**message["endpoint"])


def encode_result(result: AdapterResult, task: Task, adapter_module: str = "") -> dict[str, Any]:
    exc = result.exception
    return {
        "output": _encode_output(result.output, task),
        "exception": None if exc is None else _encode_exception(exc, adapter_module),
        "usage": None if result.usage is None else asdict(result.usage),
        "fallback": result.fallback,
        "planned_calls": result.planned_calls,
        "details": dict(result.details),
        "tool_invocations": [asdict(i) for i in task.tool.invocations] if task.tool is not None else [],
    }


def decode_result(message: dict[str, Any], task: Task) -> AdapterResult:
    """The worker's report as the in-process adapter would have returned it; the harness tool's
    invocations are replayed into the parent's ``task.tool``, where the tool summary reads them."""
    exc = message["exception"]
    usage = message["usage"]
    if task.tool is not None:
        task.tool.invocations.extend(ToolInvocation(**i) for i in message["tool_invocations"])
    return AdapterResult(
        output=_decode_output(message["output"], task),
        exception=None
        if exc is None
        else RemoteError(exc["type"], exc["message"], tuple(exc.get("mro") or ()), decode_missing_import(exc)),
        usage=None if usage is None else ReportedUsage(**usage),
        fallback=message["fallback"],
        planned_calls=message["planned_calls"],
        details=message["details"],
    )


def _encode_exception(error: BaseException, adapter_module: str) -> dict[str, Any]:
    """An exception by name, message and lineage (taken here, where the class exists), and
    whether it is an SDK's own import failure (:func:`bench.sdk.failures.sdk_import_failure`:
    decided here, where its traceback is)."""
    missing = sdk_import_failure(error, adapter_module)
    encoded = {"type": qualified_name(error), "message": str(error)[:MESSAGE_LIMIT], "mro": list(lineage(error))}
    return encoded | ({"missing_import": asdict(missing)} if missing is not None else {})


def decode_missing_import(encoded: dict[str, Any]) -> MissingImport | None:
    missing = encoded.get("missing_import")
    return MissingImport(**missing) if isinstance(missing, dict) else None


def encode_harness_error(error: BaseException, adapter_module: str = "") -> dict[str, Any]:
    text = "".join(traceback.format_exception(error, limit=8))[-MESSAGE_LIMIT:]
    return {"harness": _encode_exception(error, adapter_module) | {"traceback": text}}


def _encode_output(value: Any, task: Task) -> dict[str, Any]:
    """The output model's instance travels as its fields and is rebuilt on the other side;
    any other model as the dict it dumps to (judged the same way, ``tasks._coerce``); plain JSON
    as is; anything else as its repr (never valid, like any non-object)."""
    if value is None:
        return {"kind": "none"}
    model = task.output_model  # a user's task from a JSON schema has none (bench.own.derive)
    if isinstance(model, type) and isinstance(value, model):
        return {"kind": "model", "data": value.model_dump(mode="json")}
    if isinstance(value, BaseModel):
        return {"kind": "json", "data": value.model_dump(mode="json")}
    if isinstance(value, str | int | float | bool | dict | list):
        return {"kind": "json", "data": value}
    return {"kind": "repr", "data": repr(value)}


def _decode_output(encoded: dict[str, Any], task: Task) -> Any:
    kind, data = encoded["kind"], encoded.get("data")
    if kind == "none":
        return None
    if kind == "model":
        try:
            return task.output_model.model_validate(data)
        except ValueError:
            return data
    return data
