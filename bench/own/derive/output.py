"""What the agent promises to return (:class:`OutputType`): its JSON Schema and, for a Python type, the type
itself, which decides with its own validators whether an answer is one it accepts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, is_typeddict

import jsonschema
from pydantic import BaseModel, TypeAdapter, ValidationError

from bench.own.config import OwnAgentError

RAISED = "<raised>"
"""The location of a rejection that is no ``ValidationError`` (a validator's ``decimal.InvalidOperation``
on a 90-digit amount): at no place in particular, but told apart from a model validator's."""


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
