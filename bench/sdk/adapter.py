"""The one seam every SDK plugs into.

An adapter declares which cells it can build (mode x protocol x variant) and runs one cell: it
builds the SDK's agent the way a user would, points it at the local provider, calls it once, and
reports what the SDK handed back, what it raised and what usage it reported. It never parses,
retries or reclassifies on the SDK's behalf: the runner does the classifying, from this report
and the provider's ledger.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, final

from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.results.labels import adapter_name
from bench.scenarios.tasks import Task, get_task

if TYPE_CHECKING:  # bench.scenarios.files needs PyYAML, which a release environment's worker lacks
    from bench.scenarios.files import Scenario

LOCAL_API_KEY = "sk-misfit-bench-local"
"""A key-shaped placeholder: SDKs refuse to start without one, and the provider ignores it."""

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-sonnet-4-6"
"""Current (not deprecated) as of the pinned anthropic client; a deprecated name makes the
client warn, and warnings are errors in the test run."""


@dataclass(frozen=True)
class Endpoint:
    """Where one cell's requests go: a run-scoped URL prefix on the local provider."""

    root: str
    """e.g. ``http://127.0.0.1:41234/runs/<run_id>``; the provider routes by this prefix."""

    @property
    def openai_base_url(self) -> str:
        return f"{self.root}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.root

    api_key: str = LOCAL_API_KEY
    openai_model: str = OPENAI_MODEL
    anthropic_model: str = ANTHROPIC_MODEL


@dataclass(frozen=True)
class Cell:
    """One configuration an adapter can run: the unit the runner expands over scenarios."""

    sdk: str
    mode: Mode
    variant: Variant | str
    """A :class:`Variant` for the built-in adapters; a plugin may name its own."""
    protocol: Protocol
    stream: bool
    mode_support: ModeSupport
    note: str = ""
    """Why the cell is built this way (or why it is unsupported), shown in reports."""
    agent: str = ""
    """The user's agent this cell drives (``bench run --agent``); empty for a built-in adapter."""

    @property
    def key(self) -> str:
        """The adapter that runs this cell: the user's agent by its name, else the SDK."""
        return adapter_name(self.agent, self.sdk)


CellKey = tuple[Mode, Protocol, Variant | str]
"""Where a cell sits in an adapter's grid: (mode, protocol, variant)."""


@dataclass(frozen=True)
class Support:
    """One entry of an adapter's support table: how the cell is built, or why it cannot be."""

    level: ModeSupport
    note: str
    """The SDK declaration the cell uses (with source references), or the reason it is
    unsupported; shown in reports and in ``bench list``."""

    @classmethod
    def builtin(cls, note: str) -> Support:
        """The SDK declares this mode itself."""
        return cls(ModeSupport.BUILTIN, note)

    @classmethod
    def composed(cls, note: str) -> Support:
        """Built from documented SDK parts that together give the mode."""
        return cls(ModeSupport.COMPOSED, note)

    @classmethod
    def unsupported(cls, note: str) -> Support:
        """Listed, never run: the note says what the SDK lacks."""
        return cls(ModeSupport.UNSUPPORTED, note)


SupportTable = Mapping[CellKey, Support]
"""An adapter's cells in listing order: (mode, protocol, variant) -> :class:`Support`."""

MODES: tuple[Mode, ...] = tuple(Mode)
PROTOCOLS: tuple[Protocol, ...] = tuple(Protocol)
VARIANTS: tuple[Variant, ...] = (Variant.DEFAULT, Variant.HARDENED, Variant.STREAM)
"""The axes the built-in adapters' grids share, in listing order. An adapter with a variant of its
own lists it next to these (LangChain's ``auto``, agentmaker's ``json_object``); openai-agents
lists native before tool."""

Rule = Callable[[Mode, Protocol, Variant | str], Support | None]
"""How one grid cell is built, or why it cannot be; None: the grid point is not a cell of the table
(a variant that exists for one mode only; a gap listed once, under the default variant)."""


class SupportGrid(Mapping[CellKey, Support]):
    """A support table built by :func:`grid`: read-only (the table is a class variable every
    instance shares), and it keeps the axes and the rule it was built from, so that its (mode,
    protocol, variant) order can be checked against them (tests/sdk/test_adapter_support_tables.py)."""

    def __init__(self, axes: tuple[tuple[Mode, ...], tuple[Protocol, ...], tuple[Variant | str, ...]], rule: Rule):
        self.axes = axes
        self.rule = rule
        modes, protocols, variants = axes
        cells = ((m, p, v, rule(m, p, v)) for m in modes for p in protocols for v in variants)
        self._cells: dict[CellKey, Support] = {(m, p, v): entry for m, p, v, entry in cells if entry is not None}

    def __getitem__(self, key: CellKey) -> Support:
        return self._cells[key]

    def __iter__(self) -> Iterator[CellKey]:
        return iter(self._cells)

    def __len__(self) -> int:
        return len(self._cells)

    def __repr__(self) -> str:
        return f"SupportGrid({self._cells!r})"


