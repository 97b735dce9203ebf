"""Scenario files: what users write to script the fake model, validated with errors that name
the file, the entry and the field.

A file holds ``version`` and a list of ``scenarios``; each names a task and scripts one
behaviour per attempt (short forms welcome) or a stochastic mix. ``scenarios/scenario.schema.json``
is generated from these models (``bench scenarios schema``) so editors complete and check the
files; a test keeps it current.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.core.vocabulary import BehaviourKind, Mode, Outcome
from bench.scenarios.behaviours import MAX_SCRIPT_STEPS, Script, Steps, Stochastic, Then, field_path
from bench.scenarios.tasks import TASKS
from bench.tools import ToolPlan

SCHEMA_VERSION = 1
SCHEMA_FILE = "scenario.schema.json"
SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


SUITE_MEMBERS: dict[str, frozenset[str]] = {
    "default": frozenset({"default"}),
    "full": frozenset({"default", "full"}),
    "field": frozenset({"field"}),
}
"""The scenarios' ``suite`` values each ``--suite`` runs: ``full`` adds what is slow by nature to
the default suite; ``field`` is the catalogue of reported failures alone (neither of the
others holds it, so their matrices do not change with it)."""


class ScenarioError(Exception):
    """A scenario file is unreadable or invalid; the message names file, entry and field."""


class Source(BaseModel):
    """Where a field scenario comes from: the public report of the failure it reproduces."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tracker: str = Field(pattern=r"^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$")
    """The GitHub repository the report is filed in, ``owner/name``."""
    number: int = Field(ge=1)
    """The issue (or pull request) number in ``tracker``."""
    sdk: str
    """The SDK it was reported against, as the tracker names it (``pydantic-ai``,
    ``langchainjs``...); the five benchmarked SDKs run the scenario whichever it is."""
    release: str
    """The release reported against, as the thread states it (``0.1.35``), or how the thread
    dates it when it names none (``latest on 2025-08-07``)."""
    symptom: str
    """What the user saw, in one line."""
    fix: str | None = None
    """The change that addressed it, if any (``PR #5146``), as the tracker records it."""
    version: str | None = None
    """The release ``bench run --release SDK==VERSION`` measures as the reported one: the
    thread's own, or where it names none the release that was latest on the report's date
    (``release`` says which); never a later stand-in."""
    not_run: str | None = None
    """Why the reported release is not measured, in one line, when there is no ``version``: the
    adapter's supported releases start later, the report is on a JavaScript SDK..."""
    modes: list[Mode] = Field(default_factory=list)
    """The output modes the report is about (``tool`` for a ToolStrategy report, say): the
    verdicts count only those cells; every mode when empty."""
    failure: list[str] = Field(default_factory=list)
    """The outcomes the reported failure shows as (``raised``, ``runaway``), an outcome with the
    exception class the thread names (``raised:UnexpectedModelBehavior``): a cell ending so
    reproduces the report. Empty when no outcome tells the report's failure from its fix (the
    difference is in the next request, not in what the caller gets)."""

    @field_validator("failure")
    @classmethod
    def _known_outcomes(cls, value: list[str]) -> list[str]:
        known = {str(outcome) for outcome in Outcome}
        for entry in value:
            if entry.split(":", 1)[0] not in known:
                raise ValueError(f"unknown outcome {entry.split(':', 1)[0]!r}; known: {', '.join(sorted(known))}")
        return value

    @model_validator(mode="after")
    def _version_or_why_not(self) -> Source:
        if self.version is not None and self.not_run is not None:
            raise ValueError("give version (the reported release, measured) or not_run (why it is not), not both")
        return self

    def reproduced_by(self, outcome: str, exception_type: str | None) -> bool:
        """Whether a cell that ended in ``outcome`` (raising ``exception_type``) shows the failure."""
        short = (exception_type or "").rsplit(".", 1)[-1]
        return any(entry in (outcome, f"{outcome}:{short}") for entry in self.failure)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.tracker}/issues/{self.number}"

    @property
    def label(self) -> str:
        return f"{self.tracker}#{self.number}"


