"""The task derived for one user's type (:func:`derive_task`, :class:`DerivedTask`): the reference, the wrong
answer, the violations, every fault with the constraints it breaks (and what a scenario written
for a nested task sends instead: :meth:`DerivedTask.answering`), and the families no answer could
be built for, with the reason."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench.own.config import OwnAgentError
from bench.own.derive.constraints import breaks, catalogue
from bench.own.derive.faults import Fault, out_of_range, scope_of, validator_fault
from bench.own.derive.generate import generate
from bench.own.derive.output import GIVE_EXAMPLE, Check, OutputType
from bench.own.derive.paths import _top
from bench.own.derive.violations import _VIOLATORS, violation_gap, violations
from bench.own.derive.wrong import _meaning_of_correct, first_wrong
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
    faults: tuple[Fault, ...] = ()
    """Every fault answer sent, each with the constraints it breaks and the places it changes."""
    constraints: tuple[str, ...] = ()
    """Every constraint the type declares (:func:`bench.own.derive.constraints.catalogue`)."""
    nested: Mapping[str, Any] = field(default_factory=dict)
    """What a scenario written for a nested task sends instead (``wrong_sent``, ``violations``)."""

    def answering(self, builtin_schema: dict[str, Any]) -> DerivedTask:
        """This task for a scenario written for a built-in task of ``builtin_schema``: one with a
        list or an object in it (expense_report) sends the type's nested faults and its validator
        fault (:mod:`bench.own.derive.faults`); a flat one, the top-level faults."""
        if scope_of(builtin_schema) != "nested" or not self.nested:
            return self
        violations = {**self.violations, **self.nested.get("violations", {})}
        return replace(self, wrong_sent=self.nested.get("wrong_sent"), violations=violations)

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
    every = catalogue(output)
    ranged = out_of_range(output, reference, every)
    if ranged:
        found["out_of_range"] = (ranged.get("top") or ranged["nested"]).answer
    faults = [_fault(output, every, f"schema_violation:{v}", "top", reference, answer) for v, answer in found.items()]
    faults += [
        replace(fault, changes=_changes(reference, fault.answer))
        for fault in ranged.values()
        if fault.scope == "nested"
    ]
    nested: dict[str, Any] = {}
    if "nested" in ranged:
        nested["violations"] = {"out_of_range": ranged["nested"].answer}
    if wrong is not None:
        faults.append(_fault(output, every, "wrong", "top", reference, wrong))
        crossing = validator_fault(output, reference, every)
        if crossing is None and (other := first_wrong(output, rule, reference, candidates, "nested")[0]) is not None:
            crossing = _fault(output, every, "wrong", "nested", reference, other)
        if crossing is not None:
            nested["wrong_sent"] = crossing.answer
            faults.append(replace(crossing, changes=_changes(reference, crossing.answer)))
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
        faults=tuple(faults),
        constraints=tuple(map(str, every)),
        nested=nested,
    )


def _fault(
    output: OutputType, every: tuple[Any, ...], family: str, scope: str, reference: Any, answer: dict[str, Any]
) -> Fault:
    broken = breaks(output, answer, every)
    names = tuple(str(c) for c in every if c in broken)
    return Fault(family, scope, answer, names, _changes(reference, answer))


def _changes(before: Any, after: Any, path: str = "") -> tuple[str, ...]:
    """The places ``after`` differs from ``before`` at (``items[2].quantity``; a list whose length
    changed, as the list), the first ten."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in dict.fromkeys([*before, *after]):
            found += _changes(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))
        return tuple(found[:10])
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return tuple(
            place
            for index, pair in enumerate(zip(before, after, strict=True))
            for place in _changes(*pair, f"{path}[{index}]")
        )[:10]
    return () if before == after else (path or "(top level)",)


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
