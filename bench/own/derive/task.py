"""The task derived for one user's type (:func:`derive_task`, :class:`DerivedTask`): the reference, the wrong
answer, the violations, and the families no answer could be built for, with the reason."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.own.config import OwnAgentError
from bench.own.derive.generate import generate
from bench.own.derive.output import GIVE_EXAMPLE, Check, OutputType
from bench.own.derive.paths import _top
from bench.own.derive.violations import _VIOLATORS, violation_gap, violations
from bench.own.derive.wrong import _meaning_of_correct
from bench.scenarios.tasks import Task


@dataclass(frozen=True)
class DerivedTask(Task):
    """A user's task: rendered by the provider like a built-in one, judged by the user's type."""

    output_type: OutputType = field(default_factory=lambda: OutputType({}))
    has_wrong: bool = False
    """False: no wrong answer could be built; ``not_measured["wrong"]`` says why."""
    not_measured: Mapping[str, str] = field(default_factory=dict)
    """The fault families (``wrong``, ``schema_violation:<variant>``) no answer could be built
    for, each with the reason; their cells are ``unsupported`` with it, never guessed."""
    planned_calls: int = 0
    """Model calls the scenario makes by design (an opted-in tool's round trip), not retries."""

    @property
    def schema(self) -> dict[str, Any]:
        return self.output_type.schema

    @property
    def property_names(self) -> frozenset[str]:
        """The declared type's top-level properties: its schema is stored, not built per call."""
        return frozenset(self.schema.get("properties", {}))

    def judge(self, value: Any) -> tuple[bool, bool]:
        instance = self.output_type.instance(value)
        if instance is None:
            return False, False
        return True, self.semantic_rule(instance) is None

    def check(self, value: Any) -> str | None:
        instance = self.output_type.instance(value)
        if instance is None:
            return "not a valid answer for the declared output type"
        return self.semantic_rule(instance)


def derive_task(
    name: str, output: OutputType, prompt: str, example: dict[str, Any] | None = None, check: Check | None = None
) -> DerivedTask:
    """The task for one user agent; raises :class:`OwnAgentError` when no valid answer exists."""
    if _top(output.schema).get("type") != "object" or "properties" not in _top(output.schema):
        raise OwnAgentError(f"agent {name!r}: the output type is not a structured object ({_describe(output)})")
    if example is not None and (problems := output.problems(example)):
        where = ".".join(map(str, problems[0])) or "the top level"
        raise OwnAgentError(
            f"agent {name!r}, field example: the example does not validate against the output type (at {where})"
        )
    checked = None if check is None else _guarded(name, check)
    candidates = generate(output, example=example)
    reference = _reference(name, output, candidates, example, checked)
    rule, wrong, why = _meaning_of_correct(output, reference, candidates, example, checked)
    found = violations(output, reference)
    gaps = {} if wrong is not None else {"wrong": why}
    gaps |= {f"schema_violation:{v}": violation_gap(output, reference, v) for v in _VIOLATORS if v not in found}
    return DerivedTask(
        name=f"agent:{name}",
        output_model=output.python_type,
        prompt=prompt,
        reference=reference,
        wrong=wrong or {},
        violations=found,
        semantic_rule=rule if check is None else check,
        description=f"derived from {_describe(output)}",
        prose=_prose(reference),
        output_type=output,
        has_wrong=wrong is not None,
        not_measured=gaps,
    )


def _describe(output: OutputType) -> str:
    if output.python_type is None:
        return "a JSON Schema"
    return getattr(output.python_type, "__qualname__", repr(output.python_type))


def _guarded(name: str, check: Check) -> Check:
    """The user's check as derivation calls it: an exception it raises is one line naming it
    (exit 2), not a traceback. During a run the check is called as given."""

    def guarded(instance: Any) -> str | None:
        try:
            return check(instance)
        except Exception as error:
            raise OwnAgentError(
                f"agent {name!r}, field check: the check raised {type(error).__name__}: {error}"
            ) from None

    return guarded


def _reference(
    name: str, output: OutputType, candidates: list[Any], example: dict[str, Any] | None, check: Check | None
) -> dict[str, Any]:
    if example is not None:
        if check is not None and (reason := _run_check(check, output, example)) is not None:
            raise OwnAgentError(f"agent {name!r}, field example: check rejects the example: {reason}")
        return example
    for candidate in candidates:
        if check is None or _run_check(check, output, candidate) is None:
            return candidate
    if not candidates:
        raise OwnAgentError(
            f"agent {name!r}: cannot generate an answer the output type accepts (its validators refuse every "
            f"one built); {GIVE_EXAMPLE}"
        )
    raise OwnAgentError(f"agent {name!r}: check rejects every generated answer; {GIVE_EXAMPLE}")


def _run_check(check: Check, output: OutputType, value: Any) -> str | None:
    instance = output.instance(value)
    return "not a valid answer" if instance is None else check(instance)


def _prose(reference: dict[str, Any]) -> str:
    """Plain text carrying the answer's facts, as a chatty model writes them."""
    facts = [
        f"{key.replace('_', ' ')} {json.dumps(value)}"
        for key, value in reference.items()
        if not isinstance(value, dict | list)
    ]
    return "Here is what I found: " + ("; ".join(facts[:6]) or "the details are in the request") + "."
