"""Tasks drawn from a cassette folder: what ``bench run --cassettes DIR --tasks cassettes`` runs.

A recording holds one SDK release's own request (its prompt, its tool names, its schema), so no
other SDK sends it and the exact-request rule (:mod:`bench.cassettes.match`) never matches a
built-in task's request on another SDK's recordings. Here each distinct recorded structured
answer becomes a task of its own, which every SDK can be asked:

- a structured answer is a recorded item that is a non-empty JSON object: a tool call's
  arguments, a native (``response_format``) answer, or a prompted answer's JSON text;
- answers equal in value to the same user prompt are one task, with every recording of it (a
  replay draws among them with the cell's seed, as among recordings of one request);
- the prompt is the recorded conversation's first user message;
- the output type is built from the recorded JSON schema (the called tool's parameters, the
  response format's schema; the first recording that has one), else inferred from the answer;
- the reference answer is the recorded one, judged field by field
  (:func:`bench.own.derive.derive_task`, as for a user's type with an example), which also
  derives the valid-but-wrong answer an SDK's hardened fallback hands back;
- a fault family the replay cannot build on the recorded answer (``schema_violation:wrong_type``
  on an answer with no number, ``extra_key`` where the schema allows extra keys, ``wrong`` with
  no one-field change the check rejects) is in :attr:`DrawnTask.not_measured` with the replay's
  own reason: its cells are ``unsupported`` with it, counted in the run's summary, never run
  into a miss and never dropped;
- the provenance is the recordings' (file, interaction, source).

A schema this module cannot turn into a type (a keyword it does not model) leaves that answer
undrawn, with the reason in :attr:`Drawn.skipped` (said on stderr by ``bench run``).

Each built-in adapter runs on the drawn tasks through :class:`OnDrawnTasks` (the ``--type``
seam, :mod:`bench.own.typed`): a scenario's task is ``drawn[crc32(scenario name) % len(drawn)]``,
stable whatever the filters. A request of such a run is answered from the recordings of its
own task, not by matching the request (:class:`bench.cassettes.replay.Replay`).
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from bench.cassettes.extract import recorded
from bench.cassettes.match import Entry, Library, Recording, _conversation
from bench.own.derive import DerivedTask, OutputType, derive_task
from bench.own.typed import OnYourType, mixed_into

if TYPE_CHECKING:
    from bench.scenarios.files import Scenario
    from bench.sdk.adapter import Adapter

VIOLATIONS = ("missing_field", "wrong_type", "extra_key", "out_of_range")


@dataclass(frozen=True)
class DrawnTask(DerivedTask):
    """A task whose answers are recorded ones (:mod:`bench.cassettes.tasks`)."""

    recordings: tuple[Recording, ...] = field(default=(), compare=False, repr=False)
    provenance: str = ""
    """Where the first recording came from (an imported file's source, or ``bench record``)."""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "prompt": self.prompt, "reference": dict(self.reference),
            "schema": self.schema, "provenance": self.provenance,
            "recordings": [recording.where for recording in self.recordings],
            "not_measured": dict(self.not_measured),
        }  # fmt: skip


@dataclass(frozen=True)
class Drawn:
    tasks: tuple[DrawnTask, ...]
    skipped: tuple[str, ...] = ()
    """One line per recorded answer that could not become a task, with why."""


class UnsupportedSchema(ValueError):
    """A recorded schema with a keyword :func:`model_of` does not model."""


def draw_tasks(library: Library) -> Drawn:
    """The tasks of ``library``'s recorded answers (module docstring), in recording order."""
    groups: dict[tuple[str, str], list[tuple[Recording, dict[str, Any], dict[str, Any] | None]]] = {}
    seen: dict[Path, int] = {}
    for entry in library.answers:
        interaction = seen[entry.path] = seen.get(entry.path, -1) + 1
        prompt = _user_prompt(entry)
        for index, item in enumerate(recorded(entry.cassette).items):
            value = _json_object(item.text) if item.refusal is None else None
            if value is None or prompt is None:
                continue
            schema = _schema_of(entry, item.tool_name)
            recording = Recording(entry, index, f"{entry.path.name}#{interaction}")
            groups.setdefault((prompt, json.dumps(value, sort_keys=True)), []).append((recording, value, schema))
    tasks: list[DrawnTask] = []
    skipped: list[str] = []
    for (prompt, _), members in groups.items():
        try:
            tasks.append(_task(prompt, members, {task.name for task in tasks}))
        except UnsupportedSchema as error:
            skipped.append(f"{members[0][0].where}: not drawn: {error}")
    return Drawn(tuple(tasks), tuple(skipped))


