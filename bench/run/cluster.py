"""Run one plan's cells as Ray tasks (``bench run --executor ray``), written by the calling process.

The same seam as ``--procs`` (:mod:`bench.run.procs`): the plan's finished cell plans are cut
into units (a task plans nothing: it loads the adapters and drives what it was sent), each unit
runs in a Ray task through :func:`bench.run.suite.run_shard_job` (its own provider, its own HTTP
clients, the run's per-process limits), and every finished cell streams back to the driver as the
task yields it. Only the driver writes the run folder (the tables, ``sdk.log``, the manifest), so
the one-writer lock, resume, interrupts and ``--rerun`` are the in-process ones.

Units: the in-process cells in interleaved batches of about :data:`CELLS_PER_TASK` runnable cells
(small enough to spread over a cluster and to lose little when a node dies, large enough that a
task's own cost stays small against its cells'); every release environment's cells in one unit,
so its environment is found (the driver's, on its machine) or prepared on a node that lacks it
(built, or found in that node's cache) once, and its workers
(:mod:`bench.releases.pool`, the environment's Python) start once.

A task that dies (its worker killed, its node lost) is not retried by Ray, which would run it
again from the start and yield its cells twice: the driver submits the unit's cells it has not
received yet, up to :data:`TASK_ATTEMPTS` times, and drops any cell it already has.

Ray is optional: ``pip install 'misfit-bench[ray]'``. A running cluster is joined through
``RAY_ADDRESS``; otherwise a local one is started for the run (one CPU per task). A cluster's
nodes need misfit-bench and the SDKs installed as on the driver (a task on another version
refuses to run).
"""

from __future__ import annotations

import os
import queue
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.run.plan import CellPlan
from bench.run.runner import CellRecord

INSTALL_HINT = "pip install 'misfit-bench[ray]'"
CELLS_PER_TASK = 50
"""Runnable in-process cells per task. A task costs about 0.4 s of CPU besides its cells (loading
the adapters, a provider, the clients, a collection at its end: 19 tasks of 25 cells used 4-8 s
more than 5 of 100 on the same 815-cell plan, docs/performance.md), about 8 ms a cell at 50; fewer,
larger tasks balance worse over the CPUs at a run's end, and a lost node loses a task's work."""
TASK_ATTEMPTS = 3
"""How many times a unit is submitted before its death ends the run (its finished cells are kept)."""
BATCH_S = 0.25
"""A task sends the cells that finish within this long of one another as one Ray object (fewer
objects to store, report and fetch; a cell still reaches the driver within this long of
finishing). On this 2-core machine it measured within the noise of one object per cell."""
LOCAL_CLUSTER_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
"""Set (unless the caller set them) before a local cluster starts; a cluster at ``RAY_ADDRESS``
keeps what it was started with. Ray reports usage statistics to its servers by default, and
nothing of a run leaves the machine. Ray starts its workers at niceness 15, behind every other
process: beside two busy loops on this 2-core machine, 54 cells took 86 s on Ray against 3 s in
process, and 6.5 s with the workers at 0, the niceness ``--procs``' shard processes run at."""
DRAIN_S = 2.0
"""On an interrupt, how long the driver still takes the cells the tasks send before it cancels them."""


class RayUnavailable(Exception):
    """``--executor ray`` without Ray installed, or a cluster that cannot be joined or started."""


class ClusterTaskError(RuntimeError):
    """A unit's task failed in the harness (not a dead worker), or died ``TASK_ATTEMPTS`` times."""


@dataclass(frozen=True)
class UnitEnd:
    """A task's last item: what its run closed, what it logged, what it built, where it ran."""

    sockets_closed: int
    sdk_log: str
    builds: tuple[str, ...]
    node: str
    pid: int


@dataclass
class ClusterReport:
    """What the driver saw, for the manifest's ``ray`` entry."""

    sockets_closed: int = 0
    tasks: int = 0
    retried: int = 0
    nodes: set[str] = field(default_factory=set)
    processes: set[tuple[str, int]] = field(default_factory=set)
    """The Ray worker processes (node, pid) that ran tasks: each imported the SDKs once."""
    tasks_per_environment: Counter[str] = field(default_factory=Counter)
    environment_builds: list[str] = field(default_factory=list)

    def manifest(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks, "retried": self.retried, "nodes": len(self.nodes), "processes": len(self.processes),
            "tasks_per_environment": dict(self.tasks_per_environment),
            "environment_builds": self.environment_builds,
        }  # fmt: skip


