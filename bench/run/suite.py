"""``bench run`` as a library function: the plan (:mod:`bench.planner`), then the cells driven
against a fresh local provider (:mod:`bench.run.runner`), results written as cells finish."""

from __future__ import annotations

import asyncio
import gc
import shutil
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.core import interrupts
from bench.planner import CellPlan, RunOptions, builtin_names, drive_here, limits, plan_cells

# The planner's faces that bench run's callers (the CLI, pick, upgrade, the fixture) reach here.
from bench.planner import SuiteError as SuiteError
from bench.planner import SuiteRequest as SuiteRequest
from bench.planner import load_adapters as load_adapters
from bench.planner import request_from_json as request_from_json
from bench.planner import request_to_json as request_to_json
from bench.planner import select_scenarios as select_scenarios
from bench.provider import LocalProvider
from bench.provider.server import loopback_bypasses_proxies
from bench.results.store import (
    ResultsWriter,
    RunLock,
    harness_version,
    new_suite_id,
    pause_for_tests,
    point_latest,
    read_manifest,
    read_table,
    replace_tables,
    write_manifest,
)
from bench.run import warm
from bench.run.cache import CellCache, Hit, RunCache, from_cache
from bench.run.capture import _capture_sdk_logs, _release_sdk_logs, _SocketTracker
from bench.run.manifests import assembled, not_measured, not_measured_line, planned_manifest
from bench.run.procs import process_count, run_in_processes
from bench.run.runner import CellRecord, RunLoop, Runner, new_runner
from bench.sdk import registry
from bench.sdk.adapter import Adapter
from bench.sdk.clients import lazy_trust_store

if TYPE_CHECKING:
    from bench.releases.pool import WorkerPool


def plan_suite(
    request: SuiteRequest, warn: Callable[[str], None], env_errors: list[str] | None = None
) -> tuple[dict[str, Adapter], tuple[CellPlan, ...]]:
    """The planner's adapters and cells (:func:`bench.planner.plan_cells`), and what the runner
    makes of them: a plan every cell of which is unsupported is refused, and the cells of a fault
    family no answer could be derived for are said (:func:`not_measured`)."""
    adapters, plans = plan_cells(request, warn, env_errors)
    runner = new_runner(adapters, request.options, "plan")
    unmeasured = [not_measured_line(entry) for entry in not_measured(adapters, plans, runner)]
    if not any(runner.runs(plan) for plan in plans):
        raise SuiteError(
            f"every cell of the plan is unsupported ({len(plans)} cells): nothing would run; "
            + ("".join(f"{line}; " for line in unmeasured) or "see 'bench list' for what each SDK can express")
        )
    for line in unmeasured:
        warn(line)
    return adapters, plans


def check_settings(request: SuiteRequest) -> None:
    """The run's settings within :mod:`bench.planner.limits`'s limits (one line naming the flag)."""
    try:
        limits.check(request_to_json(request, request.sdks))
    except ValueError as error:
        raise SuiteError(str(error)) from None
    check_executor(request.executor)


def check_executor(executor: str) -> None:
    """``ray`` needs Ray installed: one line with the install hint, before any run folder exists."""
    if executor == "ray":
        from bench.run.cluster import RayUnavailable, import_ray

        try:
            import_ray()
        except RayUnavailable as error:
            raise SuiteError(str(error)) from None