def grid(
    modes: Iterable[Mode], protocols: Iterable[Protocol], variants: Iterable[Variant | str], rule: Rule
) -> SupportGrid:
    """A support table over the whole grid, in (mode, protocol, variant) order, from one rule:
    the one way the built-in adapters write their tables, so a table is read as one function
    rather than as a list of cells (and a cell is never listed twice or out of order)."""
    return SupportGrid((tuple(modes), tuple(protocols), tuple(variants)), rule)


class UnsupportedCell(ValueError):
    """:meth:`Adapter.run` was handed a cell its table marks unsupported. The runner records those
    cells without running them, so this is a harness bug (recorded as ``harness_error``)."""


@dataclass(frozen=True)
class ReportedUsage:
    """What the SDK's own usage object told its caller (None where it told nothing)."""

    input_tokens: int | None
    output_tokens: int | None


@dataclass
class AdapterResult:
    """What reached the caller of the SDK, recorded as is."""

    output: Any = None
    """The object the SDK returned (a model instance, a dict, a string, None)."""
    exception: BaseException | None = None
    """The exception that reached the caller, if any: the SDK's own, never one of ours."""
    usage: ReportedUsage | None = None
    fallback: bool = False
    """True when the value came from an error handler the variant installed."""
    planned_calls: int = 0
    """Model calls the cell's composition makes by design on top of the SDK's own (agentmaker's
    structured follow-up turn after a tool loop): neither retries nor failures."""
    details: dict[str, str] = field(default_factory=dict)
    """Adapter-specific facts worth a column, e.g. which strategy LangChain picked."""


@dataclass(frozen=True)
class ReleaseNeed:
    """Cells that older releases cannot express: the cells it selects (None: any) need ``since``
    or later, because of ``what`` (the API that release added). Read by
    :meth:`Adapter.release_gap`; the note users see is "needs <distribution> >= <since>: <what>"."""

    since: str
    what: str
    variant: str | None = None
    mode: Mode | None = None
    protocol: Protocol | None = None
    distribution: str | None = None
    """The package ``since`` is a version of, when it is a companion (LangChain's provider
    packages) rather than the SDK: read from the environment's resolved set."""

    def selects(self, cell: Cell) -> bool:
        return (
            (self.variant is None or cell.variant == self.variant)
            and (self.mode is None or cell.mode is self.mode)
            and (self.protocol is None or cell.protocol is self.protocol)
        )


