"""Run one plan in several shard processes side by side, written by the calling process.

The in-process SDKs and the provider share one interpreter, so a run on one process uses one
core at a time however many cells it keeps in flight. ``bench run --procs N`` splits the plan
into N interleaved slices and runs each in a child process (``python -m bench.run.shard``) with its
own provider, its own HTTP clients and the same per-process concurrency limits. The children
never touch the run folder's tables: each finished cell comes back over a pipe and the calling
process writes it, so the run has one writer (the one holding the folder), one progress bar,
and an interrupted run keeps every cell a child finished.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from bench.planner import CellPlan
from bench.run.runner import CellRecord

CELLS_PER_PROCESS = 100
"""With ``--procs`` left to its default, at most one process per this many cells: a child pays
about 3-5 s of CPU to import the SDKs before its first cell, more than a small run's cells cost."""

STOP_GRACE_S = 15.0
"""How long an interrupted child gets to cancel its cells and exit before it is killed."""


class ShardProcessError(RuntimeError):
    """A child process ended without finishing its slice (a harness bug or a killed process)."""


def process_count(requested: int | None, cells: int) -> int:
    """How many processes run ``cells`` runnable cells: ``requested`` when given (never more
    than there are cells), else one per core and per ``CELLS_PER_PROCESS`` cells."""
    if requested is not None:
        return max(1, min(requested, cells))
    return max(1, min(os.cpu_count() or 1, -(-cells // CELLS_PER_PROCESS)))


def run_in_processes(
    job: dict[str, Any], plans: Sequence[CellPlan], procs: int, record: Callable[[CellRecord], None]
) -> int:
    """Run the finished ``plans`` of ``job`` (what :func:`bench.run.suite.run_shard_job` takes) in
    ``procs`` children, each sent an interleaved slice of them (pickled on its stdin, as the parent
    planned them: a child plans nothing), calling ``record`` in this thread for every cell as it
    finishes.

    Returns the client sockets the children closed after their runs. On an interrupt the
    children are stopped, the cells they finished are still recorded, and the interrupt goes on.
    """
    inbox: queue.Queue[tuple[int, Any]] = queue.Queue()
    started = [_start(job, plans[index::procs], index, inbox) for index in range(procs)]
    children = [child for child, _ in started]
    finished: dict[int, int] = {}
    try:
        while len(finished) < procs:
            index, item = inbox.get()
            if isinstance(item, CellRecord):
                record(item)
            else:
                finished[index] = item
    except BaseException:
        _stop(children)
        for _, reader in started:  # a reader ends when its child's pipe closes
            reader.join(timeout=STOP_GRACE_S)
        _drain(inbox, record)
        raise
    failed = [(i, child.wait()) for i, child in enumerate(children)]
    failed = [(i, code) for i, code in failed if code != 0 or finished[i] < 0]
    if failed:
        index, code = failed[0]
        raise ShardProcessError(
            f"shard process {index + 1} of {procs} exited with code {code} before finishing its cells "
            "(its stderr is above); the finished cells are written: bench run --resume RUN runs the rest"
        )
    return sum(finished.values())


def _start(
    job: dict[str, Any], plans: Sequence[CellPlan], index: int, inbox: queue.Queue[tuple[int, Any]]
) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.run.shard", str(write_end)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,  # the records travel on their own pipe; stray prints must not mix in
        pass_fds=(write_end,),
    )
    os.close(write_end)
    assert child.stdin is not None
    child.stdin.write(pickle.dumps({**job, "plans": tuple(plans)}))
    child.stdin.close()
    reader = os.fdopen(read_end, "rb")
    thread = threading.Thread(target=_forward, args=(reader, index, inbox), daemon=True)
    thread.start()
    return child, thread


def _forward(reader: IO[bytes], index: int, inbox: queue.Queue[tuple[int, Any]]) -> None:
    """Pass a child's frames to the writing thread; -1 at the end means it never said it was done
    (it died, perhaps mid-frame: every whole frame before that is still passed on)."""
    done = -1
    try:
        with reader:
            for item in _frames(reader):
                if isinstance(item, CellRecord):
                    inbox.put((index, item))
                else:
                    done = int(item)
    finally:
        inbox.put((index, done))


def _frames(reader: IO[bytes]) -> Iterator[Any]:
    """Whole frames until the end of the stream; a frame cut short by a dying child ends it."""
    while len(header := reader.read(4)) == 4:
        size = int.from_bytes(header, "big")
        if len(body := reader.read(size)) < size:
            return
        yield pickle.loads(body)


def send(stream: IO[bytes], item: CellRecord | int) -> None:
    """One frame to the parent: a finished cell, or (last) the sockets closed after the run."""
    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(4, "big") + data)
    stream.flush()


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """Interrupt the children like Ctrl-C does (they cancel their cells), kill any that hang."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    for child in children:
        try:
            child.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _drain(inbox: queue.Queue[tuple[int, Any]], record: Callable[[CellRecord], None]) -> None:
    """Record the cells the children finished before they stopped."""
    while True:
        try:
            _, item = inbox.get_nowait()
        except queue.Empty:
            return
        if isinstance(item, CellRecord):
            record(item)