def run_suite(
    request: SuiteRequest,
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
) -> Path:
    """Run the matrix; returns the results directory. Interrupted runs keep what finished."""
    check_settings(request)
    memo = _memo_key(request)
    store = CellCache(request.cell_cache.folder, warn) if request.cell_cache is not None else None
    if memo is not None and store is not None and (done := _served_whole(request, memo, store, on_record, on_plan)):
        return done
    env_errors: list[str] = []
    said: list[str] = []

    def noted(line: str) -> None:  # what planning says, which a memo of the plan says again
        said.append(line)
        warn(line)

    adapters, plans = plan_suite(request, noted, env_errors)
    suite_id = new_suite_id()
    cache, served, plans_to_run = from_cache(request, adapters, list(plans), suite_id, warn, store)
    directory = request.results_root / suite_id
    directory.mkdir(parents=True)
    lock = RunLock(directory)
    try:
        lock.acquire()
        planned = planned_manifest(request, adapters, plans)
        meta = assembled(suite_id, planned, env_errors)
        pause_for_tests("created")
        write_manifest(directory, meta)
    except BaseException:  # an interrupt before the manifest: no run yet, so no folder either
        lock.release()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    if cache is None:
        return _execute(request, adapters, plans, directory, meta, on_record, on_plan, lock)
    done = _execute(request, adapters, plans_to_run, directory, meta, on_record, on_plan, lock, (cache, served))
    _keep_whole(cache, done)
    if memo is not None and warm.memoisable(said, env_errors, cache):
        witnessed = warm.witnesses(cache.keys, adapters, plans)
        warm.write_memo(cache.store, warm.Memo(memo, said, planned, cache.group_keys(), witnessed))
    return done


def _memo_key(request: SuiteRequest) -> str | None:
    """The key of this run's plan memo (:mod:`bench.run.warm`); None: not memoisable, or an input
    could not be read (the run plans, as without a memo: the memo never stops a run)."""
    try:
        return warm.memo_key(request) if warm.eligible(request) else None
    except OSError:
        return None


def _keep_whole(cache: RunCache, directory: Path) -> None:
    """Each adapter's cells as one pack, from the finished run's tables (:meth:`RunCache.store_packs`)."""
    cache.store_packs(read_table(directory, "runs"), read_table(directory, "attempts"))


def _served_whole(
    request: SuiteRequest, memo: str, store: CellCache, on_record: Callable[[CellRecord], None],
    on_plan: Callable[[int], None],
) -> Path | None:  # fmt: skip
    """The run served whole from the memo of its plan and its adapters' packs, without planning
    (:mod:`bench.run.warm`); None when either is missing, damaged or no longer holds."""
    found = warm.read_memo(store, memo)
    packs = warm.packs_of(store, found) if found is not None else None
    if found is None or packs is None:
        return None
    for line in found.warnings:
        store.warn(line)
    suite_id = new_suite_id()
    served = warm.as_ours(packs, suite_id)
    directory = request.results_root / suite_id
    directory.mkdir(parents=True)
    lock = RunLock(directory)
    try:
        lock.acquire()
        meta = assembled(suite_id, found.planned)
        pause_for_tests("created")
        write_manifest(directory, meta)
    except BaseException:
        lock.release()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    log_handler = _capture_sdk_logs(directory)  # nothing runs, but the run's folder is a run's
    try:
        on_plan(served.runs.num_rows)
        warm.records(served, on_record)
        replace_tables(directory, {"runs": served.runs, "attempts": served.attempts})
        meta |= {"procs": process_count(request.procs, 0), "executor": request.executor, "sockets_closed_after_run": 0}
        meta["cell_cache"] = warm.summary(store, served)
        meta["status"] = "complete"
    except BaseException:
        meta["status"] = "interrupted"
        raise
    finally:
        try:
            _release_sdk_logs(log_handler, completed=meta["status"] == "complete")
            _close_manifest(request, directory, meta, {})
        finally:
            lock.release()
    return directory


INTERRUPT_GRACE_S = 60.0
"""How long an interrupted run's thread is given to record the interruption (flush, manifest,
lock) before the interrupt reaches the caller anyway: a stall, not slowness."""


