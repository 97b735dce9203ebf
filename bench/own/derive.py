"""Faults for any output type: a task derived from the user's declared output type.

The built-in tasks carry hand-written reference, wrong and violating answers; a user's type gets
them derived here, from the JSON Schema of the type (the one the SDK sends the model) and from
the type itself, its own validators included (a ``field_validator`` limiting amounts to two
decimals, a ``model_validator`` across fields): every answer sent as valid is one the user's
type accepts, never one only the schema does.

- ``valid``: the user's example file, else a generated answer. Python types (pydantic models,
  dataclasses, TypedDicts) are built with polyfactory, which honours the type's declared
  constraints (bounds, lengths, patterns, Literal/enum, nested and optional fields, unions) and
  builds through the type; a raw JSON Schema (Claude's ``output_format``, a LangChain dict
  schema) goes through :func:`sample`, a keyword-by-keyword walker. A build the type's own
  validators refuse is built again unvalidated and :func:`repair`\\ ed: at each place the schema
  or the type rejects, the example's value there, else the value shrunk (numbers rounded to two
  decimals, then fewer, then zero; strings and lists shortened, a list too short lengthened).
  Every answer is checked against the schema (jsonschema) and the type before it is used.
  (hypothesis-jsonschema, the other candidate, fails on the pinned hypothesis 6.170: its object
  strategy calls a removed internal, ``many.more``.)
- ``schema_violation``: one answer per variant, derived from the schema (a required field
  removed, a value of a type the schema does not allow, a key where ``additionalProperties`` is
  false, a value outside an enum, bound or length), each checked to fail both the schema and
  the type.
- ``wrong``: a *valid* answer that is not right, so it needs a meaning of right. With the user's
  ``check`` callable: a valid answer ``check`` rejects. With only an example: a valid answer that
  differs from it (judged field by field). Candidates are the reference with one value changed
  (taken from a generated answer, or varied by type: a number moved by one at the same
  decimals, another enum value, another string matching the pattern, a list item dropped),
  then the generated answers whole; each must pass the type. With neither a check nor an
  example every valid answer is equally right: ``wrong`` cannot be built.

A family that cannot be built is never silently dropped: :attr:`DerivedTask.not_measured` names
it with the reason; its cells are ``unsupported`` with that reason, ``bench run`` says so on
stderr and in its summary, the manifest records it, and the pytest fixture raises on a rate
that reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation, localcontext
from functools import cached_property
from typing import Any, is_typeddict

import jsonschema
from pydantic import BaseModel, TypeAdapter, ValidationError

from bench.own.config import OwnAgentError
from bench.scenarios.tasks import Task

CANDIDATES = 12
"""Generated answers per type: the first valid one is the reference, the others feed ``wrong``."""
ATTEMPTS = 3
"""Builds tried per wanted candidate (a build the validators refuse is repaired or dropped)."""
REPAIR_ROUNDS = 12
"""Places fixed, one after another, before a candidate is given up."""
WRONG_TRIES = 400
"""Valid answers offered to ``check`` (or compared with the example) before ``wrong`` is given up."""
EXTRA_KEY = "unexpected_field"
MAX_DIGITS = 1000
"""Digits a repair computes with (the default context's 28 cannot take polyfactory's Decimals)."""
RAISED = "<raised>"
"""The location of a rejection that is no ``ValidationError`` (a validator's ``decimal.InvalidOperation``
on a 90-digit amount): at no place in particular, but told apart from a model validator's."""
NO_MEANING = (
    "needs a check callable or an example (reference) answer: without either, every valid answer is equally right"
)
"""Why ``wrong`` cannot be built for a type alone (what "wrong" means is the user's to say)."""

GIVE_EXAMPLE = "give a right answer in the entry's example field (example = 'FILE.json')"
"""How a user says what a valid answer is when none can be derived (``bench pick --type`` names its
own option instead: :data:`bench.own.typed.GIVE_EXAMPLE`)."""

Check = Callable[[Any], str | None]
Loc = tuple[Any, ...]


