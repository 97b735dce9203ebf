"""Valid answers for a type (:func:`generate`): built through the type with polyfactory, repaired where the
type's validators refuse a build, or sampled from the schema; each accepted by schema and type."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from typing import Any, is_typeddict

from pydantic import BaseModel

from bench.own.derive.output import OutputType
from bench.own.derive.repair import repair
from bench.own.derive.sample import _CannotSample, sample

CANDIDATES = 12
"""Generated answers per type: the first valid one is the reference, the others feed ``wrong``."""


ATTEMPTS = 3
"""Builds tried per wanted candidate (a build the validators refuse is repaired or dropped)."""


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