class Adapter(ABC):
    """Base class for one SDK. Subclasses declare what they can do as class variables (the
    support table above all) and implement :meth:`run_cell`, which :meth:`run` calls; the cells,
    the modes and the tool support are read from those declarations, so there is nothing else
    to keep in step.

    The install hint is not declared here: the registry must show it when the SDK is missing,
    that is before this module can be imported, so it lives with the registration
    (``bench.sdk.registry.Registration.install_hint``).
    """

    name: ClassVar[str]
    language: ClassVar[str] = "python"
    """The language the SDK is used from (the ``language`` column): a TypeScript SDK's adapter
    (bench.node.adapter.NodeAdapter) says ``typescript``."""
    distribution: ClassVar[str]
    """The PyPI distribution whose version is recorded in ``sdk_version``."""
    support: ClassVar[SupportTable]
    """Every cell this adapter knows, unsupported ones included (so they are listed). An adapter
    whose cells exist only per instance (a user's agent, bench.own) overrides :meth:`cells`."""
    harness_tools: ClassVar[bool] = False
    """True when every cell that runs can also run a task with a harness tool (``task.tool``)."""
    requirement: ClassVar[str] = ""
    """What a release environment installs, without the version (extras included):
    ``pydantic-ai-slim[openai,anthropic]``; empty means ``distribution``."""
    companions: ClassVar[tuple[str, ...]] = ()
    """Packages that decide behaviour together with the SDK (LangChain's provider packages and
    langgraph-prebuilt): installed in a release environment as of the release's date."""
    worker_requirements: ClassVar[tuple[str, ...]] = ()
    """What the adapter module itself imports beyond the SDK and pydantic (the Claude adapter's
    psutil, which finds and kills the CLI processes): installed in a release environment, as of
    the release's date, so the worker can import the adapter."""
    preload: ClassVar[tuple[str, ...]] = ()
    """Modules the SDK imports lazily on its first call (agentmaker's openai and anthropic clients):
    a release worker imports them before it reports ready, so the import (seconds on a loaded
    machine, times the workers starting together) is not timed as the first cell's."""
    supported_releases: ClassVar[str] = ""
    """The releases the adapter can drive, as a PEP 440 specifier (``>=1.0``); empty: any."""
    release_needs: ClassVar[tuple[ReleaseNeed, ...]] = ()
    """Cells that need a later release than the oldest supported one (the support table holds
    what the pinned release can do; these narrow it for older ones)."""
    environment: ClassVar[str] = ""
    """The SDK's own environment, for an SDK whose requirements conflict with the harness's pins:
    the file name of its lock, committed beside the adapter's module (``environment.txt``, exact
    pins). Its cells then run in a worker in that environment, built on first use and cached
    (bench.sdk.environment); empty: the SDK runs in-process, from the harness's own interpreter."""
    time_limit_s: ClassVar[float] = 30.0
    """Default per-cell time limit, a stall limit (bench.run.runner.drive): the seconds a cell may
    go without a model call reaching the provider or being answered; subprocess-based SDKs need
    more (the CLI's start is one such gap)."""
    max_concurrency: ClassVar[int] = 4
    stable_route: ClassVar[bool] = False
    """True when an SDK object bound to the endpoint's base URL can serve many cells, because the
    SDK takes no HTTP client to route (agentmaker's LLMClient; ChatAnthropic, which caches its
    client per base URL): the runner then gives each worker slot one URL for all its cells
    (bench.run.runner.Slot), so the object is built once per slot, not once per cell."""
    users_configuration: ClassVar[bool] = False
    """True when what the cells send is the user's to configure (a built-in adapter on the user's
    own type, ``bench pick --type``): an SDK refusing it before any model call is then ``raised``,
    as the user would meet it, not a harness error (``bench.run.classify.decide``)."""

    def cells(self) -> list[Cell]:
        """The support table as cells, in table order. A cell streams when its variant is
        :attr:`Variant.STREAM`."""
        return [
            Cell(self.name, mode, variant, protocol, variant == Variant.STREAM, entry.level, entry.note)
            for (mode, protocol, variant), entry in self.support.items()
        ]

    def installed_version(self) -> str | None:
        """The SDK's installed version (``sdk_version``), None when it is not installed: its
        Python distribution's here; a TypeScript SDK's adapter reads its npm package's."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(self.distribution)
        except PackageNotFoundError:
            return None

    @property
    def modes(self) -> frozenset[Mode]:
        """The modes at least one cell runs (builtin or composed)."""
        return frozenset(cell.mode for cell in self.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED)

    @final
    async def run(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run ``cell`` through :meth:`run_cell`: the one entry every caller takes (the runner,
        a release worker, the adapter tests), so an unsupported cell is refused here, once,
        rather than by each adapter (or by none: an SDK would then be driven in a configuration
        its table says it cannot express)."""
        if cell.mode_support is ModeSupport.UNSUPPORTED:
            where = f"{cell.mode}/{cell.variant}/{cell.protocol}"
            raise UnsupportedCell(f"{cell.key}: cell {where} is unsupported and must not be run ({cell.note})")
        return await self.run_cell(cell, task, endpoint)

    @abstractmethod
    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """Run one call of the SDK for ``cell`` against ``endpoint`` and report what happened.
        Called through :meth:`run` only, with a cell the table supports.

        An exception the SDK raised goes into ``AdapterResult.exception``; an exception that
        escapes this method is a harness bug and is recorded as ``harness_error``.
        """

    def scenarios(self, scenarios: list[Scenario]) -> list[Scenario]:
        """The scenarios this adapter runs out of the loaded ones: all of them here; a user's
        agent adds one for each tool its owner opted in."""
        return scenarios

    def task_for(self, scenario: Scenario) -> Task:
        """The task a scenario's behaviours are rendered against: the scenario's own built-in
        task here; a user's agent answers its own (derived) task instead."""
        return get_task(scenario.task)

    def answers_for(self, scenario: Scenario) -> str:
        """Where the provider's answers to ``scenario`` come from, as a plan says it (``bench run
        --dry-run --list``'s ``answers``): here the scenario's behaviours rendered on its built-in
        task; a user's agent, a user's type and the drawn tasks say theirs."""
        return f"task {scenario.task}"

    def scenario_gap(self, cell: Cell, scenario: Scenario) -> str | None:
        """None when ``cell`` can run ``scenario``, else why not (recorded as ``unsupported``
        with this note): a user's type may have no meaning of wrong, or no bound to break."""
        return None

    def release_gap(self, cell: Cell, version: str, installed: Mapping[str, str] | None = None) -> str | None:
        """Why ``cell`` cannot run on release ``version`` (None when it can), read from
        :attr:`release_needs`; ``installed`` is the environment's resolved set (canonical name ->
        version), where a companion's version is looked up. Evaluated in the parent process,
        never in a worker."""
        from packaging.utils import canonicalize_name
        from packaging.version import Version

        for need in self.release_needs:
            if not need.selects(cell):
                continue
            have: str | None
            if need.distribution is None:
                name, have = self.distribution, version
            else:
                name, have = need.distribution, (installed or {}).get(canonicalize_name(need.distribution))
            if have is not None and Version(have) < Version(need.since):
                held = "" if need.distribution is None else f" (this environment has {have})"
                return f"needs {name} >= {need.since}{held}: {need.what}"
        return None

    def tool_support(self, cell: Cell) -> str | None:
        """None when ``cell`` can run a task with a harness tool (``task.tool``), else why not:
        the runner then records that cell's tool scenarios as ``unsupported`` with this note."""
        if not self.harness_tools:
            return f"{self.name}: harness tools are not wired into this adapter"
        return cell.note if cell.mode_support is ModeSupport.UNSUPPORTED else None