@dataclass(frozen=True)
class OutputType:
    """What the agent promises to return: a Python type, or a raw JSON Schema."""

    schema: dict[str, Any]
    python_type: Any = None
    """None for a raw JSON Schema."""

    @classmethod
    def of(cls, declared: Any) -> OutputType:
        if isinstance(declared, Mapping):
            return cls(schema=dict(declared))
        try:
            schema = TypeAdapter(declared).json_schema()
        except Exception as error:  # pydantic's own: the type has no JSON Schema
            raise OwnAgentError(f"output type {declared!r} has no JSON Schema: {error}") from None
        return cls(schema=schema, python_type=declared)

    @cached_property
    def _adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.python_type)

    @cached_property
    def _validator(self) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(self.schema)

    def instance(self, value: Any) -> Any:
        """``value`` as the declared type, or None when it is not one."""
        if self.python_type is None:
            return value if isinstance(value, Mapping) and self.fits_schema(value) else None
        if _is_instance(value, self.python_type):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        if not isinstance(value, Mapping):
            return None
        try:
            return self._adapter.validate_python(dict(value))
        except ValidationError:
            return None
        except Exception:  # a user's validator raising something else refuses the value too
            return None

    def fits_schema(self, value: Any) -> bool:
        return bool(self._validator.is_valid(value))

    def problems(self, value: Any) -> list[Loc]:
        """Where the schema and the type (its validators included) reject ``value``, as paths
        into it (a model validator's is the model's own path); empty when both accept it."""
        found = [tuple(error.absolute_path) for error in self._validator.iter_errors(value)]
        if self.python_type is not None:
            try:
                self._adapter.validate_python(value)
            except ValidationError as error:
                found += [tuple(detail["loc"]) for detail in error.errors()]
            except Exception:  # a validator raising something else: rejected, at no place in particular
                found.append((RAISED,))
        return list(dict.fromkeys(found))

    def accepts(self, value: Any) -> bool:
        """Valid under the schema and, for a Python type, the type itself."""
        if not self.fits_schema(value):
            return False
        return self.python_type is None or self.instance(value) is not None

    def rejects(self, value: Any) -> bool:
        """Invalid under the schema and, for a Python type, under the type too."""
        if self.fits_schema(value):
            return False
        return self.python_type is None or self.instance(value) is None

    def as_values(self, instance: Any) -> Any:
        """``instance`` as plain Python values (dicts, lists, numbers, Decimals): what two
        answers are compared by."""
        if self.python_type is None:
            return instance
        return self._adapter.dump_python(instance)

    def as_json(self, instance: Any) -> Any:
        if self.python_type is None:
            return instance
        return self._adapter.dump_python(instance, mode="json")


def _is_instance(value: Any, declared: Any) -> bool:
    try:
        return isinstance(declared, type) and not is_typeddict(declared) and isinstance(value, declared)
    except TypeError:
        return False


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


def _meaning_of_correct(
    output: OutputType, reference: dict[str, Any], candidates: list[Any], example: dict[str, Any] | None,
    check: Check | None,
) -> tuple[Callable[[Any], str | None], dict[str, Any] | None, str]:  # fmt: skip
    """The semantic rule, a valid answer that fails it (None: cannot be built), and why not."""
    if check is None and example is None:
        return (lambda instance: None), None, NO_MEANING
    rule = check if check is not None else _field_by_field(output, reference)
    tried = 0
    for candidate in _variations(output, reference, candidates):
        tried += 1
        if rule(output.instance(candidate)) is not None:
            return rule, candidate, ""
        if tried >= WRONG_TRIES:
            break
    if check is not None:
        return rule, None, f"cannot be built: the check accepts all {tried} valid answers tried"
    return rule, None, f"cannot be built: the output type accepts no answer other than the example ({tried} tried)"


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


