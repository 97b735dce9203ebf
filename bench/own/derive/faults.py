"""Faults that break what the user's type declares, each listed with the constraints it breaks.

The library's scenarios were written for the built-in tasks; on a user's type each sends the
type's fault of the same kind and at the same depth as its own task's (:func:`scope_of`): a
scenario written for a flat task (``out_of_range_*`` on ``ticket_triage``: a confidence over its
bound) breaks the type's top-level constraints, one written for a nested task
(``expense_bad_category_then_valid``: a line item outside its Literal) its nested ones, and
``expense_wrong_total_persistent`` (the total is not the sum of the lines) the type's validators
across fields where it has one: an answer the schema accepts and the type's own validator rejects.

Each answer is built greedily from the reference (:func:`break_all`): constraint after constraint,
in :data:`bench.own.derive.constraints.KEYWORDS` order, at a place not broken yet, kept only when
every constraint already broken stays broken (an emptied list would take its items' breaks with
it). What an answer breaks is read back from the schema's and the type's errors, never assumed.
A constraint no answer breaks (a minimum and a maximum at the only place they could both be
broken) is named in :attr:`bench.own.derive.task.DerivedTask.unreached`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.own.derive.constraints import COUNTS, Constraint, breaks, pattern_of
from bench.own.derive.output import Loc, OutputType
from bench.own.derive.paths import _DECIMAL, _at, _places, _replaced
from bench.own.derive.wrong import _alternatives

SCOPES = ("top", "nested")
"""``top``: the top level's own fields; ``nested``: inside a list's items or a nested object."""
TRIES = 60
"""Values tried per constraint before it is left unbroken."""
OUT_OF_RANGE = "schema_violation:out_of_range"
VALIDATOR = "wrong"
"""The validator fault rides on the scenario whose built-in fault is what a validator across fields
checks (``expense_wrong_total_persistent``, a ``wrong`` step): on the user's type it is rejected."""


@dataclass(frozen=True)
class Fault:
    """One answer sent for a fault, and what it breaks."""

    family: str
    scope: str
    answer: dict[str, Any]
    breaks: tuple[str, ...]
    """The type's constraints it breaks, read back from the schema's and the type's errors."""
    changes: tuple[str, ...] = ()
    """The places it differs from the reference at."""

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family, "scope": self.scope, "breaks": list(self.breaks), "changes": list(self.changes),
            "answer": self.answer,
        }  # fmt: skip


def scope_of(schema: dict[str, Any]) -> str:
    """``nested`` for a task whose answer holds a list or an object (expense_report's items)."""
    kinds = [sub.get("type") for sub in schema.get("properties", {}).values()]
    return "nested" if "array" in kinds or "object" in kinds else "top"


def in_scope(constraint: Constraint, scope: str) -> bool:
    """A top-level field's constraints are the ``top`` scope's, those inside a list's items or a
    nested object the ``nested`` one's; a list's item count is both scopes' (emptying it is a top-level
    fault, lengthening it keeps its broken items)."""
    if constraint.keyword in COUNTS:
        return True
    nested = "." in constraint.place or "[]" in constraint.place
    return nested == (scope == "nested")


def out_of_range(output: OutputType, reference: dict[str, Any], every: tuple[Constraint, ...]) -> dict[str, Fault]:
    """Per scope, an answer that breaks the scope's bounds, lengths, patterns, enums, item counts
    and field validators (every one it can at once), rejected by the schema and the type; a scope
    with nothing to break takes the whole type's."""
    targets = [c for c in every if c.keyword != "model validator"]
    found: dict[str, Fault] = {}
    for scope in SCOPES:
        mine = [c for c in targets if in_scope(c, scope)]
        if not any(not c.validator for c in mine):
            mine = targets
        answer, broken = break_all(output, reference, mine, every, lambda trial: True)
        if broken and output.rejects(answer):
            found[scope] = Fault(OUT_OF_RANGE, scope, answer, _names(every, broken))
    return found


def validator_fault(output: OutputType, reference: dict[str, Any], every: tuple[Constraint, ...]) -> Fault | None:
    """An answer the schema accepts and the type's own validators reject: its model validators
    (a rule across fields) first, else its field validators; None when the type has none, or
    none any one change breaks."""
    for keyword in ("model validator", "field validator"):  # a failing field hides the model's
        targets = [c for c in every if c.keyword == keyword]
        answer, broken = break_all(output, reference, targets, every, output.fits_schema)
        if broken and not output.accepts(answer):
            return Fault(VALIDATOR, "nested", answer, _names(every, broken))
    return None


def _names(every: tuple[Constraint, ...], broken: frozenset[Constraint]) -> tuple[str, ...]:
    return tuple(str(c) for c in every if c in broken)


