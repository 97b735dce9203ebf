"""Expand adapters x cells x scenarios x reps into a plan, run it against the local provider
under bounded concurrency, and classify every cell.

Each cell runs under a model-call cap and a time limit: a loop that would never stop is
recorded as ``runaway`` when the cap is hit, a hang as ``timeout``; the SDK's work is cancelled
in both cases. An exception escaping an adapter is a ``harness_error`` row, and the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

from bench import clients
from bench.adapter import Adapter, AdapterResult, Cell, Endpoint
from bench.classify import LedgerSummary, Verdict, classify, summarise
from bench.provider import LocalProvider, RunHandle
from bench.releases.envs import PINNED, Environment
from bench.scenario import Scenario
from bench.tasks import Task
from bench.toolcalls import ToolSummary, summarise_tools
from bench.vocabulary import ModeSupport, Outcome

DEFAULT_CALL_CAP = 12
CANCEL_GRACE_S = 5.0


NO_MODEL_CALL = Verdict(
    Outcome.HARNESS_ERROR, None, None, "NoModelCall",
    "no request reached the provider, though every cell starts with a model call; is a proxy "
    "(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) taking loopback traffic?",
)  # fmt: skip
"""A supported cell whose SDK never reached the provider did not measure the SDK: flagged as the
harness's problem (exit 3), never counted as an outcome."""


@dataclass(frozen=True)
class CellPlan:
    """One row to produce: an adapter cell, a scenario, a repetition."""

    cell: Cell
    scenario: Scenario
    rep: int
    seed: int
    environment: Environment | None = None
    """A release environment, run by a worker; None: in-process, the pinned SDK."""

    @property
    def cell_id(self) -> str:
        """Stable across runs and machines: derived from the parameters only (a release
        environment's name included; in-process cells keep the ids they always had)."""
        c = self.cell
        key = f"{c.sdk}|{c.mode}|{c.variant}|{c.protocol}|{int(c.stream)}|{self.scenario.name}|{self.rep}|{self.seed}"
        if c.agent:  # built-in cells keep the ids they always had
            key = f"{c.agent}|{key}"
        if self.environment is not None:  # so do in-process ones
            key += f"|{self.environment.name}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    @property
    def environment_name(self) -> str:
        return PINNED if self.environment is None else self.environment.name

    @property
    def unit_seed(self) -> int:
        """Same for every SDK on the same (scenario, seed, rep): stochastic draws pair up."""
        digest = hashlib.sha256(f"{self.seed}|{self.scenario.name}|{self.rep}".encode()).digest()
        return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class Filters:
    """``None`` means everything; otherwise the allowed values."""

    modes: frozenset[str] | None = None
    variants: frozenset[str] | None = None
    protocols: frozenset[str] | None = None
    scenarios: frozenset[str] | None = None
    faults: frozenset[str] | None = None

    def keep_cell(self, cell: Cell) -> bool:
        return (
            _allowed(self.modes, cell.mode)
            and _allowed(self.variants, cell.variant)
            and _allowed(self.protocols, cell.protocol)
        )

    def keep_scenario(self, scenario: Scenario) -> bool:
        fault = scenario.fault_label
        fault_ok = self.faults is None or fault in self.faults or fault.split(":")[0] in self.faults
        return _matches_any(self.scenarios, scenario.name) and fault_ok


def _allowed(allowed: frozenset[str] | None, value: str) -> bool:
    return allowed is None or str(value) in allowed


def _matches_any(patterns: frozenset[str] | None, name: str) -> bool:
    """Scenario filters are names or shell globs (``tool_*``)."""
    return patterns is None or any(fnmatchcase(name, pattern) for pattern in patterns)


def expand(
    adapters: Iterable[Adapter], scenarios: list[Scenario], filters: Filters, reps: int = 1, seed: int = 0,
    environment: Environment | None = None,
) -> list[CellPlan]:  # fmt: skip
    plans = []
    for adapter in adapters:
        for cell in adapter.cells():
            if not filters.keep_cell(cell):
                continue
            for scenario in scenarios:
                if filters.keep_scenario(scenario):
                    plans.extend(CellPlan(cell, scenario, rep, seed, environment) for rep in range(reps))
    return plans


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); shards are numbered from 1."""
    index, _, total = text.partition("/")
    try:
        i, n = int(index), int(total)
    except ValueError:
        raise ValueError(f"--shard takes I/N with whole numbers, e.g. 2/4; got {text!r}") from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text}: I must be between 1 and N")
    return i, n


def in_shard(plan: CellPlan, shard: tuple[int, int] | None) -> bool:
    """A stable slice of the matrix: by a hash of the cell's parameters, so every machine and
    every run puts a cell in the same shard."""
    if shard is None:
        return True
    index, total = shard
    return int(plan.cell_id, 16) % total == index - 1


@dataclass(frozen=True)
class RunOptions:
    call_cap: int = DEFAULT_CALL_CAP
    time_limit_s: float | None = None
    """Overrides every adapter's own default when set."""
    concurrency: int = 4
    record_bodies: bool = True