def _variations(output: OutputType, reference: dict[str, Any], candidates: list[Any]) -> Iterator[dict[str, Any]]:
    """Valid answers close to the reference (one field taken from another candidate, then one
    value varied by its type), then the other candidates whole: a plausible wrong answer differs
    from the right one in a detail. Each is offered once."""
    seen = {_key(reference)}

    def offered() -> Iterator[dict[str, Any]]:
        for candidate in candidates:
            for key, value in candidate.items():
                if reference.get(key) != value:
                    yield {**reference, key: value}
        yield from _mutations(output, reference)
        yield from candidates

    for varied in offered():
        if _key(varied) not in seen:
            seen.add(_key(varied))
            if output.accepts(varied):
                yield varied


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mutations(output: OutputType, reference: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The reference with one value varied by its type, outermost values first."""
    rng = random.Random(0)
    for path, sub, value in _places(output.schema, reference, every_item=True):
        if path and not isinstance(value, dict):
            for new in _alternatives(sub, value, rng):
                if new != value:
                    yield _replaced(reference, path, new)


_DECIMAL = re.compile(r"-?\d+(\.\d+)?")


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


# --- valid answers ------------------------------------------------------------------------


def generate(
    output: OutputType, count: int = CANDIDATES, seed: int = 0, example: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Valid answers, deterministic for a seed; each one accepted by schema and type. Where the
    type's validators refuse what is built, the builds are repaired (``example``: the values
    taken first); where a type cannot be built at all, the schema walker's samples are."""
    if output.python_type is not None:
        built = _polyfactory(output, count, seed, example)
        if built:
            return built
    rng = random.Random(seed)
    samples = []
    for _ in range(count):
        try:
            samples.append(sample(output.schema, rng))
        except _CannotSample:
            break
    found = _unique(value for value in samples if output.accepts(value))
    if not found:  # every sample refused (a validator, a cross-field rule): repair them
        found = _unique(repair(output, value, example) for value in samples)
    return found[:count]


def _unique(values: Iterable[Any]) -> list[dict[str, Any]]:
    unique: list[dict[str, Any]] = []
    for value in values:
        if value is not None and value not in unique:
            unique.append(value)
    return unique


def _polyfactory(output: OutputType, count: int, seed: int, example: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Builds through the type; a build its validators refuse is built again without them
    (pydantic models: ``model_construct``) and repaired, so one validator does not empty the list."""
    from polyfactory.factories import DataclassFactory, TypedDictFactory
    from polyfactory.factories.pydantic_factory import ModelFactory

    declared = output.python_type
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        base: Any = ModelFactory
    elif dataclasses.is_dataclass(declared):
        base = DataclassFactory
    elif is_typeddict(declared):
        base = TypedDictFactory
    else:
        return []
    try:
        factory = base.create_factory(declared, __random_seed__=seed, __allow_none_optionals__=False)
    except Exception:  # polyfactory cannot build this type: fall back to the schema walker
        return []
    found: list[dict[str, Any]] = []
    for _ in range(count * ATTEMPTS):
        if len(found) >= count:
            break
        value = _build(output, factory, base is ModelFactory, example)
        if value is not None and value not in found:
            found.append(value)
    return found


def _build(output: OutputType, factory: Any, construct: bool, example: dict[str, Any] | None) -> Any:
    """One build that the type accepts, or None."""
    try:
        value = output.as_json(factory.build())
    except Exception:  # the type's own validators (or polyfactory) refused it
        if not construct:
            return None
        try:
            value = factory.build(factory_use_construct=True).model_dump(mode="json", warnings=False)
        except Exception:
            return None
        return repair(output, value, example)
    return value if output.accepts(value) else repair(output, value, example)


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


_ABSENT = object()


def _child(value: Any, part: Any) -> Any:
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return _ABSENT


def _wanted(example: dict[str, Any] | None, path: Loc) -> Any:
    """The example's value at ``path``; absent without an example."""
    return _ABSENT if example is None else _at(example, path)


def _at(value: Any, path: Loc) -> Any:
    for part in path:
        value = _child(value, part)
        if value is _ABSENT:
            break
    return value


def _existing(value: Any, loc: Loc) -> Loc:
    """The part of an error location that is a path into ``value`` (pydantic adds the names of
    union members and validator kinds, which are not keys)."""
    path: list[Any] = []
    for part in loc:
        child = _child(value, part)
        if child is not _ABSENT:
            value = child
            path.append(part)
    return tuple(path)


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


class _CannotSample(Exception):
    pass


def sample(schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """One value valid under ``schema`` (a subset of JSON Schema: types, enum/const, bounds,
    lengths, formats, required and optional properties, items, anyOf/oneOf/allOf, $ref)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 12:
        raise _CannotSample("schema nests too deep")
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if "enum" in schema:
        return copy.deepcopy(rng.choice(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = sorted(schema[key], key=lambda b: _resolve(b, root).get("type") == "null")
            return sample(branches[0] if rng.random() < 0.8 else rng.choice(branches), rng, root, depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return sample(merged, rng, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    return _SAMPLERS[kind](schema, rng, root, depth)


def _sample_object(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> dict[str, Any]:
    return {key: sample(sub, rng, root, depth + 1) for key, sub in schema.get("properties", {}).items()}


def _sample_array(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> list[Any]:
    low, high = schema.get("minItems", 1), schema.get("maxItems", max(2, schema.get("minItems", 1)))
    items = schema.get("items", {})
    out: list[Any] = []
    for _ in range(40):
        if len(out) >= min(max(low, 2), high):
            break
        value = sample(items, rng, root, depth + 1)
        if not (schema.get("uniqueItems") and value in out):
            out.append(value)
    if len(out) < low:
        raise _CannotSample("too few distinct items")
    return out


WORDS = ("alpha", "bravo", "delta", "echo", "harbour", "lantern", "meadow", "orbit", "quartz", "willow")
FORMATS = {
    "email": lambda rng: f"{rng.choice(WORDS)}@example.org",
    "date": lambda rng: f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
    "date-time": lambda rng: f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:30:00Z",
    "time": lambda rng: "10:30:00Z",
    "uri": lambda rng: f"https://example.org/{rng.choice(WORDS)}",
    "uuid": lambda rng: "12345678-1234-4234-8234-1234567890ab",
}


def _sample_string(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> str:
    if schema.get("format") in FORMATS:
        return FORMATS[schema["format"]](rng)
    if "pattern" in schema:
        return _from_pattern(schema["pattern"], rng)
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    text = " ".join(rng.choice(WORDS) for _ in range(2))
    while len(text) < low:
        text += " " + rng.choice(WORDS)
    return text[:high] if high is not None else text


def _from_pattern(pattern: str, rng: random.Random) -> str:
    """A string matching ``pattern`` (polyfactory's regex generator, seeded by ``rng``)."""
    from polyfactory.value_generators.regex import RegexFactory

    try:
        return str(RegexFactory(random=rng)(pattern))
    except Exception:  # a construct the generator does not know
        raise _CannotSample(f"cannot generate a string for the pattern {pattern!r}; {GIVE_EXAMPLE}") from None


def _bounds(schema: dict[str, Any], integer: bool) -> tuple[float, float]:
    step = 1 if integer else 0.01
    low = schema.get("minimum", schema["exclusiveMinimum"] + step if "exclusiveMinimum" in schema else None)
    high = schema.get("maximum", schema["exclusiveMaximum"] - step if "exclusiveMaximum" in schema else None)
    low = low if low is not None else (0 if high is None or high >= 0 else high - 100)
    high = high if high is not None else low + 100
    if low > high:
        raise _CannotSample("empty numeric range")
    return low, high


def _sample_integer(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> int:
    low, high = _bounds(schema, integer=True)
    lo, hi = int(-(-low // 1)), int(high // 1)
    multiple = schema.get("multipleOf")
    if multiple:
        choices = [n for n in range(lo, hi + 1) if n % multiple == 0][:100]
        if not choices:
            raise _CannotSample("no multiple in range")
        return rng.choice(choices)
    return rng.randint(lo, hi)


def _sample_number(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> float:
    low, high = _bounds(schema, integer=False)
    return round(low + (high - low) * rng.uniform(0.1, 0.9), 2) if high > low else low


_SAMPLERS: dict[str, Callable[[dict[str, Any], random.Random, dict[str, Any], int], Any]] = {
    "object": _sample_object,
    "array": _sample_array,
    "string": _sample_string,
    "integer": _sample_integer,
    "number": _sample_number,
    "boolean": lambda schema, rng, root, depth: rng.random() < 0.5,
    "null": lambda schema, rng, root, depth: None,
}


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref``s (``#/$defs/X``, ``#/definitions/X``)."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            if part:
                target = target[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    return _resolve(schema, schema)


# --- schema violations --------------------------------------------------------------------


def violations(output: OutputType, valid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each violation variant the schema allows, one answer that both schema and type reject."""
    found: dict[str, dict[str, Any]] = {}
    for variant, candidates in _VIOLATORS.items():
        for candidate in candidates(output.schema, valid):
            if output.rejects(candidate):
                found[variant] = candidate
                break
    return found


NO_HANDLE = {
    "missing_field": "the output schema requires no field",
    "wrong_type": "the output schema has no field whose type can be broken",
    "extra_key": "the output schema allows extra keys (additionalProperties is not false)",
    "out_of_range": "the output schema has no bound, length or enum to break",
}


def violation_gap(output: OutputType, valid: dict[str, Any], variant: str) -> str:
    """Why :func:`violations` found no ``variant``: the schema gives no handle for it, or the
    type accepts every answer the schema refuses."""
    if next(_VIOLATORS[variant](output.schema, valid), None) is None:
        return f"cannot be built: {NO_HANDLE[variant]}"
    return f"cannot be built: the output type accepts every {variant} answer the schema refuses"


def _places(
    schema: dict[str, Any], value: Any, path: tuple[Any, ...] = (), every_item: bool = False
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any], Any]]:
    """(path, subschema, value) for every value in ``value``, outermost first; of an array, its
    first item (``every_item``: each of them)."""
    queue = [(path, _resolve(schema, schema), value)]
    root = schema
    while queue:
        here, sub, current = queue.pop(0)
        yield here, sub, current
        if isinstance(current, dict):
            for key, prop in sub.get("properties", {}).items():
                if key in current:
                    queue.append(((*here, key), _resolve(_branch(prop, current[key], root), root), current[key]))
        elif isinstance(current, list) and current and isinstance(sub.get("items"), dict):
            for index, item in enumerate(current if every_item else current[:1]):
                queue.append(((*here, index), _resolve(_branch(sub["items"], item, root), root), item))


def _branch(schema: dict[str, Any], value: Any, root: dict[str, Any]) -> dict[str, Any]:
    """The anyOf/oneOf branch ``value`` belongs to (so nested bounds are found inside unions)."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            scoped = {
                "$defs": root.get("$defs", {}),
                "definitions": root.get("definitions", {}),
                **_resolve(branch, root),
            }
            if jsonschema.Draft202012Validator(scoped).is_valid(value):
                return _resolve(branch, root)
    return schema


def _replaced(valid: dict[str, Any], path: tuple[Any, ...], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(valid)
    target: Any = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return out


def _missing_field(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, sub, value in _places(schema, valid):
        if isinstance(value, dict):
            for key in sub.get("required", []):
                if key in value:
                    out = copy.deepcopy(valid)
                    target: Any = out
                    for part in path:
                        target = target[part]
                    del target[key]
                    yield out


WRONG_TYPES: tuple[Any, ...] = ("not a valid value", 12345, {"unexpected": 1}, ["x"], True)


def _wrong_type(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, _sub, _value in _places(schema, valid):
        if path:
            for new in WRONG_TYPES:
                yield _replaced(valid, path, new)


def _extra_key(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, sub, value in _places(schema, valid):
        if isinstance(value, dict) and sub.get("additionalProperties") is False:
            key = EXTRA_KEY if EXTRA_KEY not in sub.get("properties", {}) else EXTRA_KEY + "_2"
            yield _replaced(valid, path, {**value, key: "extra"}) if path else {**valid, key: "extra"}


def _out_of_range(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A bound or length broken first (strict decoding does not enforce those, so the fault is
    realistic under every mode), an enum value only where the schema has no bound."""
    for outside in (_outside_bounds, _outside_enum):
        for path, sub, value in _places(schema, valid):
            if path:
                for new in outside(sub, value):
                    yield _replaced(valid, path, new)


def _outside_enum(sub: dict[str, Any], value: Any) -> Iterator[Any]:
    if "enum" in sub or "const" in sub:
        allowed = sub.get("enum", [sub.get("const")])
        if isinstance(value, str):
            yield next(f"{value}_other{i}" for i in range(100) if f"{value}_other{i}" not in allowed)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield max(allowed, default=0) + 1 if all(isinstance(a, int | float) for a in allowed) else -1


def _outside_bounds(sub: dict[str, Any], value: Any) -> Iterator[Any]:
    """Values of the right type that break a numeric bound, a length or an item count."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        integer = isinstance(value, int)
        for key, sign in (("maximum", 1), ("exclusiveMaximum", 1), ("minimum", -1), ("exclusiveMinimum", -1)):
            if key in sub:
                yield sub[key] + sign * (1 if integer else 0.5)
    if isinstance(value, str):
        if sub.get("minLength", 0) > 0:
            yield ""
        if "maxLength" in sub:
            yield "x" * (sub["maxLength"] + 1)
    if isinstance(value, list):
        if sub.get("minItems", 0) > 0:
            yield []
        if "maxItems" in sub and value:
            yield value * (sub["maxItems"] + 1)


_VIOLATORS: dict[str, Callable[[dict[str, Any], dict[str, Any]], Iterator[dict[str, Any]]]] = {
    "missing_field": _missing_field,
    "wrong_type": _wrong_type,
    "extra_key": _extra_key,
    "out_of_range": _out_of_range,
}


def _prose(reference: dict[str, Any]) -> str:
    """Plain text carrying the answer's facts, as a chatty model writes them."""
    facts = [
        f"{key.replace('_', ' ')} {json.dumps(value)}"
        for key, value in reference.items()
        if not isinstance(value, dict | list)
    ]
    return "Here is what I found: " + ("; ".join(facts[:6]) or "the details are in the request") + "."
