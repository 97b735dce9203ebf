"""Node workers, supervised as the release workers are (bench.releases.pool).

A :class:`NodeWorker` is a :class:`bench.releases.pool.Worker` whose process is
``node node/worker.mjs <driver>``: the same JSON-lines exchange (a ready line with the SDK's
version, then a request line per cell and a ``result`` or ``harness`` line back), the same kill
of its process group by pid when the cell is cancelled (stall limit, call cap) or the worker
dies or writes a line that is not JSON, and a :class:`NodeWorkerPool` that leases one worker per
cell and starts a fresh one after a kill. A run's pool lives as long as the run
(:func:`bench.sdk.clients.shared`) and closes every worker at its end: a worker exits when its
stdin closes, and one that does not within 5 s is killed.

The request is the release workers' (:func:`bench.releases.protocol.encode_request`) plus what a
process without the Python task objects needs: the task's prompt, JSON schema and type name.
What the worker prints on stderr (the SDK's warnings) reaches this process's ``sys.stderr``, a
run's bounded ``sdk.log``, as a release worker's does (:func:`bench.releases.pool.forward_stderr`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import IO, Any

from bench.node.setup import NODE_ROOT, WORKER
from bench.releases.pool import (
    LINE_LIMIT,
    START_TIMEOUT_S,
    Worker,
    WorkerCommand,
    WorkerError,
    WorkerPool,
    forward_stderr,
)
from bench.releases.protocol import decode_result, encode_request
from bench.results.sdklog import CURRENT_CELL
from bench.scenarios.tasks import Task
from bench.sdk import progress
from bench.sdk.adapter import AdapterResult, Cell, Endpoint


@dataclass(frozen=True)
class NodeCommand(WorkerCommand):
    """How to start a Node worker: ``python`` is the node binary, ``target`` the driver's path."""

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.pop("NODE_OPTIONS", None)  # a user's --require/--inspect must not enter the worker
        return env | {"NODE_NO_WARNINGS": "1"} | dict(self.variables)


def node_request(cell: Cell, task: Task, endpoint: Endpoint) -> dict[str, Any]:
    """The release workers' request, with the task as a Node driver needs it."""
    return encode_request(cell, task, endpoint) | {
        "prompt": task.prompt,
        "schema": task.schema,
        "schema_name": task.output_model.__name__,
    }


class NodeWorker(Worker):
    """One ``node node/worker.mjs`` process."""

    @classmethod
    async def start(cls, command: WorkerCommand, log: IO[bytes] | None) -> Worker:
        process = await asyncio.create_subprocess_exec(
            str(command.python), str(WORKER), command.target,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=log if log is not None else asyncio.subprocess.PIPE,
            env=command.environment(), cwd=NODE_ROOT, start_new_session=True, limit=LINE_LIMIT,
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
            raise WorkerError(f"Node worker for {command.target} did not start: {hello.get('error')}")
        worker.sdk_version = str(hello["sdk_version"])
        return worker

    async def run(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        """One cell, as :meth:`Worker.run`: cancelled or failed (died, garbage on its stdout),
        the worker is killed and its pool starts another for the next cell."""
        self.cell = CURRENT_CELL.get()
        progress.note_worker(self.process.pid)  # its wait for a CPU extends the cell's stall limit
        try:
            reply = await self._exchange(node_request(cell, task, endpoint))
        except BaseException:
            self.unresponsive = self._state()
            self.kill()
            raise
        if "harness" in reply:  # escaped the driver: this cell's harness error, the worker is fine
            harness = reply["harness"]
            raise WorkerError(f"{harness['type']}: {harness['message']}\n(in the Node worker)\n{harness['traceback']}")
        return decode_result(reply["result"], task)

    def _state(self) -> str:
        return super()._state().replace("the release worker", "the Node worker", 1)

    async def _receive(self) -> dict[str, Any]:
        try:
            return await super()._receive()
        except json.JSONDecodeError as error:
            raise WorkerError(f"the Node worker wrote a line that is not the protocol's JSON: {error}") from None


class NodeWorkerPool(WorkerPool):
    """Up to ``size`` Node workers for one driver: one per runner slot of the SDK."""

    async def _start(self) -> Worker:
        return self._started(await NodeWorker.start(self.command, self._log))

    def worker_pids(self) -> list[int]:
        """The pids of every worker this pool started that it has not closed (killed ones too,
        until :meth:`close` reaps them)."""
        return [worker.process.pid for worker in self._all]

    async def aclose(self) -> None:
        """Close at the end of the run (:class:`bench.sdk.clients.ClientPool` calls this)."""
        await self.close()
