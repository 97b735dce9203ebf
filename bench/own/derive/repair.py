"""A build the type refuses, changed until it accepts it (:func:`repair`): at each place the type names, the
example's value there, else the value shrunk; at an object, its numbers changed together (a total set to
the sum of its lines) for a rule across fields."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from bench.own.derive.output import RAISED, Loc, OutputType
from bench.own.derive.paths import _ABSENT, _DECIMAL, _at, _existing, _places, _replaced, _resolve

REPAIR_ROUNDS = 12
"""Places fixed, one after another, before a candidate is given up."""


MAX_DIGITS = 1000
"""Digits a repair computes with (the default context's 28 cannot take polyfactory's Decimals)."""


def repair(output: OutputType, value: Any, example: dict[str, Any] | None = None) -> Any:
    """``value`` changed until the schema and the type accept it; None when that fails. Each round
    fixes every place the type names at once (:func:`_fix_every`), else one place and then its
    enclosing objects, for a rule across fields (:func:`_fix_first`). At a place: the example's
    value there, else the value shrunk (see :func:`_fixes`); at an object, also every number in it
    shrunk at once, a number set to the sum of a list's, and every number zeroed within its bounds."""
    problems = output.problems(value)
    for _ in range(REPAIR_ROUNDS):
        if not problems:
            return value
        fixed = _fix_every(output, value, problems, example) or _fix_first(output, value, problems, example)
        if fixed is None:
            return None
        value, problems = fixed
    return None if problems else value


def _fix_every(
    output: OutputType, value: Any, problems: list[Loc], example: dict[str, Any] | None
) -> tuple[Any, list[Loc]] | None:
    """Every located leaf the type rejects (twenty line items' amounts at three decimals), each
    given the first fix that clears it alone, all applied at once; kept when fewer problems remain."""
    places = list(dict.fromkeys(p for loc in problems if (p := _existing(value, loc)) and RAISED not in loc))
    if len(places) < 2:
        return None
    trial = value
    for place in places:
        current = _at(value, place)
        if isinstance(current, dict | list):
            continue
        for new in _fixes(current, _wanted(example, place)):
            alone = _replaced(value, place, new)
            if place not in {_existing(alone, loc) for loc in output.problems(alone)}:
                trial = _replaced(trial, place, new)
                break
    got = output.problems(trial)
    return (trial, got) if len(got) < len(problems) else None


def _fix_first(
    output: OutputType, value: Any, problems: list[Loc], example: dict[str, Any] | None
) -> tuple[Any, list[Loc]] | None:
    place = _existing(value, problems[0])
    for depth in range(len(place), -1, -1):
        here = place[:depth]
        current = _at(value, here)
        candidates = _fixes(current, _wanted(example, here))
        if isinstance(current, dict):
            candidates = itertools.chain(candidates, _object_fixes(output, value, here))
        for new in candidates:
            trial = _replaced(value, here, new) if here else new
            got = output.problems(trial)
            if len(got) < len(problems) or (len(got) == len(problems) and problems[0] not in got):
                return trial, got
    return None


def _object_fixes(output: OutputType, value: Any, here: Loc) -> Iterator[Any]:
    """The object at ``here`` with its numbers changed together, for a rule across fields: every
    number shrunk (two decimals, under 10,000), then each number set to the sum of a list's
    numbers of one field (a total that must be the sum of its lines), then every number zeroed
    within its bounds. Each also after the shrink, which the others need on wild builds."""
    shrunk = _numbers_changed(output.schema, value, here, _tame)
    yield _at(shrunk, here)
    for base in (value, shrunk):
        yield from (_at(summed, here) for summed in _sums(output.schema, base, here))
    yield _at(_numbers_changed(output.schema, value, here, _lowest), here)


def _numbers_changed(
    schema: dict[str, Any], value: Any, under: Loc, change: Callable[[dict[str, Any], Any], Any]
) -> Any:
    out = value
    for path, sub, current in _number_places(schema, value, under):
        if len(path) > len(under):
            out = _replaced(out, path, change(sub, current))
    return out


def _number_places(schema: dict[str, Any], value: Any, under: Loc) -> Iterator[tuple[Loc, dict[str, Any], Any]]:
    """The numbers in ``value`` under ``under`` (each item's), with the schema of their place: a
    number, or a string where the schema also allows a number (a pydantic ``Decimal``)."""
    numeric = {"number", "integer"}
    for path, sub, current in _places(schema, value, every_item=True):
        if path[: len(under)] != under or isinstance(current, bool):
            continue
        if isinstance(current, int | float):
            yield path, sub, current
        elif isinstance(current, str) and _DECIMAL.fullmatch(current):
            declared = _declared(schema, path)
            branches = [_resolve(b, schema) for b in declared.get("anyOf", declared.get("oneOf", []))]
            if any(b.get("type") in numeric for b in branches):
                yield path, {k: v for b in branches if b.get("type") in numeric for k, v in b.items()}, current


