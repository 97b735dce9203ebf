"""The parent's side of the workers: a pool per release environment.

Each worker runs one cell at a time, so a worker killed for overrunning (time limit or call cap)
takes down only its own cell; the pool starts another for the next cell. Workers start lazily,
at most ``size`` of them leased at once (a further lease waits for one to come back), and live
until the pool closes. The runner never asks for more: it runs at most the adapter's
``max_concurrency`` cells of an environment at once, the size the suite gives the pool.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import importlib.util
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import bench
from bench.releases.protocol import decode_missing_import, decode_result, encode_request
from bench.results.sdklog import CURRENT_CELL
from bench.scenarios.tasks import Task
from bench.sdk import progress
from bench.sdk.adapter import AdapterResult, Cell, Endpoint
from bench.sdk.failures import MissingImport

CHECKOUT = Path(bench.__file__).resolve().parent.parent
"""Put on the worker's path: the worker imports ``bench`` and ``adapters`` from this checkout."""
START_TIMEOUT_S = 180.0
"""A cold import of an SDK on a loaded 2-core machine takes seconds; this is only a backstop."""
LINE_LIMIT = 1 << 24


class WorkerStartFailed(Exception):
    """A pool could not start a worker; the cause is the cell's harness error."""


class WorkerError(Exception):
    """A worker could not start, died, or reported an exception that escaped the adapter:
    the cell is a harness error (a bug here, never an SDK's behaviour), unless the worker found it
    an SDK's own import failure (``missing_import``, :mod:`bench.sdk.failures`)."""

    missing_import: MissingImport | None = None


@dataclass(frozen=True)
class WorkerCommand:
    """How to start a worker for one environment."""

    python: Path
    target: str
    """``module:Class`` of the adapter, as registered."""
    log: Path | None = None
    """A file for the worker's stderr (SDK logs, warnings), unbounded; None: this process's
    ``sys.stderr``, which a run bounds (:func:`forward_stderr`)."""
    paths: tuple[str, ...] = ()
    """More of ``PYTHONPATH``, after the checkout: a user's project, for their own agent."""
    variables: tuple[tuple[str, str], ...] = ()
    """More environment variables: which of the user's agents the worker loads."""

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
        path = [str(CHECKOUT), *_source_root(self.target), *self.paths]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
        return env | dict(self.variables)


def _source_root(target: str) -> list[str]:
    """Where the adapter's top-level module lives, as the parent imports it: a third-party
    adapter (an entry-point plugin) is found by the worker there, beside the checkout."""
    top = target.partition(":")[0].split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin)
    root = origin.parent.parent if spec.submodule_search_locations else origin.parent
    # An installed plugin lives among the parent's packages: those must not shadow the release's.
    return [] if root.name in ("site-packages", "dist-packages") else [str(root)]


