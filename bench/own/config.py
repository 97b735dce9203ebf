"""``[[tool.bench.agents]]`` in the user's ``pyproject.toml``, and ``module:attr`` references.

A user names their agent once, in their own project's pyproject (or with ``--agent`` on the
command line): the reference, and optionally an example answer, a ``check`` callable that says
what *correct* means, the prompt, the output type where the SDK takes it at call time, and the
tools they allow the scripted model to call. Every problem is one line naming the file, the entry
and the field (exit 2 at the CLI).
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.core.names import message_of
from bench.core.suggest import did_you_mean
from bench.core.vocabulary import Protocol


class OwnAgentError(Exception):
    """A user's agent cannot be loaded or driven: one line, exit code 2, nothing written."""


class ToolOptIn(BaseModel):
    """One of the user's tools the scripted model may call (all others it never calls)."""

    model_config = ConfigDict(extra="forbid")

    args: dict[str, Any] | None = None
    """Arguments for the valid call; generated from the tool's parameter schema when omitted."""
    fake: str | None = None
    """``module:attr`` of a stand-in implementation to call instead of the real tool."""


class AgentEntry(BaseModel):
    """One ``[[tool.bench.agents]]`` table."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """The ``agent`` column; also what ``--agent NAME`` selects."""
    agent: str
    """``module:attr``: the agent object, or a factory taking the harness's model handle."""
    prompt: str = "Answer the request with the structured output."
    """The user message each cell sends."""
    example: str | None = None
    """A JSON file with a correct answer (relative to the pyproject); also the reference that
    ``wrong`` is judged against field by field when there is no ``check``."""
    check: str | None = None
    """``module:attr`` of ``check(output) -> str | None``: the reason an answer is wrong, or None."""
    output: str | None = None
    """``module:attr`` of the output type, for SDKs that take it at call time (agentmaker's
    ``output_schema``) or bind it out of reach (a LangChain graph)."""
    protocol: Protocol | None = None
    """For a factory: which wire protocol the model handle speaks (default openai-chat;
    anthropic-messages for Claude). An agent object's own model decides otherwise."""
    run_kwargs: str | None = None
    """``module:attr`` of a dict of keyword arguments your code passes to the SDK's run call
    (openai-agents ``error_handlers``, ``max_turns``, ``hooks``; pydantic-ai ``usage_limits``)."""
    tools: dict[str, ToolOptIn] = Field(default_factory=dict)
    """Tools the scripted model may call, by name; every other tool is never called."""


class BenchAgents(BaseModel):
    model_config = ConfigDict(extra="allow")

    agents: list[AgentEntry] = Field(default_factory=list)