def _declared(schema: dict[str, Any], path: Loc) -> dict[str, Any]:
    """The schema declared at ``path`` (an item's for an index), before any branch is chosen."""
    here = _resolve(schema, schema)
    for part in path:
        if isinstance(part, int):
            here = _resolve(here.get("items", {}), schema)
        else:
            here = _resolve(here.get("properties", {}).get(part, {}), schema)
        if part != path[-1] or isinstance(part, int):
            here = _resolve(_first_object(here, schema), schema)
    return here


def _first_object(here: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """An object or array branch of a union (``Optional[Line]``), to walk on through."""
    for branch in here.get("anyOf", here.get("oneOf", [])):
        if _resolve(branch, root).get("type") in ("object", "array"):
            return _resolve(branch, root)
    return here


def _tame(sub: dict[str, Any], value: Any) -> Any:
    """``value`` at two decimals and under 10,000 in size, of its own kind (int, float, string)."""
    try:
        with localcontext(prec=MAX_DIGITS):  # polyfactory's Decimals have a hundred digits
            number = Decimal(str(value))
            number = (abs(number) % 10000).copy_sign(number).quantize(Decimal("0.01"))
    except InvalidOperation:
        return value
    if isinstance(value, int):
        return int(number)
    return float(number) if isinstance(value, float) else str(number)


def _lowest(sub: dict[str, Any], value: Any) -> Any:
    """Zero, or the bound nearest to it: the smallest answer, which meets most rules across fields."""
    bounds = {**sub, **next((b for b in sub.get("anyOf", []) if b.get("type") in ("number", "integer")), {})}
    zero: float = 0
    if "minimum" in bounds or "exclusiveMinimum" in bounds:
        zero = max(
            zero, bounds.get("minimum", bounds.get("exclusiveMinimum", 0) + (1 if isinstance(value, int) else 0.01))
        )
    if "maximum" in bounds or "exclusiveMaximum" in bounds:
        zero = min(
            zero, bounds.get("maximum", bounds.get("exclusiveMaximum", 0) - (1 if isinstance(value, int) else 0.01))
        )
    if isinstance(value, int):
        return int(zero)
    return float(zero) if isinstance(value, float) else str(zero if zero else 0)


def _sums(schema: dict[str, Any], value: Any, under: Loc) -> Iterator[Any]:
    """``value`` with one number directly in the object at ``under`` set to the sum of one field
    over a list of objects in it (``total`` = the sum of ``items[*].amount``), for each such pair."""
    numbers = {path: current for path, _sub, current in _number_places(schema, value, under)}
    totals = [(path, number) for path, number in numbers.items() if len(path) == len(under) + 1]
    here = _at(value, under)
    lists = (
        [(key, items) for key, items in here.items() if isinstance(items, list) and items]
        if isinstance(here, dict)
        else []
    )
    for key, items in lists:
        if not all(isinstance(item, dict) for item in items):
            continue
        for field_name in items[0]:
            column = [(*under, key, index, field_name) for index in range(len(items))]
            if not all(place in numbers for place in column):
                continue
            with localcontext(prec=MAX_DIGITS):
                summed = sum((Decimal(str(numbers[place])) for place in column), Decimal(0))
            for total_path, total in totals:
                new = (
                    int(summed)
                    if isinstance(total, int)
                    else float(summed)
                    if isinstance(total, float)
                    else str(summed)
                )
                if new != total:
                    yield _replaced(value, total_path, new)


def _wanted(example: dict[str, Any] | None, path: Loc) -> Any:
    """The example's value at ``path``; absent without an example."""
    return _ABSENT if example is None else _at(example, path)


def _fixes(current: Any, wanted: Any) -> Iterator[Any]:
    """Values to try in place of ``current``: the example's (``wanted``), then ``current`` shrunk."""
    if wanted is not _ABSENT and wanted != current:
        if isinstance(current, dict) and isinstance(wanted, dict):
            yield from ({**current, key: copy.deepcopy(value)} for key, value in wanted.items())
        yield copy.deepcopy(wanted)
    if isinstance(current, bool):
        yield not current
    elif isinstance(current, float):
        yield from (round(current, 2), round(current, 1), float(round(current)), 0.0, abs(current))
    elif isinstance(current, int):
        yield from (0, 1, abs(current))
    elif isinstance(current, str):
        if _DECIMAL.fullmatch(current):
            yield from (*_two_decimals(current), "0")
        yield from (current[: len(current) // 2], current.strip(), current.lower(), "")
    elif isinstance(current, list):
        yield from ([*current, *current[:1]], current[: len(current) // 2], [])
    elif isinstance(current, dict):
        yield _zeroed(current)


def _two_decimals(text: str) -> tuple[str, ...]:
    """``text`` rounded to two decimals; nothing when it has more digits than the context holds
    (polyfactory builds Decimals of 30 digits and more: ``quantize`` raises InvalidOperation)."""
    try:
        return (str(Decimal(text).quantize(Decimal("0.01"))),)
    except InvalidOperation:
        return ()


def _zeroed(value: Any) -> Any:
    """Every number in ``value`` set to zero: the smallest answer, which satisfies most rules
    across fields (a total that is the sum of its lines)."""
    if isinstance(value, dict):
        return {key: _zeroed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_zeroed(item) for item in value]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return value
    if isinstance(value, str):
        return "0" if _DECIMAL.fullmatch(value) else value
    return type(value)(0)