def in_own_loop[T](call: Callable[[], T]) -> T:
    """``call()`` here when no event loop runs in this thread, else in a joined thread of its own:
    ``asyncio.run`` refuses to nest in a running loop (pytest-asyncio's, a Jupyter kernel's), and
    the run's thread, loop and sockets end before this returns. Interrupted while it waits (a
    notebook's interrupt button), it interrupts the run's thread too, waits for it to write the
    run as ``interrupted``, and raises ``KeyboardInterrupt``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="misfit-run")
    worker.start()
    # Waited for on an event, not Thread.join: a join interrupted by KeyboardInterrupt marks the
    # thread stopped while it still runs (CPython 3.12's _wait_for_tstate_lock), so a second join
    # would return at once and the interpreter would not wait for the run at exit.
    try:
        finished.wait()
    except KeyboardInterrupt:  # the kernel's interrupt: the run stops as a Ctrl-C stops `bench run`
        interrupts.interrupt_thread(worker)
        finished.wait(INTERRUPT_GRACE_S)
        raise
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return cast(T, outcome["value"])


def resume_suite(
    reference: str | Path,
    on_record: Callable[[CellRecord], None] = lambda record: None,
    warn: Callable[[str], None] = lambda message: None,
    on_plan: Callable[[int], None] = lambda total: None,
    procs: int | None = None,
    executor: str = "local",
) -> Path:
    """Run only the cells an interrupted run is missing, into the same folder: the result is
    the table an uninterrupted run would have written (cell ids are stable). ``procs`` and
    ``executor``: as :class:`SuiteRequest`'s (how to run, not recorded with the request)."""
    directory = Path(reference)
    read_manifest(directory)  # not a run: say so before anything else
    check_executor(executor)
    lock = RunLock(directory).acquire()  # before reading what is done: no other writer adds to it
    try:
        return _resume_locked(directory, lock, on_record, warn, on_plan, procs, executor)
    except BaseException:
        lock.release()
        raise


def _resume_locked(
    directory: Path, lock: RunLock, on_record: Callable[[CellRecord], None], warn: Callable[[str], None],
    on_plan: Callable[[int], None], procs: int | None, executor: str,
) -> Path:  # fmt: skip
    meta = read_manifest(directory)
    request = replace(recorded_request(directory, meta, "resume"), procs=procs, executor=executor)
    adapters, plans = plan_suite(request, warn)
    done = set(read_table(directory, "runs").column("cell_id").to_pylist())
    missing = [plan for plan in plans if plan.cell_id not in done]
    meta["resumed"] = [*meta.get("resumed", []), datetime.now(UTC).isoformat()]
    return _execute(request, adapters, missing, directory, meta, on_record, on_plan, lock)


def recorded_request(directory: Path, meta: Any, action: str) -> SuiteRequest:
    """The request a run's manifest records (``meta``), checked within the same limits as one
    from the command line, to ``action`` (resume, rerun) the run: every problem is one line
    naming the manifest and the field, ending in "cannot <action>"."""
    manifest_path = directory / "manifest.json"
    if isinstance(meta, dict) and "request" not in meta:
        raise SuiteError(f"{directory}: this run's manifest does not say how it was made; cannot {action}")
    if not isinstance(meta, dict):
        raise SuiteError(f"{manifest_path}: not a JSON object; cannot {action}")
    if not isinstance(meta["request"], dict):
        raise SuiteError(f"{manifest_path}: field request: not an object; cannot {action}")
    try:
        limits.check(meta["request"], str(manifest_path))
        return request_from_json(meta["request"], directory.parent)
    except (KeyError, TypeError, ValueError) as error:
        raise SuiteError(f"{error}; cannot {action}") from None


def _worker_pools(
    adapters: dict[str, Adapter], plans: Sequence[CellPlan], project: Path = Path(".")
) -> dict[str, WorkerPool]:
    """A worker pool per release environment in the plan, sized by the adapter's concurrency; the
    workers' stderr goes through this process's, the run's bounded ``sdk.log``."""
    from bench.releases.pool import WorkerCommand, WorkerPool

    pools: dict[str, WorkerPool] = {}
    for plan in plans:
        env = plan.environment
        if env is not None and env.path is not None and plan.pool_name not in pools:
            adapter = adapters[plan.cell.key]
            command = _own_worker(adapter, env.python, project) if plan.cell.agent else None
            command = command or WorkerCommand(env.python, registry.adapter_target(env.sdk))
            pools[plan.pool_name] = WorkerPool(command, adapter.max_concurrency)
    return pools


