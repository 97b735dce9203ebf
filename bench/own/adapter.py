"""A user's agent as an adapter: one cell (the user's own configuration), the user's derived task
for every scenario, and the runner's ordinary path for the rest (provider, ledger, classify).

:func:`load_agents` turns ``--agent`` values and ``[[tool.bench.agents]]`` entries into adapters;
every way a reference can be bad ends in :class:`OwnAgentError` (one line, exit 2) before
anything is written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
from pathlib import Path
from typing import Any, ClassVar

from bench.core import interrupts
from bench.core.environ import environment_set
from bench.core.names import message_of
from bench.core.vocabulary import ModeSupport, Protocol
from bench.own.binding import PLACEHOLDER, Binding, ModelHandle, binding_class, known_agents, passed_handle_message
from bench.own.config import AgentEntry, OwnAgentError, ToolOptIn, read_example, resolve, select
from bench.own.derive import DerivedTask, OutputType, derive_task
from bench.own.tools import (
    DerivedTool,
    OwnToolTask,
    derived_for_tool,
    derived_unknown,
    opted_in_call,
    valid_arguments,
)
from bench.scenarios.behaviours import SchemaViolation, ToolCall, Valid, Wrong
from bench.scenarios.files import Scenario
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import LOCAL_API_KEY, Adapter, AdapterResult, Cell, Endpoint
from bench.tools import own as own_tools
from bench.tools.own import OwnToolLog

VARIANT = "own"
"""The variant column of a user's agent: their own configuration, whatever it is."""

PLACEHOLDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Set to :data:`bench.sdk.adapter.LOCAL_API_KEY` (only when unset) while the user's agent is loaded,
and unset again afterwards: an SDK that checks for a key when an agent is built at import time
(pydantic-ai's ``Agent('openai:...')``) can then be imported in CI without secrets. No request
ever goes to a real provider: the bindings replace the model."""


class OwnAgentAdapter(Adapter):
    """One user agent: its binding, its derived task and its single cell."""

    name: ClassVar[str] = "own"
    distribution: ClassVar[str] = ""

    def __init__(self, entry: AgentEntry, binding: Binding, task: DerivedTask) -> None:
        self.entry = entry
        self.binding = binding
        self.task = task
        self.tool_scenarios: dict[str, DerivedTool] = {}
        """The scenarios derived from the user's tools, by name (see :func:`tool_scenarios`)."""
        self.distribution = binding.distribution  # type: ignore[misc]
        self.time_limit_s = binding.time_limit_s  # type: ignore[misc]
        self.max_concurrency = binding.max_concurrency  # type: ignore[misc]

    def cells(self) -> list[Cell]:
        return [
            Cell(
                sdk=self.binding.sdk,
                mode=self.binding.mode(),
                variant=VARIANT,
                protocol=self.binding.protocol,
                stream=False,
                mode_support=ModeSupport.BUILTIN,
                note=self.binding.note(),
                agent=self.entry.name,
            )
        ]

    def describe(self) -> dict[str, Any]:
        """For the manifest: what the agent is and what it was sent (derived answers included)."""
        return {
            "sdk": self.binding.sdk,
            "reference": self.entry.agent,
            "protocol": str(self.binding.protocol),
            "valid": dict(self.task.reference),
            "wrong": dict(self.task.wrong) if self.task.has_wrong else None,
            "violations": {variant: dict(value) for variant, value in self.task.violations.items()},
            "not_measured": dict(self.task.not_measured),
            "tools": self.tools_summary(),
        }

    def tools_summary(self) -> dict[str, list[str]]:
        """The tool scenarios derived per tool (the unknown-tool one under its invented name)."""
        summary: dict[str, list[str]] = {}
        for name, derived in self.tool_scenarios.items():
            summary.setdefault(derived.plan.tool, []).append(name)
        return summary

    def scenarios(self, scenarios: list[Scenario]) -> list[Scenario]:
        """The loaded scenarios with the harness-tool ones (they script ``lookup_order``, a tool
        the user's agent does not have) replaced by those derived from the user's own tools;
        an opted-in tool's valid call is added whatever was loaded."""
        harness = [s for s in scenarios if _scripts_harness_tool(s)]
        kept = [s for s in scenarios if not _scripts_harness_tool(s)]
        derived = [d.scenario for d in self.tool_scenarios.values() if harness or _valid_call(d.scenario)]
        return [*kept, *derived]

    def answers_for(self, scenario: Scenario) -> str:
        derived = self.tool_scenarios.get(scenario.name)
        tool = "" if derived is None else f", its tool {derived.plan.tool}"
        return f"agent {self.entry.name}'s type{tool}"

    def task_for(self, scenario: Scenario) -> Task:
        """The derived task; in a tool scenario, with the plan of the user's tool (the runner
        gives each run a fresh log and summarises it in the tool columns)."""
        derived = self.tool_scenarios.get(scenario.name)
        if derived is None:
            return self.task
        fields = {f.name: getattr(self.task, f.name) for f in dataclasses.fields(self.task) if f.init}
        return OwnToolTask(**{**fields, "tool_name": derived.plan.tool, "tool_plan": derived.plan})

    def tool_support(self, cell: Cell) -> str | None:
        """An SDK whose structured call never reaches a tool records its tool cells with why."""
        return self.binding.tool_gap

    def scenario_gap(self, cell: Cell, scenario: Scenario) -> str | None:
        """A behaviour the user's task has no answer for is "not applicable", never guessed."""
        if _scripts_harness_tool(scenario):
            return "not applicable: a tool scenario scripts the harness tool; the agent's own tools are never called"
        opted_in = scenario.name in self.tool_scenarios
        for behaviour in _behaviours(scenario):
            if (isinstance(behaviour, ToolCall) and not opted_in) or (
                isinstance(behaviour, Valid | Wrong) and behaviour.value is not None
            ):
                return "not applicable: the scenario scripts a built-in task's own objects or tools"
            if (gap := self._gap(behaviour)) is not None:
                return f"not applicable: {gap[0]} {gap[1]}"
        return None

    def not_measured(self, scenario: Scenario) -> tuple[str, str] | None:
        """The fault family of ``scenario`` no answer could be derived for, with the reason
        (:attr:`DerivedTask.not_measured`); None when the scenario is measured or is "not
        applicable" for another reason. ``bench run`` counts these cells aloud."""
        if get_task(scenario.task).tool_name is not None or scenario.tool is not None:
            return None
        gaps = (self._gap(behaviour) for behaviour in _behaviours(scenario))
        return next((gap for gap in gaps if gap is not None), None)

    def _gap(self, behaviour: Any) -> tuple[str, str] | None:
        family = _family(behaviour)
        reason = None if family is None else self.task.not_measured.get(family)
        return None if family is None or reason is None else (family, reason)

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """One call of the user's agent; in a tool scenario, their tools log to the run's own log
        (bench.tools.own). What the user's code raises past their SDK is what
        reached their caller, whatever its class: ``SystemExit`` from a validator, a
        ``KeyboardInterrupt`` or another ``BaseException`` it raised itself is the cell's
        ``raised`` (recorded with its class), never the end of the run. A cancellation (the
        runner's time limit or call cap) and an interrupt of the user's (a signal,
        :func:`bench.core.interrupts.by_user`) still stop the cell and the run."""
        log = task.tool if isinstance(task.tool, OwnToolLog) else None
        try:
            with own_tools.active(log):
                result = await self.binding.run(endpoint, self.task.output_type.python_type or self.task.schema)
        except (asyncio.CancelledError, GeneratorExit, Exception):
            raise  # a binding's own failure stays a harness error; the bindings record the SDK's Exceptions
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt) and interrupts.by_user():
                raise
            result = AdapterResult(exception=error)
        result.planned_calls += getattr(task, "planned_calls", 0)
        return result


