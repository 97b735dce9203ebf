"""Run a plan against the local provider under bounded concurrency.

The runner schedules and drives: each cell runs under a model-call cap and a stall limit (the
time limit: how long it may go without a model call reaching the provider or being answered, or
its adapter noting a subprocess at work, bench.sdk.progress; on the event loop's own time, what
it waited for a CPU added back), and a loop that would never stop is cancelled at the cap, a
hang at the limit. What the cell's outcome is, bench.run.classify decides; what it cost,
bench.run.accounting counts from the ledger; how it is written, bench.run.rows maps (the plan
itself is bench.run.plan's). An exception escaping an adapter is a ``harness_error`` row, and
the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from bench.cassettes import CassetteMiss, Redaction, Replay, skip_quietly
from bench.core import interrupts
from bench.core.vocabulary import ModeSupport, Outcome
from bench.planner import DEFAULT_CALL_CAP as DEFAULT_CALL_CAP  # the planner's, re-exported for the runner's callers
from bench.planner import CellPlan, RunOptions, SuiteError
from bench.provider import LocalProvider, RunHandle
from bench.releases.pool import WorkerStartFailed
from bench.results.sdklog import CURRENT_CELL
from bench.run import egress
from bench.run.accounting import explained_calls, summarise
from bench.run.classify import Driven, decide
from bench.run.rows import Measured, RowContext, attempt_row, run_row, unsupported_row
from bench.run.toolcalls import summarise_tools
from bench.scenarios.tasks import Task
from bench.sdk import clients, progress
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint
from bench.sdk.registry import sdk_version

CANCEL_GRACE_S = 5.0


def replay_of(options: RunOptions) -> Replay | None:
    """The replay every cell of a ``--cassettes`` run answers from (raises
    :class:`bench.cassettes.CassetteError` or ValueError, one line, for a folder it cannot use)."""
    if options.cassettes is None:
        return None
    return Replay.from_folder(
        Path(options.cassettes), Redaction(patterns=options.redact), skip_quietly if options.skip_bad else None
    )


@dataclass
class CellRecord:
    """One finished cell: its runs row and its attempts rows (plain dicts, ``columns``-shaped)."""

    run: dict[str, Any]
    attempts: list[dict[str, Any]] = field(default_factory=list)


class CellDriver(Protocol):
    """What runs one cell: the adapter itself (in-process, :meth:`Adapter.run`, which refuses an
    unsupported cell) or a release environment's worker (whose process calls the same)."""

    async def run(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult: ...


class DriverPool(Protocol):
    """Release environments' workers (``bench.releases.pool.WorkerPool``): one leased per cell."""

    def lease(self) -> AbstractAsyncContextManager[CellDriver]: ...


class Runner:
    """Runs plans against one provider; ``on_record`` receives each cell as it finishes.

    ``pools`` run the cells of release environments (by environment name: a worker pool
    each); every other cell runs in-process through its adapter.
    """

    def __init__(
        self, adapters: dict[str, Adapter], options: RunOptions, suite_id: str,
        pools: dict[str, DriverPool] | None = None,
    ) -> None:  # fmt: skip
        self.adapters = adapters
        self.options = options
        self.suite_id = suite_id
        self.pools = pools or {}
        self._global = asyncio.Semaphore(max(1, options.concurrency))
        self._per_sdk = {name: max(1, a.max_concurrency) for name, a in adapters.items()}
        self._versions = {name: sdk_version(a) for name, a in adapters.items()}
        self.replay = replay_of(options)

    async def run(
        self, plans: Sequence[CellPlan], provider: LocalProvider, on_record: Callable[[CellRecord], None]
    ) -> None:
        """Record the unsupported cells, then run each SDK's cells through its own pool of
        ``max_concurrency`` workers, all sharing the global limit.

        Workers pull plans from the SDK's queue in order, so only the cells actually running
        exist as tasks: a 10,000-cell sweep holds a few coroutines, not 10,000 (measured with
        ``benchmarks/scale.py``), and one slow SDK never blocks the other SDKs' slots.
        """
        queues: dict[tuple[str, str], list[CellPlan]] = {}
        for plan in plans:
            if plan.cell.mode_support is ModeSupport.UNSUPPORTED:
                on_record(self._unsupported(plan))
            elif (reason := self.gap(plan)) is not None:
                on_record(self._unsupported(plan, reason))
            else:
                queues.setdefault((plan.cell.key, plan.environment_name), []).append(plan)

        async def worker(queue: Iterator[CellPlan]) -> None:
            slot = Slot()
            for plan in queue:
                async with self._global:
                    on_record(await self.run_cell(plan, provider, slot))

        workers: list[Coroutine[Any, Any, None]] = []
        for (sdk, _), queue in queues.items():
            shared = iter(queue)
            workers.extend(worker(shared) for _ in range(min(self._per_sdk[sdk], len(queue))))
        # One HTTP client per (SDK, protocol) for the whole run, as a user's loop keeps one.
        async with clients.sharing():
            await asyncio.gather(*workers)

    def gap(self, plan: CellPlan) -> str | None:
        """Why a cell the adapter supports still cannot run this plan (its tool task, its
        scenario, its release); None when it runs. ``bench run --dry-run`` counts with it too."""
        return self.tool_gap(plan) or self.scenario_gap(plan) or self.release_gap(plan)

    def runs(self, plan: CellPlan) -> bool:
        """Whether the plan is run at all (otherwise it is recorded as ``unsupported``)."""
        return plan.cell.mode_support is not ModeSupport.UNSUPPORTED and self.gap(plan) is None

    def tool_gap(self, plan: CellPlan) -> str | None:
        """Why this cell cannot run its scenario's tool task (None when it can, or needs none)."""
        adapter = self.adapters[plan.cell.key]
        if adapter.task_for(plan.scenario).tool_name is None:
            return None
        return adapter.tool_support(plan.cell)

    def scenario_gap(self, plan: CellPlan) -> str | None:
        """Why this cell cannot run its scenario at all (a behaviour its task has no answer for)."""
        return self.adapters[plan.cell.key].scenario_gap(plan.cell, plan.scenario)

    def release_gap(self, plan: CellPlan) -> str | None:
        """Why this cell cannot run on its release (None in-process, or when it can)."""
        if plan.environment is None or plan.environment.path is None:
            return None
        env = plan.environment
        return self.adapters[plan.cell.key].release_gap(plan.cell, env.version, env.installed())

    def time_limit(self, plan: CellPlan) -> float:
        return self.options.time_limit_s or self.adapters[plan.cell.key].time_limit_s

    async def run_cell(self, plan: CellPlan, provider: LocalProvider, slot: Slot | None = None) -> CellRecord:
        """Run one cell on its own provider run; ``slot``: the worker slot it runs in, whose
        stable route reaches the run when the adapter asks for one (:class:`Slot`)."""
        adapter = self.adapters[plan.cell.key]
        task = adapter.task_for(plan.scenario).with_tool(plan.scenario.tool)
        script = plan.scenario.build_script(plan.unit_seed)
        answers = self.replay.fresh(plan.unit_seed) if self.replay is not None else None
        route = slot.route if slot is not None and adapter.stable_route else None
        run = provider.open_run(
            task, script, run_id=uuid.uuid4().hex[:16], call_cap=self.options.call_cap, answers=answers, route=route
        )
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        cell = CURRENT_CELL.set(plan.cell_id)  # what the SDK prints is this cell's (bench.results.sdklog)
        try:
            with egress.noting() as refused:  # the cell's task inherits the context: its refusals
                driven = await self._drive(plan, run, task)
        finally:
            CURRENT_CELL.reset(cell)
            run.close()
        if slot is not None and not driven.returned:
            slot.renew()  # whatever the stopped call left in flight can reach no later cell
        if answers is not None and answers.misses:  # not measured as asked: the harness's problem
            driven = replace(driven, harness_error=CassetteMiss(answers.misses[0]))
        if refused and driven.result is not None:
            driven.result.details[egress.DETAIL] = json.dumps(refused)
        latency_ms = (time.perf_counter() - started) * 1000
        planned = driven.result.planned_calls if driven.result else 0
        tools = summarise_tools(run.attempts, task.tool, planned_turn=planned > 0) if task.tool is not None else None
        ledger = summarise(run.attempts, explained_calls(planned, tools))
        measured = Measured(
            run_id=run.run_id, started_at=started_at, latency_ms=latency_ms, ledger=ledger,
            verdict=decide(driven, task, ledger, tools, users_agent=self._users(plan),
                           adapter_module=type(self.adapters[plan.cell.key]).__module__),
            result=driven.result, tools=tools, harness_error=driven.harness_error,
        )  # fmt: skip
        context = self._context(plan)
        return CellRecord(
            run_row(plan, context, measured), [attempt_row(plan, context, record) for record in run.attempts]
        )

    async def _drive(self, plan: CellPlan, run: RunHandle, task: Task) -> Driven:
        """Run the adapter until it returns, hits the call cap or stalls past the time limit. A
        release cell's worker is leased (and started if need be) before the clock starts."""
        try:
            async with self._lease(plan) as driver:
                driven = await drive(driver, plan.cell, task, run, self.time_limit(plan))
                unresponsive = getattr(driver, "unresponsive", None)  # a release worker's state
                return replace(driven, unresponsive=unresponsive) if unresponsive else driven
        except WorkerStartFailed as error:
            return Driven(harness_error=error.__cause__ or error)

    def _users(self, plan: CellPlan) -> bool:
        """Whether the cell runs what the user configured: their agent, or their type."""
        return bool(plan.cell.agent) or self.adapters[plan.cell.key].users_configuration

    def _lease(self, plan: CellPlan) -> AbstractAsyncContextManager[CellDriver]:
        pool = self.pools.get(plan.pool_name)
        if pool is None:
            return nullcontext(self.adapters[plan.cell.key])
        return pool.lease()

    def _context(self, plan: CellPlan) -> RowContext:
        version = plan.environment.version if plan.environment else self._versions.get(plan.cell.key)
        return RowContext(
            suite_id=self.suite_id, sdk_version=version, call_cap=self.options.call_cap,
            time_limit_s=self.time_limit(plan), language=self.adapters[plan.cell.key].language,
        )  # fmt: skip

    def _unsupported(self, plan: CellPlan, reason: str | None = None) -> CellRecord:
        return CellRecord(unsupported_row(plan, self._context(plan), reason))


class Slot:
    """One of a run's worker slots (an SDK's cells run in a few, one cell at a time each), and
    the stable route its cells reach the provider by when their adapter asks for one
    (``Adapter.stable_route``: an SDK object bound to its base URL, built once per slot as a
    user's loop builds it once). Each cell is still its own provider run with its own id and
    ledger; the route reaches one run at a time, the slot's current cell's.

    After a cell that did not return (stopped at the cap or the time limit, or a harness error),
    the slot takes a new route: a request its cancelled call still sends finds no run (404), as
    one on a closed run's own route does, never the slot's next cell."""

    def __init__(self) -> None:
        self.route = ""
        self.renew()

    def renew(self) -> None:
        self.route = f"slot-{uuid.uuid4().hex[:12]}"


class RunLoop(asyncio.SelectorEventLoop):
    """The event loop a run's cells share, which a cell's own ``SystemExit`` or
    ``KeyboardInterrupt`` does not stop.

    asyncio lets those two out of the loop whichever task raised them (``Task.__step`` stores
    the exception on the task, then raises it again; ``Handle._run`` passes it on), so a user's
    validator calling ``sys.exit(7)`` inside a task their SDK created (pydantic-graph runs each
    step in one) would end the run with exit 7. Here the task keeps the exception, as for any
    other, and whoever awaits it (the SDK, then the cell: :meth:`bench.own.adapter.OwnAgentAdapter.run_cell`)
    sees it; the loop goes on. An interrupt of the user's (:func:`bench.core.interrupts.by_user`)
    still stops it, as asyncio's own.
    """

    def _run_once(self) -> None:
        try:
            super()._run_once()  # type: ignore[misc]
        except (SystemExit, KeyboardInterrupt) as error:
            if isinstance(error, KeyboardInterrupt) and interrupts.by_user():
                raise


async def drive(adapter: CellDriver, cell: Cell, task: Task, run: RunHandle, time_limit_s: float) -> Driven:
    """Run ``adapter`` on ``cell`` until it returns, hits the run's call cap or stalls; a stopped
    call is cancelled and given ``CANCEL_GRACE_S`` to unwind. The one path every cell takes, in
    a run and in the adapter tests.

    ``time_limit_s`` is a stall limit, not a budget for the whole cell: the cell is a timeout only
    once that long has passed with no progress, that is, with no model call reaching the provider
    and none of its answers completing (``RunHandle.last_progress``), counted from this call's
    start. A whole-cell clock ended a loop that was still calling at 9 calls instead of 12 on a
    loaded machine (issue 26); progress is what the provider saw, so load only slows a cell down.
    The cap bounds what can count as progress (at most two events per model call), so a cell
    lasts at most about ``(2 x call cap + 1) x time_limit_s``, plus what its adapter notes of a
    subprocess working out of the provider's sight (:mod:`bench.sdk.progress`: a CLI starting on
    a loaded machine), which the adapter bounds, plus the time the run's event loop waited for a
    CPU (:class:`_StallClock`), at most the cell's age."""
    clock = _StallClock.start()
    with progress.reporting_to(clock.note, clock.count_worker):  # the call's task keeps this context
        call = asyncio.ensure_future(adapter.run(cell, task, run.endpoint))
    cap = run.cap_reached()
    waits: set[asyncio.Future[Any]] = {call, cap}
    done: set[asyncio.Future[Any]] = set()
    try:
        while not done and (quiet_left := clock.quiet_left(run, time_limit_s)) > 0:
            done, _ = await asyncio.wait(waits, timeout=quiet_left, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cap.cancel()
    if call in done:
        error = call.exception()
        return Driven(harness_error=error) if error is not None else Driven(result=call.result())
    call.cancel()  # a worker's cell: the worker is killed by pid (bench.releases.pool.Worker.run)
    await asyncio.wait({call}, timeout=CANCEL_GRACE_S)
    return Driven(stopped=Outcome.RUNAWAY if cap in done else Outcome.TIMEOUT)


@dataclass
class _StallClock:
    """A cell's stall clock, beside the provider's ledger (``RunHandle.last_progress``): the
    adapter's own notes (:mod:`bench.sdk.progress`) and the time the run's event loop waited for
    a CPU while the cell ran.

    Load is time a runnable thread waits for a core, which the kernel counts per thread
    (:func:`bench.sdk.progress.run_queue_wait_s`). The loop's thread runs every in-process cell's SDK code, so a
    cell's limit is extended by what that thread waited since the cell started: the limit runs on
    the loop's own time, not the wall's, and a cell starved by other processes is slow, not
    stalled. A hung call leaves the loop idle in its selector, which waits for no CPU, so a hang
    is still a timeout after the limit (later only while other cells keep a starved loop busy).
    A cell driven in a worker process computes there, and the loop idles meanwhile: the worker's
    main thread's wait, from when the pool named it (:func:`bench.sdk.progress.note_worker`), is
    credited the same way. The credit is read only once the limit has run out, and is at most the
    cell's age."""

    started: float
    noted: float
    waited_at_start: float
    workers: dict[int, float] = field(default_factory=dict)
    """Each worker process the cell ran in, with its wait when it was named."""

    @classmethod
    def start(cls) -> _StallClock:
        now = time.monotonic()
        return cls(now, now, progress.run_queue_wait_s())

    def note(self, ago_s: float = 0.0) -> None:
        self.noted = max(self.noted, time.monotonic() - ago_s)

    def count_worker(self, pid: int) -> None:
        self.workers.setdefault(pid, progress.run_queue_wait_s(pid))

    def quiet_left(self, run: RunHandle, stall_limit_s: float) -> float:
        """Seconds until the cell has gone ``stall_limit_s`` without progress (<= 0: it has)."""
        now = time.monotonic()
        left = max(self.noted, run.last_progress) + stall_limit_s - now
        if left > 0:
            return left
        waited = progress.run_queue_wait_s() - self.waited_at_start
        waited += sum(max(0.0, progress.run_queue_wait_s(pid) - at) for pid, at in self.workers.items())
        return left + min(waited, now - self.started)


def new_runner(adapters: dict[str, Adapter], options: RunOptions, suite_id: str) -> Runner:
    """The run's :class:`Runner`; a ``--cassettes`` folder it cannot use (moved since the run was
    made, on ``--resume`` or ``--rerun``) is one line, exit 2, like a fresh run's."""
    from bench.cassettes import CassetteError

    try:
        return Runner(adapters, options, suite_id)
    except CassetteError as error:
        raise SuiteError(str(error)) from None