def load_entries(project: Path) -> list[AgentEntry]:
    """The agents declared in ``project/pyproject.toml`` (none when there is no such file)."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise OwnAgentError(f"{path}: cannot read: {error}") from None
    raw = data.get("tool", {}).get("bench", {}).get("agents", [])
    if not isinstance(raw, list):
        raise OwnAgentError(f"{path}: [tool.bench] agents: expected [[tool.bench.agents]] tables")
    entries = []
    for index, item in enumerate(raw):
        try:
            entries.append(AgentEntry.model_validate(item))
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            name = item.get("name") if isinstance(item, dict) else None
            entry = f"entry {name!r}" if name else f"agents[{index}]"
            hint = _hint(first["type"], first["loc"])
            raise OwnAgentError(f"{path}: [[tool.bench.agents]] {entry}, field {where}: {first['msg']}{hint}") from None
    names = [entry.name for entry in entries]
    if duplicate := next((n for n in names if names.count(n) > 1), None):
        raise OwnAgentError(f"{path}: [[tool.bench.agents]] name {duplicate!r} is used twice")
    return entries


def _hint(kind: str, location: tuple[str | int, ...]) -> str:
    """ "Did you mean" for a misspelled field of an entry (``retry`` for ...) or of a tool opt-in
    (``tools.lookup.arg``); nothing for other errors."""
    if kind != "extra_forbidden" or not location:
        return ""
    known = ToolOptIn.model_fields if location[0] == "tools" else AgentEntry.model_fields
    return did_you_mean(str(location[-1]), known)


def select(requested: list[str], project: Path) -> list[AgentEntry]:
    """``--agent`` values: a ``[[tool.bench.agents]]`` name, or a ``module:attr`` reference (with
    the options of the entry that names the same reference, if any). None given: every entry."""
    entries = load_entries(project)
    if not requested:
        return entries
    by_name = {entry.name: entry for entry in entries}
    by_reference = {entry.agent: entry for entry in entries}
    chosen = []
    for value in requested:
        if value in by_name:
            chosen.append(by_name[value])
        elif value in by_reference:
            chosen.append(by_reference[value])
        elif ":" in value:
            chosen.append(_entry_for(value))
        else:
            known = ", ".join(by_name) or "none declared"
            raise OwnAgentError(
                f"--agent {value!r}: expected module:attr or a [[tool.bench.agents]] name (known: {known})"
            )
    return chosen


def _entry_for(reference: str) -> AgentEntry:
    """The entry of an ``--agent module:attr`` that no ``[[tool.bench.agents]]`` entry names."""
    name = _name_of(reference)
    try:
        return AgentEntry(name=name, agent=reference)
    except ValidationError:
        raise OwnAgentError(
            f"--agent {reference!r}: {name!r} is not an agent name (letters, digits, '_', '.', '-', starting with a "
            "letter or digit); declare it in [[tool.bench.agents]] with name = '...'"
        ) from None


def _name_of(reference: str) -> str:
    """A reference's default agent name: its attribute, without leading underscores
    (``myapp.agents:support`` -> ``support``, ``myapp:_support`` -> ``support``)."""
    attribute = reference.rpartition(":")[2]
    return attribute.lstrip("_").replace("_", "-") or attribute


def resolve(reference: str, project: Path, what: str = "agent") -> Any:
    """Import ``module:attr`` with the project on ``sys.path`` (as ``python -m`` from it would)."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise OwnAgentError(f"{what} {reference!r}: expected module:attr, e.g. myapp.agents:support")
    root = str(project.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    module = _import_bounded(module_name, f"{what} {reference!r}")
    if isinstance(module, ModuleNotFoundError) and module.name and module_name.startswith(module.name):
        raise OwnAgentError(f"{what} {reference!r}: no module named {module.name!r} (searched from {root})")
    if isinstance(module, ImportError):
        raise OwnAgentError(f"{what} {reference!r}: importing {module_name} failed: {message_of(module)}")
    if isinstance(module, BaseException):  # SystemExit at import too: the module's, never the run's exit code
        raise OwnAgentError(
            f"{what} {reference!r}: importing {module_name} raised {type(module).__name__}: {message_of(module)}"
        )
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise OwnAgentError(f"{what} {reference!r}: module {module_name} has no attribute {attribute!r}")
        value = getattr(value, part)
    return value


IMPORT_TIME_LIMIT_S = 120.0
"""How long importing a user's module may take (an SDK's own imports included, on a loaded CI
machine); a module that waits at import (for a server, for input) is then one line, exit 2."""


def _import_bounded(module_name: str, where: str) -> Any:
    """``importlib.import_module`` in a thread of its own, waited on for :data:`IMPORT_TIME_LIMIT_S`.

    Returns the module, or what importing it raised: ``SystemExit`` and ``KeyboardInterrupt``
    included, all the module's own (a Ctrl-C of the user's reaches the main thread, waiting
    here, and interrupts as ever). A module that never finishes is left in its daemon thread,
    and named in one line.
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(importlib.import_module(module_name))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, name=f"import {module_name}", daemon=True)
    thread.start()
    thread.join(IMPORT_TIME_LIMIT_S)
    if not outcome:
        raise OwnAgentError(
            f"{where}: importing {module_name} did not finish within {IMPORT_TIME_LIMIT_S:g} s "
            "(does it wait at import, for a server or for input?)"
        )
    return outcome[0]


def read_example(entry: AgentEntry, project: Path) -> dict[str, Any] | None:
    """The example answer file as a JSON object, or None when the entry names none."""
    if entry.example is None:
        return None
    path = project / entry.example
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise OwnAgentError(f"agent {entry.name!r}, field example: cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise OwnAgentError(f"agent {entry.name!r}, field example: {path} is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise OwnAgentError(
            f"agent {entry.name!r}, field example: {path} holds a {type(value).__name__}, not an object"
        )
    return value


def project_requirements(project: Path) -> list[str]:
    """The user's project's own dependencies, as a release environment installs them beside the
    release (``bench run --agent NAME --release SDK==V``): ``[project].dependencies`` of its
    pyproject.toml, then the lines of its requirements.txt (comments, options and editable lines
    left out). A file that does not parse is one line naming it."""
    found: list[str] = []
    path = project / "pyproject.toml"
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise OwnAgentError(f"{path}: not valid TOML: {error}") from None
        dependencies = data.get("project", {}).get("dependencies", [])
        if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
            raise OwnAgentError(f"{path}: [project].dependencies: expected a list of requirement strings")
        found.extend(dependencies)
    requirements = project / "requirements.txt"
    if requirements.is_file():
        for line in requirements.read_text(encoding="utf-8").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-")):
                found.append(line)
    return list(dict.fromkeys(found))