def _task(
    prompt: str, members: list[tuple[Recording, dict[str, Any], dict[str, Any] | None]], taken: set[str]
) -> DrawnTask:
    first, value, _ = members[0]
    schema = next((schema for _, _, schema in members if schema is not None), None) or inferred(value)
    title = _title(schema, first)
    name, number = f"cassette:{title}", 2
    while name in taken:
        name, number = f"cassette:{title}_{number}", number + 1
    model = model_of(schema, title)
    derived = derive_task(name, OutputType.of(model), prompt, value, None)
    draft = DrawnTask(**{f.name: getattr(derived, f.name) for f in dataclasses.fields(DerivedTask)})
    draft = dataclasses.replace(
        draft, name=name, description=f"drawn from {first.where}",
        recordings=tuple(recording for recording, _, _ in members),
        provenance=first.entry.cassette.provenance.source,
    )  # fmt: skip
    return dataclasses.replace(draft, not_measured=unbuildable(draft, value, first.where))


def unbuildable(task: DrawnTask, value: dict[str, Any], where: str) -> dict[str, str]:
    """The fault families the replay cannot build on ``value`` (the recorded answer), each with
    the replay's own reason: what :meth:`Replay.answer` would answer with a miss."""
    from bench.cassettes.replay import Unbuildable, perturbed, violated

    gaps: dict[str, str] = {}
    path = Path(where)
    try:
        perturbed(value, task, path)
    except Unbuildable as error:
        gaps["wrong"] = f"{task.name}: {error}"
    for variant in VIOLATIONS:
        try:
            violated(value, variant, path, task)
        except Unbuildable as error:
            gaps[f"schema_violation:{variant}"] = f"{task.name}: {error}"
    return gaps


def _user_prompt(entry: Entry) -> str | None:
    """The recorded conversation's first user message, as text."""
    body = entry.cassette.request.body or {}
    for message in _conversation(str(entry.cassette.protocol), body):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [str(part["text"]) for part in content if isinstance(part, dict) and part.get("text")]
                return "".join(texts) or None
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def _schema_of(entry: Entry, tool_name: str | None) -> dict[str, Any] | None:
    """The JSON schema the recorded request gave this answer: the called tool's parameters, or
    the response format's schema (None for a prompted answer, whose schema is prose)."""
    body = entry.cassette.request.body or {}
    protocol = entry.cassette.protocol
    if tool_name is not None:
        for tool in body.get("tools") or []:
            spec = tool.get("function", tool) if protocol == "openai-chat" else tool
            if isinstance(spec, dict) and spec.get("name") == tool_name:
                schema = spec.get("input_schema" if protocol == "anthropic-messages" else "parameters")
                return schema if isinstance(schema, dict) else None
        return None
    if protocol == "openai-chat":
        form = body.get("response_format") or {}
        schema = (form.get("json_schema") or {}).get("schema") if form.get("type") == "json_schema" else None
    elif protocol == "openai-responses":
        form = (body.get("text") or {}).get("format") or {}
        schema = form.get("schema")
    else:
        form = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
        schema = form.get("schema")
    return schema if isinstance(schema, dict) else None


def _title(schema: dict[str, Any], first: Recording) -> str:
    """The type's name: the schema's title, a response format's name, the called tool's name."""
    if isinstance(schema.get("title"), str) and schema["title"].isidentifier():
        return str(schema["title"])
    cassette = first.entry.cassette
    body = cassette.request.body or {}
    form = body.get("response_format") or (body.get("text") or {}).get("format") or {}
    name = (form.get("json_schema") or form).get("name") if isinstance(form, dict) else None
    if not name:
        name = recorded(cassette).items[first.item].tool_name or "Answer"
    camel = "".join(part[:1].upper() + part[1:] for part in str(name).replace("-", "_").split("_"))
    return camel if camel.isidentifier() else "Answer"


