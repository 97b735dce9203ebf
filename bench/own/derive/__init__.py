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

The package, a module per concept: :mod:`.output` (the type), :mod:`.paths` (schema walking),
:mod:`.sample` (a raw schema's values), :mod:`.generate` (valid answers), :mod:`.repair` (a build the
validators refuse, repaired), :mod:`.wrong`, :mod:`.violations`, :mod:`.task` (the derived task).
"""

from __future__ import annotations

from bench.own.derive.generate import ATTEMPTS, CANDIDATES, generate
from bench.own.derive.output import GIVE_EXAMPLE, RAISED, Check, Loc, OutputType
from bench.own.derive.repair import MAX_DIGITS, REPAIR_ROUNDS, repair
from bench.own.derive.sample import FORMATS, WORDS, sample
from bench.own.derive.task import DerivedTask, derive_task
from bench.own.derive.violations import EXTRA_KEY, NO_HANDLE, WRONG_TYPES, violation_gap, violations
from bench.own.derive.wrong import NO_MEANING, WRONG_TRIES

__all__ = [
    "ATTEMPTS", "CANDIDATES", "EXTRA_KEY", "FORMATS", "GIVE_EXAMPLE", "MAX_DIGITS", "NO_HANDLE", "NO_MEANING",
    "RAISED", "REPAIR_ROUNDS", "WORDS", "WRONG_TRIES", "WRONG_TYPES", "Check", "DerivedTask", "Loc", "OutputType",
    "derive_task", "generate", "repair", "sample", "violation_gap", "violations",
]  # fmt: skip
