"""The built-in adapters on the user's own output type (``bench pick --type module:Type``).

Each built-in adapter builds its agents around ``task.output_model`` (and ``task.schema``,
``task.check``), so the only thing that changes for a user's type is the task: :func:`typed_task`
derives one from the type as for a user's own agent (:func:`bench.own.derive.derive_task`, the
type's validators included), and :func:`on_type` gives each built-in adapter a subclass of its
own class whose :meth:`task_for` answers that task. Cells, support tables, the SDK calls and the
classification are the adapter's own, untouched.

What is right for a bare type: the derived reference (the user's example file, else the first
generated answer the type accepts), judged field by field as a built-in task judges its reference;
so ``wrong`` (a valid answer that differs) is derived too, and the hardened variants' validator
(``task.check``) rejects it. A user's ``check`` replaces the field-by-field rule. A fault family no
answer can be derived for (no bound to break, no extra key refused) is never dropped: its cells
are ``unsupported`` with the reason, and ``bench run`` / ``bench pick`` say so
(:meth:`OnYourType.not_measured`).

The harness-tool scenarios (``tool_*``) run as for the built-in tasks (the harness tool, its
upstream faults), with the user's type as the answer.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from bench.own.config import OwnAgentError, resolve
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint
from bench.sdk.failures import raised_by_sdk

if TYPE_CHECKING:
    from bench.own.derive import DerivedTask
    from bench.scenarios.files import Scenario

GIVE_EXAMPLE = "give a right answer with --example FILE (a JSON file your type accepts)"
"""What :data:`bench.own.derive.GIVE_EXAMPLE` is for a type alone: its option."""
PROMPT = "Answer the request with the structured output."
"""What each cell sends: the fake model does not read it, and a user's type has no request of its own."""


@dataclass(frozen=True)
class TypeRequest:
    """``--type`` and what says what is right for it (``--example``, ``--check``)."""

    reference: str
    """``module:Type``: a pydantic ``BaseModel`` subclass importable from the project."""
    example: str | None = None
    """A JSON file holding a right answer (relative to the project)."""
    check: str | None = None
    """``module:attr`` of ``check(output) -> str | None``: why an answer is wrong, or None."""

    def to_json(self) -> dict[str, str | None]:
        return dataclasses.asdict(self)


def typed_task(request: TypeRequest, project: Path) -> DerivedTask:
    """The task derived from the user's type; :class:`OwnAgentError` (one line) when the type
    cannot be imported, is not a pydantic model, or has no answer it accepts."""
    from pydantic import BaseModel

    from bench.own.derive import GIVE_EXAMPLE as ENTRY_FIELD
    from bench.own.derive import OutputType, derive_task

    where = f"--type {request.reference!r}"
    declared = resolve(request.reference, project, "--type")
    if not (isinstance(declared, type) and issubclass(declared, BaseModel)):
        kind = declared.__name__ if isinstance(declared, type) else type(declared).__name__
        raise OwnAgentError(f"{where}: {kind} is not a pydantic BaseModel subclass")
    check = resolve(request.check, project, "--check") if request.check else None
    if check is not None and not callable(check):
        raise OwnAgentError(f"--check {request.check!r}: not callable")
    example = _example(request.example, project)
    name = declared.__name__
    try:
        task = derive_task(name, OutputType.of(declared), PROMPT, example, check)
        if example is None and check is None:  # right is the reference, as for a built-in task
            task = derive_task(name, task.output_type, PROMPT, dict(task.reference), None)
    except OwnAgentError as error:
        said = str(error).replace(f"agent {name!r}", where, 1).replace(ENTRY_FIELD, GIVE_EXAMPLE)
        raise OwnAgentError(said) from None
    # openai-agents' hardened fallback hands back ``task.wrong`` (it must fit the type); with no
    # wrong answer derived, the reference. ``has_wrong`` stays False: no wrong scenario runs.
    wrong = task.wrong if task.has_wrong else task.reference
    return dataclasses.replace(task, name=f"type:{request.reference}", wrong=wrong)