def inferred(value: Any) -> dict[str, Any]:
    """A JSON schema of ``value``: every key required, no other key allowed (a prompted answer)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array", "items": inferred(value[0])} if value else {"type": "array"}
    if isinstance(value, dict):
        return {
            "type": "object", "properties": {key: inferred(item) for key, item in value.items()},
            "required": list(value), "additionalProperties": False,
        }  # fmt: skip
    return {"type": "null"}


SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
CONSTRAINTS = {
    "minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt",
    "minLength": "min_length", "maxLength": "max_length", "pattern": "pattern",
    "minItems": "min_length", "maxItems": "max_length",
}  # fmt: skip
IGNORED = frozenset({"title", "description", "default", "examples", "$schema", "format", "strict"})
"""Keywords that say nothing a value must satisfy here (``format`` is advisory in JSON Schema)."""


def model_of(schema: dict[str, Any], name: str, root: dict[str, Any] | None = None) -> type[BaseModel]:
    """A pydantic model accepting what ``schema`` (an object schema) accepts: properties, required,
    ``additionalProperties: false``, enums, bounds, lengths, patterns, arrays, nested objects,
    local ``$ref``, nullable ``anyOf``. Another keyword is :class:`UnsupportedSchema`."""
    root = root or schema
    schema = _resolve(schema, root)
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise UnsupportedSchema(f"{name}: the recorded schema is not an object with properties")
    _known(schema, {"type", "properties", "required", "additionalProperties", "$defs", "definitions"}, name)
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for key, sub in schema["properties"].items():
        if not key.isidentifier() or key.startswith("_"):
            raise UnsupportedSchema(f"{name}: property {key!r} is not a field name a type can hold")
        annotation = _annotation(sub, f"{name}{key.title().replace('_', '')}", root)
        extras = {"description": sub["description"]} if isinstance(sub.get("description"), str) else {}
        constraints = {CONSTRAINTS[k]: v for k, v in _resolve(sub, root).items() if k in CONSTRAINTS}
        default: Any = ... if key in required else sub.get("default")
        if key not in required and default is None:
            annotation = annotation | None
        fields[key] = (annotation, Field(default, **extras, **constraints))
    config = ConfigDict(extra="forbid") if schema.get("additionalProperties") is False else ConfigDict(extra="ignore")
    doc = schema.get("description")
    model = create_model(name, __config__=config, __doc__=doc, **fields)
    return cast(type[BaseModel], model)


def _annotation(schema: Any, name: str, root: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"{name}: a schema that is not an object")
    schema = _resolve(schema, root)
    if "enum" in schema:
        _known(schema, {"enum", "type", *CONSTRAINTS}, name)
        return Literal[tuple(schema["enum"])]
    if "const" in schema:
        return Literal[schema["const"]]
    if "anyOf" in schema:
        _known(schema, {"anyOf"}, name)
        options = [_annotation(option, name, root) for option in schema["anyOf"]]
        union = options[0]
        for option in options[1:]:
            union = union | option
        return union
    kind = schema.get("type")
    if isinstance(kind, list):
        union = _annotation({**schema, "type": kind[0]}, name, root)
        for other in kind[1:]:
            union = union | _annotation({**schema, "type": other}, name, root)
        return union
    if kind == "object":
        return model_of(schema, name, root) if "properties" in schema else dict[str, Any]
    if kind == "array":
        _known(schema, {"type", "items", "minItems", "maxItems"}, name)
        return list[_annotation(schema["items"], name + "Item", root)] if "items" in schema else list[Any]  # type: ignore[misc]
    if kind in SCALARS:
        _known(schema, {"type", *CONSTRAINTS}, name)
        return SCALARS[kind]
    raise UnsupportedSchema(f"{name}: schema {json.dumps(schema)[:80]} has no type this replay models")


def _known(schema: dict[str, Any], allowed: set[str], name: str) -> None:
    if unknown := sorted(set(schema) - allowed - IGNORED):
        raise UnsupportedSchema(f"{name}: schema keyword {unknown[0]!r} is not modelled")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    if not ref.startswith("#/"):
        raise UnsupportedSchema(f"reference {ref!r} is not local")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        raise UnsupportedSchema(f"reference {ref!r} names nothing")
    return node


class OnDrawnTasks(OnYourType):
    """A built-in adapter answering the drawn tasks (:func:`on_drawn`): its own cells and SDK
    calls, each scenario on the drawn task :meth:`drawn_for` names."""

    drawn: tuple[DrawnTask, ...]
    users_configuration: ClassVar[bool] = True
    """The type is the recording's, not the benchmark's: an SDK refusing it is ``raised``."""

    def typed_for(self, scenario: Scenario) -> DrawnTask:
        """The drawn task of ``scenario``: stable by its name, whatever else the run holds."""
        return self.drawn[zlib.crc32(scenario.name.encode()) % len(self.drawn)]

    def answers_for(self, scenario: Scenario) -> str:
        return f"drawn task {self.typed_for(scenario).name} of {self.type_reference}"

    def describe(self) -> dict[str, Any]:
        """For the manifest: the folder and each drawn task."""
        return {"reference": self.type_reference, "tasks": [task.describe() for task in self.drawn]}


def on_drawn(adapters: dict[str, Adapter], drawn: Drawn, folder: Path) -> dict[str, Adapter]:
    """Each built-in adapter again, built as the registry builds it, answering the drawn tasks."""
    if not drawn.tasks:
        raise ValueError(
            f"{folder}: no recorded structured answer (a JSON object: a tool call's arguments, a native or "
            "prompted answer) to draw a task from"
        )
    wrapped: dict[str, Adapter] = {}
    for name, adapter in adapters.items():
        instance = mixed_into(OnDrawnTasks, adapter)
        instance.drawn, instance.typed = drawn.tasks, drawn.tasks[0]  # typed: OnYourType's default
        instance.type_reference = f"cassettes:{folder.name}"
        wrapped[name] = instance
    return wrapped