def _valid_call(scenario: Scenario) -> bool:
    """An opted-in tool's valid call (``own_tool_<tool>_then_valid``)."""
    return (scenario.fault or "").startswith("tool_call:")


def _scripts_harness_tool(scenario: Scenario) -> bool:
    return get_task(scenario.task).tool_name is not None or scenario.tool is not None


def _family(behaviour: Any) -> str | None:
    """The derived fault family a behaviour needs: ``wrong``, ``schema_violation:<variant>``."""
    if isinstance(behaviour, Wrong) and behaviour.value is None:
        return "wrong"
    if isinstance(behaviour, SchemaViolation):
        return f"schema_violation:{behaviour.variant}"
    return None


def _behaviours(scenario: Scenario) -> list[Any]:
    from bench.scenarios.behaviours import Slow, parse_behaviour

    steps: list[Any] = list(scenario.script or [])
    if scenario.then != "repeat":
        steps.append(scenario.then)
    if scenario.stochastic is not None:
        steps.extend(parse_behaviour(key) for key in scenario.stochastic.rates)
    return [step.answer if isinstance(step, Slow) else step for step in steps]


def load_agents(requested: list[str], project: Path | None = None) -> dict[str, OwnAgentAdapter]:
    """Adapters for the requested agents (all declared ones when none is named), by agent name."""
    project = project or Path.cwd()
    entries = select(requested, project)
    if not entries:
        raise OwnAgentError(
            f"no agent given: pass --agent module:attr or declare [[tool.bench.agents]] in {project / 'pyproject.toml'}"
        )
    adapters = {}
    for entry in entries:
        if entry.name in adapters:
            raise OwnAgentError(f"agent name {entry.name!r} is given twice")
        adapters[entry.name] = load_agent(entry, project)
    return adapters


def load_agent(entry: AgentEntry, project: Path) -> OwnAgentAdapter:
    """The adapter for one entry; the user's modules (agent, run_kwargs, output, check, fakes)
    are imported with :data:`PLACEHOLDER_KEYS` set where unset."""
    unset = {key: LOCAL_API_KEY for key in PLACEHOLDER_KEYS if key not in os.environ}
    with environment_set(unset):
        return _load_agent(entry, project)


def _load_agent(entry: AgentEntry, project: Path) -> OwnAgentAdapter:
    target = resolve(entry.agent, project)
    binding = bind(entry, target)
    binding.prompt = entry.prompt
    if entry.run_kwargs is not None:
        kwargs = resolve(entry.run_kwargs, project, "run_kwargs")
        if not isinstance(kwargs, dict):
            raise OwnAgentError(
                f"agent {entry.name!r}, field run_kwargs: {entry.run_kwargs} is a {type(kwargs).__name__}, not a dict"
            )
        binding.run_kwargs = kwargs
    declared = resolve(entry.output, project, "output") if entry.output else binding.output()
    if declared is None:
        raise OwnAgentError(
            f"agent {entry.name!r}: {binding.sdk} takes the output type at call time or binds it out of reach; "
            "name it with output = 'module:Type' in [[tool.bench.agents]]"
        )
    check = resolve(entry.check, project, "check") if entry.check else None
    if check is not None and not callable(check):
        raise OwnAgentError(f"agent {entry.name!r}, field check: {entry.check} is not callable")
    task = derive_task(entry.name, OutputType.of(declared), entry.prompt, read_example(entry, project), check)
    adapter = OwnAgentAdapter(entry, binding, task)
    adapter.tool_scenarios = tool_scenarios(entry, binding, project)
    return adapter