def _own_worker(adapter: Adapter, python: Path, project: Path) -> Any:
    """The worker command for a user's agent in a release environment: their project on the
    path, the agent's entry in the environment (:func:`bench.own.adapter.from_worker_environment`)."""
    from bench.own.adapter import WORKER_TARGET, OwnAgentAdapter, worker_variables
    from bench.releases.pool import WorkerCommand

    assert isinstance(adapter, OwnAgentAdapter)
    root = project.resolve()
    paths = tuple(str(p) for p in (root, root / "src") if p.is_dir())
    return WorkerCommand(python, WORKER_TARGET, None, paths, worker_variables(adapter, root))


async def _run_and_close(
    runner: Runner, plans: Sequence[CellPlan], provider: LocalProvider, record: Callable[[CellRecord], None],
    pools: dict[str, WorkerPool],
) -> None:  # fmt: skip
    try:
        with interrupts.watching():  # inside asyncio.run: its SIGINT handler is the one wrapped
            await runner.run(plans, provider, record)
    finally:
        for pool in pools.values():
            await pool.close()


def _execute(
    request: SuiteRequest, adapters: dict[str, Adapter], plans: Sequence[CellPlan], directory: Path,
    meta: dict[str, Any], on_record: Callable[[CellRecord], None], on_plan: Callable[[int], None], lock: RunLock,
    cached: tuple[RunCache, list[Hit]] | None = None,
) -> Path:  # fmt: skip
    """Run ``plans`` into ``directory``, whose ``lock`` this call holds and releases; with
    ``cached``, first write the cells the cell cache served and keep each cell run in it."""
    cache, served = cached or (None, [])
    on_plan(len(plans) + len(served))
    writer = ResultsWriter(directory)
    meta["status"] = "running"
    write_manifest(directory, meta)

    def record(cell: CellRecord) -> None:
        writer.add(cell.run, cell.attempts)
        if cache is not None:
            cache.store_record(cell.run, cell.attempts)
        on_record(cell)

    every, after = writer.flush_every, writer.flush_after_s
    writer.flush_every, writer.flush_after_s = max(every, len(served)), float("inf")  # one part, not one per 50
    for hit in served:
        record(CellRecord(hit.run, hit.attempts))
    writer.flush()
    writer.flush_every, writer.flush_after_s = every, after

    runner = new_runner(adapters, request.options, meta["suite_id"])
    runnable = sum(map(runner.runs, plans))  # the others are recorded unsupported, in no time
    log_handler = _capture_sdk_logs(directory)
    on_ray = request.executor == "ray"  # release environments are prepared in their Ray task
    pools = {} if on_ray else _worker_pools(adapters, plans, request.project)
    runner.pools.update(pools)
    # Release environments run in worker processes of their own already: one process drives them.
    meta["procs"] = procs = 1 if pools or on_ray else process_count(request.procs, runnable)
    meta["executor"] = request.executor
    try:
        job = {"request": request_to_json(request, builtin_names(adapters)), "suite_id": meta["suite_id"],
               "directory": str(directory)}  # fmt: skip
        if not plans:  # the cell cache served every cell: no provider, no process, no cluster to start
            closed = 0
        elif on_ray:
            closed = _run_on_ray(job, request, plans, runner, record, meta)
        elif procs > 1:
            closed = run_in_processes(job, plans, procs, record)
        else:
            closed = run_plans(runner, plans, request.options, record, pools)
        meta["sockets_closed_after_run"] = closed
        if cache is not None:
            meta["cell_cache"] = cache.summary()
        writer.finalize()
        meta["status"] = "complete"
    except BaseException as error:
        # Not complete, whatever stopped it: set first, so a failing flush cannot leave it "running".
        meta["status"] = "interrupted"
        try:
            writer.flush()
        except OSError:
            if not isinstance(error, OSError):  # a full disk fails this flush too: report the first
                raise
        raise
    finally:
        try:
            _release_sdk_logs(log_handler, completed=meta["status"] == "complete")
            _close_manifest(request, directory, meta, pools)
        finally:
            lock.release()
    return directory