def import_ray() -> ModuleType:
    """Ray, imported lazily: one line with the install hint when it is missing."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"--executor ray needs Ray, which is not installed; {INSTALL_HINT}") from None
    return ray


@dataclass(frozen=True)
class Unit:
    """Cells that run together in one task: an in-process batch, or one release environment's."""

    environment: str
    cells: tuple[CellPlan, ...]
    """The finished plans it drives (a task plans nothing: :func:`bench.planner.drive_here`)."""


def units(plans: Sequence[CellPlan], runs: Callable[[CellPlan], bool], per_task: int | None = None) -> list[Unit]:
    """In-process cells interleaved over ``ceil(runnable / per_task)`` batches (default
    :data:`CELLS_PER_TASK`; the unsupported ones, recorded without running, ride along); each
    release environment's cells as one unit."""
    per_task = per_task or CELLS_PER_TASK
    in_process = [plan for plan in plans if plan.environment is None or plan.environment.path is None]
    released: dict[str, list[CellPlan]] = {}
    for plan in plans:
        if plan.environment is not None and plan.environment.path is not None:
            released.setdefault(plan.pool_name, []).append(plan)
    batches = max(1, -(-sum(map(runs, in_process)) // per_task)) if in_process else 0
    found = [Unit("pinned", tuple(in_process[index::batches])) for index in range(batches)]
    found += [Unit(name, tuple(group)) for name, group in released.items()]
    return [unit for unit in found if unit.cells]


ShardJob = Callable[..., int]
""":func:`bench.run.suite.run_shard_job`, handed in by its caller (this module is below the suite:
it must not import it) and sent to each task by reference."""


def run_on_ray(
    job: dict[str, Any],
    plan_units: list[Unit],
    record: Callable[[CellRecord], None],
    report: ClusterReport,
    run_job: ShardJob,
) -> ClusterReport:
    """Run ``plan_units`` of ``job`` (what ``run_job``, the shard's work, takes) as Ray tasks,
    calling ``record`` in this thread once per cell as the tasks send them; ``report`` fills as
    they go. On an interrupt the cells already sent are recorded, the tasks cancelled, and the
    interrupt goes on. A Ray already initialised in this process is used, and left running."""
    ray = import_ray()
    started = not ray.is_initialized()
    try:
        if started:
            _start(ray)
        return _Driver(ray, job, record, report, run_job).run(plan_units)
    finally:
        if started:  # an interrupt during ray.init too: the local cluster's processes end with the run
            ray.shutdown()


def _start(ray: ModuleType) -> None:
    """Join ``RAY_ADDRESS`` (Ray reads it), or start a local cluster; Ray's log lines go to the
    run's sdk.log. ``ray.init`` sets a SIGTERM handler of its own (``sys.exit``): the run's comes
    back, so SIGTERM still interrupts as Ctrl-C does (``bench.cli.signals``)."""
    import logging
    import signal

    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    for name, value in LOCAL_CLUSTER_ENV.items():
        os.environ.setdefault(name, value)
    try:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = os.environ.get("RAY_ADDRESS") or "a local cluster"
        raise RayUnavailable(f"--executor ray: could not join {where}: {error}") from None
    except SystemExit as stop:  # Ray's handler met a SIGTERM during ray.init
        if stop.code != signal.SIGTERM:
            raise
        raise KeyboardInterrupt from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Driver:
    """Submits units, takes their cells as they come, resubmits what a dead task did not send."""

    def __init__(
        self,
        ray: ModuleType,
        job: dict[str, Any],
        record: Callable[[CellRecord], None],
        report: ClusterReport,
        run_job: ShardJob,
    ) -> None:
        self.ray, self.job, self.record, self.report, self.run_job = ray, job, record, report, run_job
        self.remote = ray.remote(num_cpus=1, max_retries=0)(run_unit)
        self.received: set[str] = set()
        self.pending: dict[Any, tuple[Unit, int]] = {}

    def run(self, plan_units: list[Unit]) -> ClusterReport:
        for unit in plan_units:
            self._submit(unit, 1)
        try:
            while self.pending:
                ready, _ = self.ray.wait(list(self.pending), num_returns=1)
                self._take(ready[0])
        except BaseException:
            self._drain_and_cancel()
            raise
        return self.report

    def _submit(self, unit: Unit, attempt: int) -> None:
        left = tuple(plan for plan in unit.cells if plan.cell_id not in self.received)
        if not left:
            return
        generator = self.remote.remote(self.job, left, self.run_job)
        self.pending[generator] = (Unit(unit.environment, left), attempt)
        self.report.tasks += 1
        self.report.tasks_per_environment[unit.environment] += 1

    def _take(self, generator: Any) -> None:
        """One item of a task that has one ready: a cell, its end, or its death."""
        unit, attempt = self.pending[generator]
        try:
            item = self.ray.get(next(generator))
        except StopIteration:
            del self.pending[generator]
            return
        except self.ray.exceptions.RayTaskError as error:  # raised in our code there: a harness bug
            del self.pending[generator]  # an interrupt's drain must not meet it again
            cause = getattr(error, "cause", None) or error
            raise ClusterTaskError(f"a Ray task of the run failed: {type(cause).__name__}: {cause}") from None
        except self.ray.exceptions.RayError as error:  # the worker or its node died
            del self.pending[generator]
            if attempt >= TASK_ATTEMPTS:
                raise ClusterTaskError(
                    f"a Ray task died {attempt} times ({type(error).__name__}); the finished cells are "
                    "written: bench run --resume RUN runs the rest"
                ) from None
            self.report.retried += 1
            self._submit(unit, attempt + 1)
            return
        self._handle(item)

    def _handle(self, item: list[CellRecord] | UnitEnd) -> None:
        import sys

        if isinstance(item, UnitEnd):
            self.report.sockets_closed += item.sockets_closed
            self.report.nodes.add(item.node)
            self.report.processes.add((item.node, item.pid))
            self.report.environment_builds.extend(item.builds)
            if item.sdk_log:
                sys.stderr.write(item.sdk_log)  # the run's sdk.log while the run holds stderr
            return
        for cell in item:
            if cell.run["cell_id"] not in self.received:
                self.received.add(cell.run["cell_id"])
                self.record(cell)

    def _drain_and_cancel(self) -> None:
        """Record what the tasks send within ``DRAIN_S`` (cells they had finished), then cancel them."""
        import time

        deadline = time.monotonic() + DRAIN_S
        try:
            while self.pending and (left := deadline - time.monotonic()) > 0:
                ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=left)
                if ready:
                    self._take(ready[0])
        except Exception:  # the interrupt is what goes on; a failing task adds nothing
            pass
        finally:
            for generator in self.pending:
                self.ray.cancel(generator, force=True)


def _gather(inbox: queue.Queue[tuple[str, Any]], first: CellRecord) -> tuple[list[CellRecord], Any]:
    """``first`` and the cells that finish within ``BATCH_S`` of it; the end or an error met on the
    way is handed back (None: none was)."""
    import time

    batch, deadline = [first], time.monotonic() + BATCH_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            item = inbox.get(timeout=left)
        except queue.Empty:
            break
        if item[0] != "cell":
            return batch, item
        batch.append(item[1])
    return batch, None


def _node_id() -> str:
    """The Ray node this task runs on: its id, not the host's name (one host may run several
    nodes; a test cluster does)."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


def run_unit(
    job: dict[str, Any], plans: tuple[CellPlan, ...], run_job: ShardJob
) -> Iterator[list[CellRecord] | UnitEnd]:
    """A Ray task: the finished ``plans`` of ``job`` run by ``run_job``, yielded as they finish (those finishing within
    ``BATCH_S`` of one another together), then a :class:`UnitEnd`.

    The cells run in a thread of the task (the run's event loop, as in a shard process) while
    this generator hands each one to Ray; the SDKs' log goes to a folder of the task's own and
    travels back whole with the end (the driver writes the run's ``sdk.log``)."""
    from bench.results.store import harness_version

    if job.get("harness_version") not in (None, harness_version()):
        raise RuntimeError(f"this node runs misfit-bench {harness_version()}, the driver {job['harness_version']}")
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    with tempfile.TemporaryDirectory(prefix="misfit-ray-") as logs:
        builds: list[str] = []

        def work() -> None:
            try:
                closed = run_job({**job, "plans": plans}, lambda cell: inbox.put(("cell", cell)),
                                       log_dir=Path(logs), warn=builds.append)  # fmt: skip
                inbox.put(("end", closed))
            except BaseException as error:  # carried to the generator, raised there
                inbox.put(("error", error))

        threading.Thread(target=work, daemon=True).start()
        while (item := inbox.get())[0] == "cell":
            batch, item = _gather(inbox, item[1])
            yield batch
            if item is not None:
                break
        if item[0] == "error":
            raise item[1]
        log = Path(logs, "sdk.log")
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        built = tuple(line for line in builds if line.startswith("building the environment"))
        yield UnitEnd(item[1], text, built, _node_id(), os.getpid())