class Worker:
    """One subprocess running :mod:`bench.releases.worker`."""

    forwarder: asyncio.Task[None] | None = None
    """Reads the worker's stderr into this process's (:func:`forward_stderr`) when it has no log file."""
    cell: str | None = None
    """The cell the worker is running (:data:`bench.results.sdklog.CURRENT_CELL`), whose share
    of ``sdk.log`` its stderr counts against."""

    def __init__(self, process: asyncio.subprocess.Process, sdk_version: str) -> None:
        self.process = process
        self.sdk_version = sdk_version
        self.killed = False
        """Set at the kill: the process's return code arrives only once the loop reaps it."""
        self.unresponsive: str | None = None
        """Why the worker was given up on while a cell was waiting for it (its process state then)."""

    @classmethod
    async def start(cls, command: WorkerCommand, log: IO[bytes] | None) -> Worker:
        process = await asyncio.create_subprocess_exec(
            str(command.python), "-m", "bench.releases.worker", command.target,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=log if log is not None else asyncio.subprocess.PIPE,
            env=command.environment(), start_new_session=True, limit=LINE_LIMIT,
        )  # fmt: skip
        worker = cls(process, "")
        if process.stderr is not None:
            worker.forwarder = asyncio.ensure_future(forward_stderr(process.stderr, worker))
        try:
            hello = await asyncio.wait_for(worker._receive(), START_TIMEOUT_S)
        except BaseException:
            worker.kill()
            raise
        if not hello.get("ready"):
            worker.kill()
            raise WorkerError(f"worker for {command.target} with {command.python} did not start: {hello.get('error')}")
        worker.sdk_version = hello["sdk_version"]
        return worker

    async def run(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """The in-process adapter's ``run`` contract (the worker process calls ``Adapter.run``).
        Cancelled (time limit, call cap) or failed, the worker's state is unknown: it is killed,
        and its pool starts another."""
        self.cell = CURRENT_CELL.get()
        progress.note_worker(self.process.pid)  # its wait for a CPU extends the cell's stall limit
        try:
            reply = await self._exchange(encode_request(cell, task, endpoint))
        except BaseException:
            self.unresponsive = self._state()
            self.kill()
            raise
        if "harness" in reply:
            harness = reply["harness"]
            error = WorkerError(f"{harness['type']}: {harness['message']}\n(in the worker)\n{harness['traceback']}")
            error.missing_import = decode_missing_import(harness)  # an SDK's own import: bench.run.classify
            raise error
        return decode_result(reply["result"], task)

    async def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        await self.process.stdin.drain()
        while "progress" in (reply := await self._receive()):  # the worker's CLI at work (bench.sdk.progress)
            progress.note_progress(float(reply.get("ago_s", 0.0)))
        return reply

    async def _receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            code = await self.process.wait()
            how = f"code {code}" if code >= 0 else f"killed by {_signal_name(-code)}"
            raise WorkerError(f"worker exited ({how}) without answering; its last output is in sdk.log")
        return json.loads(line)

    def _state(self) -> str:
        """What the worker was doing when the cell stopped waiting for it: a cell that sent no
        request is the worker's failure (stopped by SIGSTOP, hung), not a proxy's."""
        import psutil

        try:
            state = psutil.Process(self.process.pid).status()
        except psutil.Error:
            state = "gone"
        how = " (stopped by a signal: SIGSTOP or SIGTSTP)" if state == psutil.STATUS_STOPPED else ""
        return (
            f"the release worker (pid {self.process.pid}) stopped responding: no answer and no request to the "
            f"provider before the cell's limit; its process was {state}{how}"
        )

    @property
    def alive(self) -> bool:
        return not self.killed and self.process.returncode is None

    def kill(self) -> None:
        """Kill the worker and anything it started (its own process group), by pid."""
        if self.alive:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def forward_stderr(stream: asyncio.StreamReader, worker: Worker) -> None:
    """A worker's stderr, as it comes, to this process's ``sys.stderr`` (a run's ``sdk.log``),
    as its current cell's output: bounded per cell and per run there (bench.results.sdklog), and
    always read, so a worker that floods it never blocks on a full pipe."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while chunk := await stream.read(1 << 16):
        CURRENT_CELL.set(worker.cell)  # this task's own context
        sys.stderr.write(decoder.decode(chunk))


class WorkerPool:
    """Up to ``size`` workers for one environment, each leased to one cell at a time."""

    def __init__(self, command: WorkerCommand, size: int) -> None:
        self.command = command
        self.size = max(1, size)
        self._leases = asyncio.Semaphore(self.size)
        """Held by each lease: at most ``size`` workers are busy, so at most ``size`` are alive."""
        self._idle: list[Worker] = []
        self._all: list[Worker] = []
        self._log: IO[bytes] | None = command.log.open("ab") if command.log is not None else None
        self.started = 0
        """Workers started so far (a killed one is replaced by a new start)."""
        self._forwarders: list[asyncio.Task[None]] = []

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[Worker]:
        """An idle worker, or a new one (started before the cell's clock starts); it goes back
        to the pool after the cell unless it was killed. With ``size`` leased, waits for one."""
        async with self._leases:
            try:
                worker = self._idle.pop() if self._idle else await self._start()
            except (WorkerError, OSError, TimeoutError) as error:
                raise WorkerStartFailed(str(error)) from error
            try:
                yield worker
            finally:
                if worker.alive:
                    self._idle.append(worker)

    async def _start(self) -> Worker:
        return self._started(await Worker.start(self.command, self._log))

    def _started(self, worker: Worker) -> Worker:
        self.started += 1
        self._all.append(worker)  # killed ones stay listed until close() reaps them
        if worker.forwarder is not None:
            self._forwarders.append(worker.forwarder)
        return worker

    async def close(self) -> None:
        for worker in self._all:
            if worker.alive and worker.process.stdin is not None:
                worker.process.stdin.close()
        for worker in self._all:
            try:
                await asyncio.wait_for(worker.process.wait(), 5.0)
            except TimeoutError:
                worker.kill()
                await worker.process.wait()
        self._all, self._idle = [], []
        forwarders, self._forwarders = self._forwarders, []
        await asyncio.gather(*forwarders, return_exceptions=True)  # every worker's stderr read to its end
        if self._log is not None:
            self._log.close()
            self._log = None
