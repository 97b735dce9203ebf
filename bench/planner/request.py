"""What a run is asked to be: the command's options (:class:`SuiteRequest`), the settings every
cell runs under (:class:`RunOptions`), and the request as a manifest records it (so ``--resume``,
a shard process or a Ray task loads the same adapters for the plans it is sent)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.planner.cells import Filters
from bench.scenarios.files import SCENARIO_DIR
from bench.sdk.adapter import Adapter

if TYPE_CHECKING:
    from bench.own.typed import TypeRequest

DEFAULT_CALL_CAP = 12


@dataclass(frozen=True)
class RunOptions:
    call_cap: int = DEFAULT_CALL_CAP
    time_limit_s: float | None = None
    """Overrides every adapter's own default when set."""
    concurrency: int = 4
    record_bodies: bool = True
    cassettes: str | None = None
    """A folder of recorded cassettes (bench record) every cell is answered from, the scenario's
    faults applied to the recorded answers (bench.cassettes.replay); None: synthesised answers."""
    redact: tuple[str, ...] = ()
    """The body patterns the cassettes were recorded with (``bench record --redact``)."""
    skip_bad: bool = False
    """Leave out a cassette file that cannot be read instead of refusing the folder (``--skip-bad``:
    ``bench run`` names each before the run)."""


class SuiteError(Exception):
    """Bad input to a run (unknown SDK, no cells left after filtering): exit code 2."""


@dataclass(frozen=True)
class SuiteRequest:
    sdks: tuple[str, ...] = ()
    """Empty: every registered adapter whose SDK is installed."""
    filters: Filters = field(default_factory=Filters)
    suite: str = "default"
    scenario_paths: tuple[Path, ...] = (SCENARIO_DIR,)
    reps: int = 1
    seed: int = 0
    options: RunOptions = field(default_factory=RunOptions)
    results_root: Path = Path("results")
    shard: tuple[int, int] | None = None
    """(I, N): run only the I-th of N stable slices of the matrix (for CI job matrices)."""
    agents: tuple[str, ...] | None = None
    """The user's own agents (``--agent``: module:attr or a ``[[tool.bench.agents]]`` name; empty:
    every declared one). None: no own agent, the built-in adapters only."""
    project: Path = Path(".")
    """The user's project: where their pyproject.toml and agent modules are."""
    releases: tuple[str, ...] = ()
    """``--release`` specs (``pydantic-ai==1.0.18``, ``openai-agents@latest``, ``...@pinned``, or a
    bare SDK for its ``[tool.bench.releases]`` list). Empty: the pinned SDKs, in-process."""
    cache_dir: Path | None = None
    """Where release environments are cached; None: :func:`bench.releases.envs.cache_root`."""
    output_type: TypeRequest | None = None
    """``bench pick --type``: every built-in adapter answers the user's own type (``bench.own.typed``)
    instead of each scenario's built-in task. None: the built-in tasks."""
    tasks: str = "builtin"
    """``cassettes`` (``bench run --cassettes DIR --tasks cassettes``): every built-in adapter runs
    on tasks drawn from the folder's recorded answers (:mod:`bench.cassettes.tasks`) instead of
    each scenario's built-in task. ``builtin``: the built-in tasks."""
    procs: int | None = None
    """Processes running cells side by side (``bench.run.procs``); None: one per core, fewer for a
    small run. How the run was executed, not what it is: not part of ``request_to_json``."""
    executor: str = "local"
    """Where the cells run: ``local`` (this machine, ``procs`` processes) or ``ray`` (Ray tasks,
    :mod:`bench.run.cluster`). How, not what: not part of ``request_to_json`` either."""
    cell_cache: CellCacheRequest | None = None
    """Reuse the rows of cells whose key was seen (:mod:`bench.run.cache`); None: every cell runs.
    How, not what: not part of ``request_to_json``."""


@dataclass(frozen=True)
class CellCacheRequest:
    """``bench run``'s use of the cell cache: where, and how."""

    folder: Path
    only: bool = False
    """``--cache-only``: refuse (before any cell runs) when a cell is not in the cache."""
    verify: int = 0
    """``--verify-cache N``: run N cached cells again and compare."""


def builtin_names(adapters: dict[str, Adapter]) -> tuple[str, ...]:
    """The built-in (registered) adapters of a run; a user's own agents are recorded under
    ``agents``, and re-loaded from there (by a resume, by a shard process)."""
    return tuple(name for name, adapter in adapters.items() if not type(adapter).__module__.startswith("bench.own"))


def request_to_json(request: SuiteRequest, sdks: tuple[str, ...]) -> dict[str, Any]:
    """Everything needed to expand the same plan again (``--resume``)."""
    recorded = {
        "sdks": list(sdks),
        "filters": {k: sorted(v) if v else None for k, v in asdict(request.filters).items()},
        "suite": request.suite,
        "scenario_paths": [_portable(path) for path in request.scenario_paths],
        "reps": request.reps,
        "seed": request.seed,
        "options": asdict(request.options) | {"redact": list(request.options.redact)},
        "shard": list(request.shard) if request.shard else None,
        "agents": list(request.agents) if request.agents is not None else None,
        "project": str(request.project) if request.agents is not None or request.output_type is not None else None,
        "releases": list(request.releases),
    }
    if request.output_type is not None:
        recorded["output_type"] = request.output_type.to_json()
    if request.tasks != "builtin":  # written only when set: a run of the built-in tasks reads as before
        recorded["tasks"] = request.tasks
    return recorded


PROJECT_DIR = SCENARIO_DIR.parent


def _portable(path: Path) -> str:
    """A scenario path as the manifest records it: relative to the project when inside it (so a
    committed baseline names ``scenarios``, not the machine's checkout), else absolute."""
    resolved = path.resolve()
    return resolved.relative_to(PROJECT_DIR).as_posix() if resolved.is_relative_to(PROJECT_DIR) else str(resolved)


def request_from_json(data: dict[str, Any], results_root: Path) -> SuiteRequest:
    filters = {k: frozenset(v) if v else None for k, v in data["filters"].items()}
    return SuiteRequest(
        sdks=tuple(data["sdks"]),
        filters=Filters(**filters),
        suite=data["suite"],
        scenario_paths=tuple(PROJECT_DIR / p for p in data["scenario_paths"]),  # absolute p: kept as is
        reps=data["reps"],
        seed=data["seed"],
        options=RunOptions(**data["options"] | {"redact": tuple(data["options"].get("redact", ()))}),
        results_root=results_root,
        shard=(int(data["shard"][0]), int(data["shard"][1])) if data["shard"] else None,
        agents=tuple(data["agents"]) if data.get("agents") is not None else None,
        project=Path(data["project"]) if data.get("project") else Path("."),
        releases=tuple(data.get("releases") or ()),
        output_type=_type_request(data.get("output_type")),
        tasks=data.get("tasks", "builtin"),
    )


def _type_request(data: dict[str, Any] | None) -> TypeRequest | None:
    """The recorded ``--type`` (None for a run of the built-in tasks)."""
    if not data:
        return None
    from bench.own.typed import TypeRequest

    return TypeRequest(**data)
