"""``wrong``: a valid answer that is not right, so it needs a meaning of right (the user's check, else the
reference field by field); the candidates are the reference with one detail changed, an enum member or a
nested item's value before a top-level string, then the generated answers whole."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from bench.own.derive.output import Check, Loc, OutputType
from bench.own.derive.paths import _DECIMAL, _places, _replaced
from bench.own.derive.sample import FORMATS, WORDS, _from_pattern

WRONG_TRIES = 400
"""Valid answers offered to ``check`` (or compared with the example) before ``wrong`` is given up."""


NO_MEANING = (
    "needs a check callable or an example (reference) answer: without either, every valid answer is equally right"
)
"""Why ``wrong`` cannot be built for a type alone (what "wrong" means is the user's to say)."""


def _meaning_of_correct(
    output: OutputType, reference: dict[str, Any], candidates: list[Any], example: dict[str, Any] | None,
    check: Check | None,
) -> tuple[Callable[[Any], str | None], dict[str, Any] | None, str]:  # fmt: skip
    """The semantic rule, a valid answer that fails it (None: cannot be built), and why not."""
    if check is None and example is None:
        return (lambda instance: None), None, NO_MEANING
    rule = check if check is not None else _field_by_field(output, reference)
    wrong, tried = first_wrong(output, rule, reference, candidates, "top")
    if wrong is not None:
        return rule, wrong, ""
    if check is not None:
        return rule, None, f"cannot be built: the check accepts all {tried} valid answers tried"
    return rule, None, f"cannot be built: the output type accepts no answer other than the example ({tried} tried)"


def first_wrong(
    output: OutputType, rule: Callable[[Any], str | None], reference: dict[str, Any], candidates: list[Any],
    scope: str,
) -> tuple[dict[str, Any] | None, int]:  # fmt: skip
    """The first of :func:`_variations` (``scope`` first) that ``rule`` rejects, and how many were tried."""
    tried = 0
    for candidate in _variations(output, reference, candidates, scope):
        tried += 1
        if rule(output.instance(candidate)) is not None:
            return candidate, tried
        if tried >= WRONG_TRIES:
            break
    return None, tried


def _field_by_field(output: OutputType, reference: dict[str, Any]) -> Callable[[Any], str | None]:
    """Right means equal to the reference in every field, both read through the type (an
    example's ``30.5`` and an answer's ``"30.50"`` are the same Decimal total)."""
    expected_all = output.as_values(output.instance(reference))

    def rule(instance: Any) -> str | None:
        got = output.as_values(instance)
        for key, expected in expected_all.items():
            if got.get(key) != expected:
                return f"{key} is {got.get(key)!r}, expected {expected!r}"
        return None

    return rule


def _variations(
    output: OutputType, reference: dict[str, Any], candidates: list[Any], scope: str = "top"
) -> Iterator[dict[str, Any]]:
    """Valid answers close to the reference (one value varied by its type, in :func:`_mutations`'
    order; then one field taken from another candidate), then the other candidates whole: a
    plausible wrong answer differs from the right one in a detail. Each is offered once."""
    seen = {_key(reference)}

    def offered() -> Iterator[dict[str, Any]]:
        yield from _mutations(output, reference, scope)
        for candidate in candidates:
            for key, value in candidate.items():
                if reference.get(key) != value:
                    yield {**reference, key: value}
        yield from candidates

    for varied in offered():
        if _key(varied) not in seen:
            seen.add(_key(varied))
            if output.accepts(varied):
                yield varied


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mutations(output: OutputType, reference: dict[str, Any], scope: str = "top") -> Iterator[dict[str, Any]]:
    """The reference with one value varied by its type: for the ``top`` scope another enum member
    first, then a nested item's value, then a top-level value (a slip in a detail, not the
    answer's identifier); for ``nested`` a nested item's value first. Lists (an item dropped or
    repeated) last; outermost first within each."""
    rng = random.Random(0)
    places = [
        (path, sub, value)
        for path, sub, value in _places(output.schema, reference, every_item=True)
        if path and not isinstance(value, dict)
    ]

    def rank(place: tuple[Loc, dict[str, Any], Any]) -> int:
        path, sub, value = place
        if isinstance(value, list):
            return 3
        nested = len(path) > 1
        if scope == "nested":
            return 0 if nested else 1 if "enum" in sub else 2
        return 0 if "enum" in sub else 1 if nested else 2

    for path, sub, value in sorted(places, key=rank):
        for new in _alternatives(sub, value, rng):
            if new != value:
                yield _replaced(reference, path, new)


def _alternatives(sub: dict[str, Any], value: Any, rng: random.Random) -> Iterator[Any]:
    """Other values of the same kind: a plausible slip, kept at the value's own precision."""
    yield from sub.get("enum", [])
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, int | float):
        places = _decimals(value)
        for new in (value + 1, value - 1, value * 2, value / 2):
            yield round(new, places) if isinstance(value, float) else int(new)
    elif isinstance(value, str):
        yield from _string_alternatives(sub, value, rng)
    elif isinstance(value, list) and value:
        yield [*value, value[0]]
        if len(value) > 1:
            yield value[:-1]
            yield value[::-1]


def _string_alternatives(sub: dict[str, Any], value: str, rng: random.Random) -> Iterator[str]:
    if _DECIMAL.fullmatch(value):
        number = Decimal(value)
        yield from (str(number + 1), str(number - 1), str(number * 2))
    if "pattern" in sub:
        yield from (_from_pattern(sub["pattern"], rng) for _ in range(3))
    if sub.get("format") in FORMATS:
        yield from (FORMATS[sub["format"]](rng) for _ in range(3))
    words = value.split()
    if len(words) > 1:
        yield " ".join(reversed(words))
    yield " ".join(rng.sample(WORDS, 2))


def _decimals(value: float) -> int:
    try:
        exponent = Decimal(repr(value)).as_tuple().exponent
    except InvalidOperation:
        return 0
    return max(0, -exponent) if isinstance(exponent, int) else 0