def _run_on_ray(
    job: dict[str, Any], request: SuiteRequest, plans: Sequence[CellPlan], runner: Runner,
    record: Callable[[CellRecord], None], meta: dict[str, Any],
) -> int:  # fmt: skip
    """The plan's cells as Ray tasks (:mod:`bench.run.cluster`); what the cluster did goes in the
    manifest (``ray``), even when the run stops."""
    from bench.run import cluster

    job |= {"harness_version": harness_version(), "cache_dir": str(request.cache_dir) if request.cache_dir else None}
    if request.agents is not None:  # a task's working directory is Ray's: the user's project by its full path
        job["request"] = {**job["request"], "project": str(request.project.resolve())}
    report = cluster.ClusterReport()
    try:
        cluster.run_on_ray(job, cluster.units(plans, runner.runs), record, report, run_shard_job)
    except (cluster.RayUnavailable, cluster.ClusterTaskError) as error:
        raise SuiteError(str(error)) from None
    finally:
        meta["ray"] = report.manifest()
    return report.sockets_closed


def _close_manifest(request: SuiteRequest, directory: Path, meta: dict[str, Any], pools: dict[str, WorkerPool]) -> None:
    """The manifest as the run ends (status, counts) and ``latest`` pointed at the run."""
    meta["finished_at"] = datetime.now(UTC).isoformat()
    if pools:  # a killed worker is replaced: more starts than pools means kills
        meta["workers_started"] = {name: pool.started for name, pool in pools.items()}
    meta["cells_written"] = read_table(directory, "runs").num_rows
    write_manifest(directory, meta)
    point_latest(request.results_root, directory)


def run_plans(
    runner: Runner, plans: Sequence[CellPlan], options: RunOptions, record: Callable[[CellRecord], None],
    pools: dict[str, WorkerPool] | None = None,
) -> int:  # fmt: skip
    """Run ``plans`` against a fresh provider in this process (release environments through
    their worker ``pools``); returns the client sockets still open to it afterwards, which it
    closes."""
    with warnings.catch_warnings(), _SocketTracker() as sockets:
        # An SDK's warnings are part of its behaviour, never exceptions: a caller's
        # "warnings are errors" filter (pytest's, say) must not change what is measured.
        warnings.simplefilter("default")
        with (
            loopback_bypasses_proxies(),
            lazy_trust_store(),
            LocalProvider(record_bodies=options.record_bodies) as provider,
        ):
            asyncio.run(_run_and_close(runner, plans, provider, record, pools or {}), loop_factory=RunLoop)
        gc.collect()  # clients the SDKs leaked report here, into sdk.log
        return sockets.close_leftovers((provider.host, provider.port))


def run_shard_job(
    job: dict[str, Any], record: Callable[[CellRecord], None], log_dir: Path | None = None,
    warn: Callable[[str], None] = lambda message: None,
) -> int:  # fmt: skip
    """A shard's work (a ``--procs`` process, ``python -m bench.run.shard``; a Ray task,
    :func:`bench.run.cluster.run_unit`): the finished plans it was sent (``plans``, cut from the
    run's one plan), each cell handed to ``record``, release cells through their environments'
    workers (:func:`bench.planner.drive_here`: the adapters, the environments on this machine); the
    SDKs' logs go to ``sdk.log`` in ``log_dir`` (default: the run's folder, as the parent's do)."""
    directory = Path(job["directory"])
    request = request_from_json(job["request"], directory.parent)
    if job.get("cache_dir"):
        request = replace(request, cache_dir=Path(job["cache_dir"]))
    adapters, plans = drive_here(request, job["plans"], warn)
    logs = log_dir or directory
    log_handler = _capture_sdk_logs(logs)
    runner = new_runner(adapters, request.options, job["suite_id"])
    pools = _worker_pools(adapters, plans, request.project)
    runner.pools.update(pools)
    try:
        return run_plans(runner, plans, request.options, record, pools)
    finally:
        _release_sdk_logs(log_handler, completed=True)
