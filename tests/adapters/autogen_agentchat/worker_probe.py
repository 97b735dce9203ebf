"""Run inside AutoGen's own environment by test_autogen_agentchat_worker.py: a few cells through
``adapters.autogen_agentchat.calls.run`` against run URLs the test opened, every ``socket.connect``
recorded; then a cell cancelled mid-request, as the runner's time limit cancels it. Prints one JSON
line: the addresses connected to, what each cell returned, the threads the cells started and the
tasks still pending on the loop, and the threads alive once the loop is closed."""

import asyncio
import contextlib
import json
import socket
import sys
import threading

CONNECTED: list[str] = []
_connect = socket.socket.connect


def _recording_connect(self: socket.socket, address: object) -> None:
    CONNECTED.append(str(address[0] if isinstance(address, tuple) else address))
    _connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _recording_connect  # type: ignore[method-assign,assignment]

from adapters.autogen_agentchat.adapter import SETTINGS, AutogenAdapter  # noqa: E402
from adapters.autogen_agentchat.calls import run  # noqa: E402
from bench.scenarios.tasks import get_task  # noqa: E402
from bench.sdk.adapter import Endpoint  # noqa: E402
from bench.tools import ToolPlan  # noqa: E402


def _started(before: set[int | None]) -> list[str]:
    """Threads not alive before the cells, but the loop's own default executor (``asyncio_N``:
    getaddrinfo and the like), which belongs to the caller's loop."""
    alive = threading.enumerate()
    return [t.name for t in alive if t.ident not in before and not t.name.startswith("asyncio_")]


async def main(plan: list[list[object]], stalled: str) -> dict[str, object]:
    cells = {(c.mode, c.protocol, c.variant): c for c in AutogenAdapter().cells()}
    before = {thread.ident for thread in threading.enumerate()}
    outputs = []
    for key, task_name, tool, root in plan:
        cell = cells[tuple(key)]  # type: ignore[arg-type]
        task = get_task(str(task_name)).with_tool(ToolPlan() if tool else None)
        result = await run(cell, task, Endpoint(str(root)), SETTINGS[cell.variant])
        outputs.append(result.exception is None and result.output is not None)
    cell = cells[("native", "openai-chat", "stream")]
    with contextlib.suppress(TimeoutError):  # cancelled mid-answer, as the runner's time limit does
        await asyncio.wait_for(run(cell, get_task("person"), Endpoint(stalled), SETTINGS["stream"]), timeout=1.0)
    await asyncio.sleep(0)  # one turn for the cancelled call's callbacks; no wait on time
    pending = [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return {"outputs": outputs, "threads": _started(before), "tasks": pending}


if __name__ == "__main__":
    report = asyncio.run(main(json.loads(sys.argv[2]), sys.argv[1]))
    report["after_loop"] = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    report["connected"] = sorted(set(CONNECTED))
    print(json.dumps(report))