def break_all(
    output: OutputType, reference: dict[str, Any], targets: list[Constraint], every: tuple[Constraint, ...],
    accept: Callable[[Any], bool],
) -> tuple[dict[str, Any], frozenset[Constraint]]:  # fmt: skip
    """``reference`` with each target broken in turn where that keeps every earlier break."""
    current, broken, taken = reference, frozenset[Constraint](), list[Loc]()
    for constraint in targets:
        if constraint in broken:
            continue
        for tried, (path, new) in enumerate(_candidates(output, current, constraint, taken)):
            if tried >= TRIES:
                break
            trial = _replaced(current, path, new) if path else new
            got = breaks(output, trial, every)
            if constraint in got and broken <= got and accept(trial):
                current, broken = trial, got
                taken.append(path)
                break
    return current, broken


def _candidates(output: OutputType, value: Any, constraint: Constraint, taken: list[Loc]) -> Iterator[tuple[Loc, Any]]:
    """(path, new value) pairs that may break ``constraint``, at places not changed yet."""
    for path, sub, current in _places(output.schema, value, every_item=True):
        if pattern_of(path) != constraint.place or _is_taken(path, taken, constraint.keyword in COUNTS):
            continue
        if constraint.keyword == "model validator":
            yield from _inside(output, value, path, taken)
        elif constraint.validator:
            yield from ((path, new) for new in _slips(sub, current))
        else:
            yield from ((path, new) for new in _outside(constraint, current))


def _is_taken(path: Loc, taken: list[Loc], whole_list: bool) -> bool:
    """A place already changed, or inside one; a list's count may change around changed items."""
    return any(path[: len(done)] == done for done in taken) or (
        not whole_list and any(done[: len(path)] == path for done in taken)
    )


def _inside(output: OutputType, value: Any, here: Loc, taken: list[Loc]) -> Iterator[tuple[Loc, Any]]:
    """One leaf under the object at ``here`` changed (its own fields first): a rule across fields
    is broken by one value out of step with the others."""
    leaves = [
        (path, sub, current)
        for path, sub, current in _places(output.schema, _at(value, here), every_item=True)
        if not isinstance(current, dict | list)
    ]
    for path, sub, current in sorted(leaves, key=lambda leaf: len(leaf[0])):
        full = (*here, *path)
        if not _is_taken(full, taken, False):
            yield from ((full, new) for new in _slips(sub, current))


def _slips(sub: dict[str, Any], value: Any) -> Iterator[Any]:
    """Values a validator may refuse: one more decimal, the value moved, then its alternatives."""
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        yield value + "1" if "." in value else value + ".001"
    if isinstance(value, float):
        yield value + 0.001
    yield from _alternatives(sub, value, random.Random(0))
    if isinstance(value, str):
        yield from ("", value + " ", value.upper())


def _outside(constraint: Constraint, current: Any) -> Iterator[Any]:
    """Values of the place's own kind (a number for a Decimal's number branch) past its keyword."""
    raw: Any = json.loads(constraint.raw) if constraint.raw else None
    keyword, integer = constraint.keyword, isinstance(raw, int) and not isinstance(current, float)
    step = 1 if integer else 0.5
    if keyword in ("minimum", "exclusiveMinimum"):
        yield from (raw - step, raw) if keyword == "exclusiveMinimum" else (raw - step,)
    elif keyword in ("maximum", "exclusiveMaximum"):
        yield from (raw + step, raw) if keyword == "exclusiveMaximum" else (raw + step,)
    elif keyword == "multipleOf":
        yield raw * 1.5
    elif keyword == "minLength" and isinstance(current, str):
        yield current[: max(0, raw - 1)]
    elif keyword == "maxLength" and isinstance(current, str):
        yield current + "x" * (raw + 1 - len(current))
    elif keyword == "pattern" and isinstance(current, str):
        yield from (text for text in (current + "!", "!" + current, "") if not re.search(raw, text))
    elif keyword in ("enum", "const"):
        yield from _outside_choices(raw if keyword == "enum" else [raw], current)
    elif keyword == "minItems" and isinstance(current, list):
        yield current[: max(0, raw - 1)]
    elif keyword == "maxItems" and isinstance(current, list) and current:
        yield (current * (raw + 1))[: raw + 1]
    elif keyword == "uniqueItems" and isinstance(current, list) and current:
        yield [*current, current[0]]


def _outside_choices(allowed: list[Any], current: Any) -> Iterator[Any]:
    if isinstance(current, str):
        yield next(f"{current}_other{i}" for i in range(100) if f"{current}_other{i}" not in allowed)
    elif isinstance(current, int | float) and not isinstance(current, bool):
        numbers = [a for a in allowed if isinstance(a, int | float)]
        yield max(numbers, default=0) + 1