@dataclass
class CellRecord:
    """One finished cell: its runs row and its attempts rows (plain dicts, ``columns``-shaped)."""

    run: dict[str, Any]
    attempts: list[dict[str, Any]] = field(default_factory=list)


def sdk_version(adapter: Adapter) -> str | None:
    try:
        return version(adapter.distribution)
    except PackageNotFoundError:
        return None


class CellDriver(Protocol):
    """What runs one cell: the adapter itself (in-process) or a release environment's worker."""

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult: ...


class DriverPool(Protocol):
    """Release environments' workers (``bench.releases.pool.WorkerPool``): one leased per cell."""

    def lease(self) -> AbstractAsyncContextManager[CellDriver]: ...


class WorkerStartFailed(Exception):
    """A pool could not start a worker; the cause is the cell's harness error."""


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

    async def run(
        self, plans: list[CellPlan], provider: LocalProvider, on_record: Callable[[CellRecord], None]
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
            for plan in queue:
                async with self._global:
                    on_record(await self.run_cell(plan, provider))

        workers = []
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
        return self.adapters[plan.cell.key].release_gap(plan.cell, plan.environment.version)

    def time_limit(self, plan: CellPlan) -> float:
        return self.options.time_limit_s or self.adapters[plan.cell.key].time_limit_s

    async def run_cell(self, plan: CellPlan, provider: LocalProvider) -> CellRecord:
        spec = plan.scenario.script_spec()
        adapter_task = self.adapters[plan.cell.key].task_for(plan.scenario)
        run = provider.open_run(
            adapter_task,
            script=spec.get("script"),
            then=spec.get("then", "repeat"),
            stochastic=spec.get("stochastic"),
            run_id=uuid.uuid4().hex[:16],
            call_cap=self.options.call_cap,
            unit_seed=plan.unit_seed,
        )
        task = adapter_task.with_tool(plan.scenario.tool)
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        try:
            stopped, result, harness = await self._drive(plan, run, task)
        finally:
            run.close()
        latency_ms = (time.perf_counter() - started) * 1000
        planned = result.planned_calls if result else 0
        tools = summarise_tools(run.attempts, task.tool, planned_turn=planned > 0) if task.tool is not None else None
        explained = planned + (tools.tool_retries + tools.tool_round_trips if tools else 0)
        ledger = summarise(run.attempts, explained)
        verdict = self._verdict(plan, task, stopped, result, harness, ledger, tools)
        row = self._row(plan, run.run_id, started_at, latency_ms, ledger, verdict, result) | _tool_columns(tools)
        if harness is not None:
            row["harness_traceback"] = "".join(traceback.format_exception(harness, limit=8))[-4000:]
        return CellRecord(row, [self._attempt_row(plan, record) for record in run.attempts])

    async def _drive(
        self, plan: CellPlan, run: RunHandle, task: Task
    ) -> tuple[str | None, AdapterResult | None, BaseException | None]:
        """Run the adapter until it returns, hits the call cap or the time limit. A release
        cell's worker is leased (and started if need be) before the clock starts."""
        try:
            async with self._lease(plan) as driver:
                driven = await drive(driver, plan.cell, task, run, self.time_limit(plan))
        except WorkerStartFailed as error:
            return None, None, error.__cause__ or error
        return driven.stopped, driven.result, driven.harness_error

    def _lease(self, plan: CellPlan) -> AbstractAsyncContextManager[CellDriver]:
        pool = self.pools.get(plan.environment_name)
        if pool is None:
            return nullcontext(self.adapters[plan.cell.key])
        return pool.lease()

    def _verdict(
        self, plan: CellPlan, task: Task, stopped: str | None, result: AdapterResult | None,
        harness: BaseException | None, ledger: LedgerSummary, tools: ToolSummary | None,
    ) -> Verdict:  # fmt: skip
        if harness is not None:
            return Verdict(Outcome.HARNESS_ERROR, None, None, type(harness).__qualname__, str(harness)[:2000])
        if ledger.model_calls == 0:
            return NO_MODEL_CALL
        if stopped == "runaway":
            return Verdict(Outcome.RUNAWAY, None, None)
        if stopped == "timeout":
            return Verdict(Outcome.TIMEOUT, None, None)
        assert result is not None
        expected_calls = 1 + result.planned_calls + (tools.tool_round_trips if tools else 0)
        return classify(result, task, ledger.model_calls, expected_calls)

    def _base_row(self, plan: CellPlan, run_id: str) -> dict[str, Any]:
        cell = plan.cell
        return {
            "run_id": run_id,
            "suite_id": self.suite_id,
            "cell_id": plan.cell_id,
            "sdk": cell.sdk,
            "agent": cell.agent,
            "sdk_version": plan.environment.version if plan.environment else self._versions.get(cell.key),
            "environment": plan.environment_name,
            "mode": str(cell.mode),
            "mode_support": str(cell.mode_support),
            "variant": str(cell.variant),
            "protocol": str(cell.protocol),
            "stream": cell.stream,
            "scenario": plan.scenario.name,
            "task": plan.scenario.task,
            "fault": plan.scenario.fault_label,
            "rep": plan.rep,
            "seed": plan.seed,
            "call_cap": self.options.call_cap,
            "time_limit_s": self.time_limit(plan),
            "note": cell.note or None,
        }

    def _unsupported(self, plan: CellPlan, reason: str | None = None) -> CellRecord:
        row = self._base_row(plan, run_id=f"unsupported-{plan.cell_id}")
        row |= {"started_at": datetime.now(UTC), "outcome": str(Outcome.UNSUPPORTED)}
        if reason is not None:
            row["note"] = reason
        return CellRecord(row)

    def _row(
        self, plan: CellPlan, run_id: str, started_at: datetime, latency_ms: float, ledger: LedgerSummary,
        verdict: Verdict, result: AdapterResult | None,
    ) -> dict[str, Any]:  # fmt: skip
        usage = result.usage if result else None
        details = result.details if result and result.details else None
        return self._base_row(plan, run_id) | {
            "started_at": started_at,
            "detected_mode": ledger.detected_mode,
            "realistic": ledger.realistic,
            "outcome": str(verdict.outcome),
            "exception_type": verdict.exception_type,
            "exception_message": verdict.exception_message,
            "model_calls": ledger.model_calls,
            "output_retries": ledger.output_retries,
            "transport_retries": ledger.transport_retries,
            "client_retries": ledger.client_retries,
            "retry_wait_ms": ledger.retry_wait_ms,
            "input_tokens_billed": ledger.input_tokens_billed,
            "output_tokens_billed": ledger.output_tokens_billed,
            "input_tokens_reported": usage.input_tokens if usage else None,
            "output_tokens_reported": usage.output_tokens if usage else None,
            "latency_ms": latency_ms,
            "returned_valid": verdict.returned_valid,
            "returned_correct": verdict.returned_correct,
            "details": json.dumps(details, sort_keys=True) if details else None,
        }

    def _attempt_row(self, plan: CellPlan, record: Any) -> dict[str, Any]:
        row = {
            "suite_id": self.suite_id,
            "cell_id": plan.cell_id,
            "run_id": record.run_id,
            "attempt": record.attempt,
            "path": record.path,
            "protocol": record.protocol,
            "stream": record.stream,
            "detected_mode": record.detected_mode,
            "enforcement": record.enforcement,
            "behaviour": record.behaviour,
            "realistic": record.realistic,
            "status_code": record.status_code,
            "input_tokens": record.input_tokens,
            "output_tokens": record.output_tokens,
            "request_bytes": record.request_bytes,
            "response_bytes": record.response_bytes,
            "request_sha256": record.request_sha256,
            "client_retry_count": record.client_retry_count,
            "started_at": datetime.fromtimestamp(record.started_at, UTC),
            "first_byte_ms": record.first_byte_ms,
            "duration_ms": record.duration_ms,
            "request_body": json.dumps(record.request_body) if record.request_body is not None else None,
            "tool_call_id": record.tool_call_id,
            "tool_result_ids": ",".join(result.call_id for result in record.tool_results) or None,
            "answer": record.tool_call_arguments if plan.cell.agent else None,
            "response_body": record.response_body.decode("utf-8", "replace") if record.response_body else None,
        }
        return row


@dataclass(frozen=True)
class Driven:
    """How one call of an adapter ended: it returned, it raised (our bug), or it was stopped."""

    result: AdapterResult | None = None
    """What the adapter reported, when it returned."""
    harness_error: BaseException | None = None
    """An exception that escaped the adapter: a harness bug, never the SDK's own."""
    stopped: str | None = None
    """``"runaway"`` (the call cap was reached) or ``"timeout"`` (the time limit passed)."""


async def drive(adapter: CellDriver, cell: Cell, task: Task, run: RunHandle, time_limit_s: float) -> Driven:
    """Run ``adapter`` on ``cell`` until it returns, hits the run's call cap or the time limit;
    a stopped call is cancelled and given ``CANCEL_GRACE_S`` to unwind. The one path every cell
    takes, in a run and in the adapter tests."""
    call = asyncio.ensure_future(adapter.run_cell(cell, task, run.endpoint))
    cap = run.cap_reached()
    try:
        done, _ = await asyncio.wait({call, cap}, timeout=time_limit_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cap.cancel()
    if call in done:
        error = call.exception()
        return Driven(harness_error=error) if error is not None else Driven(result=call.result())
    call.cancel()  # a worker's cell: the worker is killed by pid (bench.releases.pool.Worker.run_cell)
    await asyncio.wait({call}, timeout=CANCEL_GRACE_S)
    return Driven(stopped="runaway" if cap in done else "timeout")


def _tool_columns(tools: ToolSummary | None) -> dict[str, Any]:
    """The runs row's tool columns (all None for a task without a tool)."""
    if tools is None:
        return dict.fromkeys(TOOL_COLUMNS)
    return {name: getattr(tools, name) for name in TOOL_COLUMNS}


TOOL_COLUMNS = (
    "tool_calls_requested", "tool_calls", "tool_errors", "tool_retries", "tool_error_to_model",
    "tool_error_structured", "tool_calls_after_fatal", "tool_transport_retries",
)  # fmt: skip