def _example(path: str | None, project: Path) -> dict[str, Any] | None:
    if path is None:
        return None
    file = project / path
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise OwnAgentError(f"--example {file}: cannot read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise OwnAgentError(f"--example {file}: not JSON: {error}") from None
    if not isinstance(value, dict):
        raise OwnAgentError(f"--example {file}: holds a {type(value).__name__}, not an object")
    return value


class OnYourType(Adapter):
    """Mixed in before a built-in adapter's class (:func:`on_type`): the same cells and SDK calls,
    answering :attr:`typed` instead of each scenario's built-in task."""

    typed: DerivedTask
    type_reference: str
    users_configuration: ClassVar[bool] = True
    """The type is the user's: an SDK refusing it before sending is ``raised``, as they would meet it."""

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """The adapter's own cell. An exception of the SDK's (or pydantic's) raised while the agent
        is built around the user's type (openai-agents' ``function_tool`` refusing a ``dict``
        field under its strict schema) is what the user's own code gets at that line: it reaches
        the caller, so it is the cell's ``raised``. Ours (builtins, bench, adapters) stay harness errors:
        the one rule of whose an exception is (:func:`bench.sdk.failures.raised_by_sdk`), as for an
        SDK's import failing at call time (:func:`bench.sdk.failures.sdk_import_failure`)."""
        try:
            return await super().run_cell(cell, task, endpoint)  # type: ignore[safe-super]
        except Exception as error:
            if not raised_by_sdk(error):
                raise
            return AdapterResult(exception=error)

    def typed_for(self, scenario: Scenario) -> DerivedTask:
        """The task ``scenario`` runs on: the user's type (one task drawn from each recorded
        answer, :class:`bench.cassettes.tasks.OnDrawnTasks`, picks one per scenario)."""
        return self.typed

    def answers_for(self, scenario: Scenario) -> str:
        return f"type {self.type_reference}"

    def task_for(self, scenario: Scenario) -> Task:
        """The user's type, with the faults of the scenario's built-in task's depth (a nested
        task's scenario sends the type's nested faults: :meth:`DerivedTask.answering`); a
        harness-tool scenario keeps its tool (the harness's ``lookup_order``)."""
        builtin = get_task(scenario.task)
        typed = self.typed_for(scenario).answering(builtin.schema)
        tool_name = builtin.tool_name
        return typed if tool_name is None else dataclasses.replace(typed, tool_name=tool_name)

    def scenario_gap(self, cell: Cell, scenario: Scenario) -> str | None:
        """A behaviour the derived task has no answer for is "not applicable", never guessed."""
        from bench.own.adapter import _behaviours
        from bench.scenarios.behaviours import Valid, Wrong

        if any(isinstance(b, Valid | Wrong) and b.value is not None for b in _behaviours(scenario)):
            return "not applicable: the scenario scripts a built-in task's own objects"
        if (gap := self.not_measured(scenario)) is not None:
            return f"not applicable: {gap[0]} {gap[1]}"
        return super().scenario_gap(cell, scenario)

    def not_measured(self, scenario: Scenario) -> tuple[str, str] | None:
        """The fault family of ``scenario`` no answer could be derived for, with the reason."""
        from bench.own.adapter import _behaviours, _family

        for behaviour in _behaviours(scenario):
            family = _family(behaviour)
            if family is not None and (reason := self.typed_for(scenario).not_measured.get(family)) is not None:
                return family, reason
        return None

    def describe(self) -> dict[str, Any]:
        """For the manifest: the type and the answers derived from it."""
        return {
            "reference": self.type_reference,
            "valid": dict(self.typed.reference),
            "wrong": dict(self.typed.wrong) if self.typed.has_wrong else None,
            "violations": {variant: dict(value) for variant, value in self.typed.violations.items()},
            "not_measured": dict(self.typed.not_measured),
            "faults": [fault.to_json() for fault in self.typed.faults],
            "constraints": list(self.typed.constraints),
        }


def unreached(manifest: dict[str, Any]) -> list[str]:
    """The type's constraints that no fault the run's scenarios send breaks (manifest ``output_type``:
    ``constraints`` and ``faults``, each fault's ``breaks``). A scenario sends its family's fault of
    its built-in task's depth (:meth:`DerivedTask.answering`), the top-level one where the type has
    no nested one."""
    from bench.own.adapter import _behaviours, _family
    from bench.own.derive.faults import scope_of
    from bench.scenarios.files import default_scenarios

    described = manifest.get("output_type") or {}
    library = {scenario.name: scenario for scenario in default_scenarios()}
    wanted = set()
    for scenario in filter(None, map(library.get, manifest.get("scenarios") or [])):
        scope = scope_of(get_task(scenario.task).schema)
        wanted |= {(family, scope) for family in map(_family, _behaviours(scenario)) if family is not None}
    faults = described.get("faults") or []
    derived = {(fault["family"], fault["scope"]) for fault in faults}
    sent = [
        fault for fault in faults
        if (key := (fault["family"], fault["scope"])) in wanted
        or (fault["scope"] == "top" and (key[0], "nested") in wanted and (key[0], "nested") not in derived)
    ]  # fmt: skip
    reached = {name for fault in sent for name in fault["breaks"]}
    return [name for name in described.get("constraints") or [] if name not in reached]


def unreached_line(manifest: dict[str, Any], width: int = 120) -> str | None:
    """The line ``bench pick`` prints under a ``--type`` run's table naming the type's constraints
    no fault of the run broke (:func:`unreached`), as many as fit ``width`` (the manifest's
    ``output_type`` lists them all, and each fault's ``breaks``); None when every one was broken."""
    names, described = unreached(manifest), manifest.get("output_type") or {}
    if not names:
        return None
    total = len(described.get("constraints") or [])
    head = f"not reached by any fault: {len(names)} of {total} constraints of {described['reference']}"
    for shown in range(len(names), 0, -1):
        line = f"{head}: {', '.join(names[:shown])}" + (
            f", and {len(names) - shown} more" if shown < len(names) else ""
        )
        if len(line) <= width:
            return line
    return f"{head} (manifest.json: output_type)"


def on_type(adapters: dict[str, Adapter], request: TypeRequest, project: Path) -> dict[str, Adapter]:
    """Each built-in adapter again, built as the registry builds it, answering the user's type."""
    task = typed_task(request, project)
    typed: dict[str, Adapter] = {}
    for name, adapter in adapters.items():
        instance = mixed_into(OnYourType, adapter)
        instance.typed, instance.type_reference = task, request.reference
        typed[name] = instance
    return typed


def mixed_into[MixinT: OnYourType](mixin: type[MixinT], adapter: Adapter) -> MixinT:
    """A new instance of ``adapter``'s class with ``mixin`` before it (its cells, its SDK calls,
    another task), named as the adapter's class is, so what a run records of the SDK is unchanged."""
    base = type(adapter)
    namespace = {"__module__": base.__module__, "__qualname__": base.__qualname__, "__doc__": base.__doc__}
    return cast(type[MixinT], type(base.__name__, (mixin, base), namespace))()