class Scenario(BaseModel):
    """One scripted misbehaviour of the model."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")
    """Unique across the loaded files; the ``scenario`` column."""
    task: str
    """A task from bench.scenarios.tasks: person, expense_report, ticket_triage, order_lookup."""
    description: str = ""
    fault: str | None = None
    """The ``fault`` column; defaults to the first non-valid behaviour's label."""
    script: Steps | None = None
    """One behaviour per attempt, in order (at most ``MAX_SCRIPT_STEPS``)."""
    then: Then = "repeat"
    """Attempts past the end of ``script``: repeat its last step, or this behaviour."""
    stochastic: Stochastic | None = None
    """Instead of ``script``: draw each attempt's behaviour from rates with a seed."""
    tool: ToolPlan | None = None
    """For a task with a tool (``order_lookup``): what the tool's upstream does on each call,
    e.g. ``{upstream: [timeout, ok]}``; every call succeeds when omitted."""
    suite: Literal["default", "full", "field"] = "default"
    """``full`` holds what is slow by nature (long backoffs, many reps); ``field`` the failures
    users reported (scenarios/field.yaml), each with its ``source``."""
    source: Source | None = None
    """The public report a ``field`` scenario reproduces (required there, and only there)."""
    tags: list[str] = Field(default_factory=list)

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in TASKS:
            raise ValueError(f"unknown task {value!r}; known tasks: {', '.join(sorted(TASKS))}")
        return value

    @field_validator("tool")
    @classmethod
    def _bounded_tool(cls, value: ToolPlan | None) -> ToolPlan | None:
        if value is not None and len(value.upstream) > MAX_SCRIPT_STEPS:
            raise ValueError(
                f"upstream has {len(value.upstream):,} steps; a tool plan may have at most {MAX_SCRIPT_STEPS:,}"
            )
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Scenario:
        if (self.script is None) == (self.stochastic is None):
            raise ValueError("give exactly one of 'script' (a list of behaviours) or 'stochastic'")
        if self.script is not None and not self.script:
            raise ValueError("'script' is empty; give at least one behaviour")
        if (self.suite == "field") != (self.source is not None):
            raise ValueError("a 'field' scenario needs its 'source', and only a 'field' scenario has one")
        if self.tool is not None and TASKS[self.task].tool_name is None:
            with_tools = ", ".join(sorted(name for name, task in TASKS.items() if task.tool_name))
            raise ValueError(f"'tool' needs a task with a tool ({with_tools}); task {self.task!r} has none")
        return self

    @property
    def fault_label(self) -> str:
        if self.fault:
            return self.fault
        if self.stochastic is not None:
            return "mix:" + ",".join(f"{k}={v:g}" for k, v in sorted(self.stochastic.rates.items()))
        assert self.script is not None
        for step in self.script:
            if step.kind != BehaviourKind.VALID:
                return step.label
        return "none"

    def build_script(self, unit_seed: int = 0) -> Script:
        """The provider's script for one cell: this scenario's own validated behaviours, handed
        over typed (``unit_seed`` pairs stochastic draws across SDKs)."""
        return Script(self.script, then=self.then, stochastic=self.stochastic, unit_seed=unit_seed)

    def script_spec(self) -> dict[str, Any]:
        """The script as plain data, as a scenario file writes it (the per-SDK tool tests drive it
        through ``LocalProvider.open_script``)."""
        data = self.model_dump(mode="json", include={"script", "then", "stochastic"})
        return {key: value for key, value in data.items() if value is not None}