def tool_scenarios(entry: AgentEntry, binding: Binding, project: Path) -> dict[str, DerivedTool]:
    """The scenarios derived from the user's own registered tools (bench.own.tools), with each
    opted-in tool's valid call (its fake swapped in, if they gave one), by scenario name."""
    listed = binding.tool_schemas()
    opted = {name: _opted_in(entry, binding, project, name, opt_in) for name, opt_in in entry.tools.items()}
    derived: dict[str, DerivedTool] = {}
    for name in dict.fromkeys([*listed, *opted]):
        if name in opted:
            schema, args = opted[name]
            found = opted_in_call(name, schema, args)
            derived[found.scenario.name] = found
            derived.update((found.scenario.name, found) for found in derived_for_tool(name, schema, args))
        else:
            schema = listed[name]
            derived.update((d.scenario.name, d) for d in derived_for_tool(name, schema, valid_arguments(schema)))
    found = derived_unknown([*listed, *opted])
    derived[found.scenario.name] = found
    return derived


def _opted_in(
    entry: AgentEntry, binding: Binding, project: Path, name: str, opt_in: ToolOptIn
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The tool's parameter schema (None where the SDK cannot show it) and the arguments of the
    valid call: the user's, or generated from the schema. Every problem names entry and field."""
    where = f"agent {entry.name!r}, field tools.{name}"
    try:
        schema = binding.tool_schema(name)
    except OwnAgentError as error:
        raise OwnAgentError(f"{where}: {error}") from None
    if opt_in.fake is not None:
        fake = resolve(opt_in.fake, project, "fake")
        try:
            binding.fake(name, fake)
        except OwnAgentError as error:
            raise OwnAgentError(f"{where}: fake {opt_in.fake}: {error}") from None
    if opt_in.args is not None:
        return schema, opt_in.args
    args = valid_arguments(schema)
    if args is None:
        raise OwnAgentError(f"{where}: give args = {{...}}: no arguments can be generated for this tool")
    return schema, args


def bind(entry: AgentEntry, target: Any) -> Binding:
    """The binding for the object, or for what the factory returns: called with a handle, or
    with nothing when it takes no argument (``def make(): return Agent(...)``), whose agent is
    then driven as an object (refused, naming the handle, for an SDK that needs one)."""
    cls = binding_class(target)
    if cls is not None:
        return cls(target, None, cls.protocol_of(target, entry.protocol))
    if callable(target) and not inspect.isclass(target):
        protocol = entry.protocol or Protocol.CHAT
        takes_handle = _takes_an_argument(target)
        built = _call_factory(entry, target, ModelHandle(PLACEHOLDER, protocol) if takes_handle else None)
        cls = binding_class(built)
        if cls is not None and not takes_handle:
            return cls(built, None, cls.protocol_of(built, entry.protocol))
        if cls is not None:
            binding = cls(built, target, protocol)
            if (where := binding.passed_handle()) is not None:
                raise OwnAgentError(f"agent {entry.agent!r}: " + passed_handle_message(where))
            return binding
        target = built
    kind = f"{type(target).__module__}.{type(target).__qualname__}"
    raise OwnAgentError(f"agent {entry.agent!r}: cannot drive a {kind}; known: {known_agents()}")


def _takes_an_argument(factory: Any) -> bool:
    """Whether ``factory`` can be called with the handle (one positional argument); a callable
    whose signature cannot be read is given it."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def _call_factory(entry: AgentEntry, factory: Any, handle: ModelHandle | None) -> Any:
    """What the factory returns for the load check; whatever it raises (``SystemExit`` too) is
    one line. A ``KeyboardInterrupt`` here is taken as the user's Ctrl-C: nothing runs yet."""
    try:
        return factory() if handle is None else factory(handle)
    except (OwnAgentError, KeyboardInterrupt):
        raise
    except BaseException as error:
        said = f"{type(error).__name__}: {message_of(error)}"
        raise OwnAgentError(f"agent {entry.agent!r}: the factory raised {said}") from None


WORKER_AGENT = "MISFIT_BENCH_OWN_AGENT"
"""The environment variable a release worker reads its user's agent from (JSON: ``project`` and
the ``entry``): set by the parent, which loaded the same entry first, so a bad reference is one
line there before any worker starts."""

WORKER_TARGET = "bench.own.adapter:from_worker_environment"
"""What a release worker loads (:mod:`bench.releases.worker`) to run a user's agent there."""

WORKER_REQUIREMENTS = ("pyyaml", "jsonschema", "polyfactory>=3.5")
"""What :mod:`bench.own` itself imports beyond pydantic (derive builds answers with polyfactory):
installed into a release environment beside the user's own dependencies (within the release's pins)."""


def worker_variables(adapter: OwnAgentAdapter, project: Path) -> tuple[tuple[str, str], ...]:
    """The variables that make a release worker load ``adapter``'s agent from ``project``."""
    from bench.sdk import registry

    payload = {"project": str(project.resolve()), "entry": adapter.entry.model_dump(mode="json")}
    return (WORKER_AGENT, json.dumps(payload)), (registry.INHERITED, registry.inherited_registrations())


def from_worker_environment() -> OwnAgentAdapter:
    """In a release worker: the user's agent, loaded through its binding from the project the
    parent named (:data:`WORKER_AGENT`), against the release installed there."""
    payload = json.loads(os.environ[WORKER_AGENT])
    return load_agent(AgentEntry.model_validate(payload["entry"]), Path(payload["project"]))


PROBE_TIMEOUT_S = 600.0
"""A backstop for the probe's cold imports on a loaded machine; a stall, not slowness."""


def check_in_environment(adapter: OwnAgentAdapter, python: Path, project: Path, environment: str) -> None:
    """Load ``adapter``'s agent once in a release environment's interpreter, as its workers will
    (:func:`from_worker_environment`), before any cell is planned there: the user's module may
    import a package the environment lacks (an SDK the release does not bring). That is the
    user's, said in one line naming the module, the missing package and the environment, with how
    to add a package to it (:class:`OwnAgentError`, exit 2), never a worker that fails to start
    and a row of harness errors."""
    import subprocess

    root = project.resolve()
    paths = [str(Path(__file__).resolve().parents[2]), *(str(p) for p in (root, root / "src") if p.is_dir())]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env |= {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), **dict(worker_variables(adapter, root))}
    try:
        done = subprocess.run(
            [str(python), "-c", "from bench.own.adapter import probe_worker_environment as p; p()"],
            env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise OwnAgentError(
            f"agent {adapter.entry.name!r} in {environment}: loading it did not finish in {PROBE_TIMEOUT_S:.0f} s"
        ) from None
    if done.returncode == 0:
        return
    lines = done.stdout.strip().splitlines()
    reason = lines[-1] if lines else (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    raise OwnAgentError(f"{reason} in the environment of {environment}; {_install_hint(reason, project)}")


def _install_hint(reason: str, project: Path) -> str:
    """How to add a package to a release environment: the project's declared dependencies,
    which each release environment installs beside the release."""
    import re
    from importlib.metadata import packages_distributions

    missing = re.search(r"[Nn]o module named '([^']+)'", reason)
    where = f"[project].dependencies of {project / 'pyproject.toml'} (or its requirements.txt)"
    if missing is None:
        return f"a release environment installs the release and {where}"
    module = missing[1]
    package = (packages_distributions().get(module.split(".")[0]) or [module.split(".")[0]])[0]
    return (
        f"the package {package} (module {module}) is not installed there: add it to {where}, "
        "which a release environment installs beside the release"
    )


def probe_worker_environment() -> None:
    """The probe's body, in the release environment: exit 0 when the agent loads, else the
    one-line reason on stdout and exit 1."""
    import sys

    try:
        from_worker_environment()
    except OwnAgentError as error:
        print(str(error))
        sys.exit(1)
    except Exception as error:
        print(f"agent {json.loads(os.environ[WORKER_AGENT])['entry']['name']!r}: {type(error).__name__}: {error}")
        sys.exit(1)
