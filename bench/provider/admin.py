"""``POST /runs``: the body ``bench serve`` users open a run with, parsed at the HTTP edge.

A body is a JSON object naming either a scenario from the library (``{"scenario":
"malformed_then_valid"}``) or a task with a script (``{"task": "person", "script":
["malformed", "valid"]}``); the answer carries the run's URLs. Anything else is a 400 in the
OpenAI error shape with one line naming the field, never a 500 or a validation dump; a script
longer than :data:`bench.scenarios.behaviours.MAX_SCRIPT_STEPS` is a 413 in that shape, counted
before any step is parsed.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.scenarios.behaviours import MAX_SCRIPT_STEPS, Script, field_path, script_size, script_too_long
from bench.scenarios.tasks import Task, get_task

if TYPE_CHECKING:
    from bench.scenarios.files import Scenario

MAX_ADMIN_BODY_BYTES = 1 << 20
"""A run specification is a few hundred bytes; anything past 1 MiB is refused unparsed, 413 in
the OpenAI error shape as the app refuses a body past its own limit (bench.provider.server)."""


class RunSpec(BaseModel):
    """What ``POST /runs`` accepts."""

    model_config = ConfigDict(extra="forbid")

    scenario: str | None = None
    """A scenario name (the library, or ``bench serve --scenarios``): its task and script."""
    task: str | None = None
    """Without ``scenario``: the task (default ``person``)."""
    script: list[Any] | None = None
    then: Any = "repeat"
    stochastic: dict[str, Any] | None = None
    run_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.\-]{1,64}$")
    call_cap: int | None = Field(default=None, ge=1, le=1000, strict=True)
    """Model calls after which the provider holds the next one (a runaway)."""


class SpecError(ValueError):
    """One line for the 400 answer."""


class ScriptTooLong(SpecError):
    """One line for the 413 answer: the script has more than MAX_SCRIPT_STEPS steps."""


def parse(body: bytes) -> RunSpec:
    try:
        raw = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        raise SpecError('the body is not JSON; send a JSON object such as {"scenario": "valid"}') from None
    if not isinstance(raw, dict):
        raise SpecError(f"the body must be a JSON object, got {type(raw).__name__}")
    try:
        return RunSpec.model_validate(raw)
    except ValidationError as error:
        raise SpecError(one_line(error)) from None


def one_line(error: ValidationError) -> str:
    """The first problem as ``field X: message`` (pydantic's "Value error, " prefix dropped)."""
    problems = error.errors(include_url=False)
    first = problems[0]
    field = field_path(first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{'field ' + field + ': ' if field else ''}{message}{more}"


def opened(spec: RunSpec, scenarios: Callable[[], Mapping[str, Scenario]]) -> tuple[Task, Script]:
    """The task and script of the run ``spec`` asks for: a named scenario's, typed as the runner
    opens it, or a posted task and script, parsed here at the HTTP edge."""
    if spec.scenario is None:
        if spec.script is not None and (size := script_size(spec.script)) > MAX_SCRIPT_STEPS:
            raise ScriptTooLong(f"field script: {script_too_long(size)}")
        task = get_task(spec.task or "person")
        return task, Script.parse(spec.script, then=spec.then, stochastic=spec.stochastic)
    if spec.task is not None or spec.script is not None or spec.stochastic is not None:
        raise SpecError("give either 'scenario' or 'task' with 'script'/'stochastic', not both")
    known = scenarios()
    chosen = known.get(spec.scenario)
    if chosen is None:
        close = difflib.get_close_matches(spec.scenario, list(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "; see 'bench scenarios list'"
        raise SpecError(f"field scenario: unknown scenario {spec.scenario!r}{hint}")
    return get_task(chosen.task), chosen.build_script()