class ScenarioFile(BaseModel):
    """The top level of a scenario YAML file."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    """Schema version of this file; bumped only with an additive migration."""
    scenarios: list[Scenario]

    @model_validator(mode="after")
    def _unique_names(self) -> ScenarioFile:
        seen: set[str] = set()
        for scenario in self.scenarios:
            if scenario.name in seen:
                raise ValueError(f"scenario name {scenario.name!r} is used twice")
            seen.add(scenario.name)
        return self


MAX_FILE_BYTES = 1 << 20
"""A scenario file larger than this (1 MiB, thousands of scenarios) is refused before parsing:
validating a 20 MB file took 110 s and 2.3 GB."""


_LOADED: dict[str, tuple[Scenario, ...]] = {}
"""The scenarios of each file text validated in this process: every plan reads the library again
(six files, about 0.1 s of CPU in PyYAML's pure-Python parser), and a process that plans many
runs (a test session, a notebook) parses each text once. Keyed by the text itself, so an edited
file is parsed again; a file that fails is never kept."""
LOADED_MAX = 64


def load_file(path: Path) -> list[Scenario]:
    """Load and validate one file; raises :class:`ScenarioError` naming file, entry, field."""
    try:
        if (size := path.stat().st_size) > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: {size:,} bytes; a scenario file may have at most {MAX_FILE_BYTES:,}")
        text = path.read_text(encoding="utf-8")
        if (known := _LOADED.get(text)) is not None:
            return list(known)
        raw = yaml.safe_load(text)
    except RecursionError:
        raise ScenarioError(f"{path}: nested too deeply to be a scenario file") from None
    except OSError as error:
        raise ScenarioError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ScenarioError(f"{path}:{where}: invalid YAML: {problem}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: expected a mapping with 'version' and 'scenarios', got {type(raw).__name__}")
    try:
        scenarios = ScenarioFile.model_validate(raw).scenarios
    except RecursionError:
        raise ScenarioError(f"{path}: nested too deeply to be a scenario file") from None
    except ValidationError as error:
        raise ScenarioError(describe_validation_error(path, raw, error)) from None
    if len(_LOADED) >= LOADED_MAX:
        _LOADED.clear()
    _LOADED[text] = tuple(scenarios)
    return scenarios


def describe_validation_error(path: Path, raw: dict[str, Any], error: ValidationError) -> str:
    """One line per problem: ``file: entry 'name' (scenarios[2]), field script[0].variant: msg``."""
    lines = []
    for problem in error.errors(include_url=False):
        location = list(problem["loc"])
        entry = ""
        if len(location) >= 2 and location[0] == "scenarios" and isinstance(location[1], int):
            index = location[1]
            entries = raw.get("scenarios") or []
            name = entries[index].get("name") if index < len(entries) and isinstance(entries[index], dict) else None
            entry = f"entry {name!r} (scenarios[{index}])" if name else f"entry scenarios[{index}]"
            location = location[2:]
        field = field_path(location)
        message = problem["msg"].removeprefix("Value error, ")
        parts = [part for part in (entry, f"field {field}" if field else "") if part]
        lines.append(f"{path}: {', '.join(parts) + ': ' if parts else ''}{message}")
    return "\n".join(lines)


def load_paths(paths: list[Path]) -> list[Scenario]:
    """Scenarios from files and folders (``*.yaml``/``*.yml``), names unique across them.

    Every file is read even after one fails, so the :class:`ScenarioError` lists every problem
    in every file (one line each), not just the first."""
    scenarios: list[Scenario] = []
    origin: dict[str, Path] = {}
    problems: list[str] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*.y*ml")) if path.is_dir() else [path]
        if path.is_dir() and not files:
            problems.append(f"{path}: no scenario files (*.yaml) in this folder")
        elif not path.exists():
            problems.append(f"{path}: no such file or folder")
        for file in files if path.exists() else []:
            try:
                loaded = load_file(file)
            except ScenarioError as error:
                problems.append(str(error))
                continue
            for scenario in loaded:
                if scenario.name in origin:
                    problems.append(f"{file}: entry {scenario.name!r}: name already used in {origin[scenario.name]}")
                    continue
                origin[scenario.name] = file
                scenarios.append(scenario)
    if problems:
        raise ScenarioError("\n".join(problems))
    return scenarios


def default_scenarios() -> list[Scenario]:
    """The scenario library shipped in ``scenarios/``."""
    return load_paths([SCENARIO_DIR])


def json_schema() -> dict[str, Any]:
    schema = ScenarioFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "misfit-bench scenario file"
    return schema


def write_json_schema(directory: Path = SCENARIO_DIR) -> Path:
    target = directory / SCHEMA_FILE
    target.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    return target
