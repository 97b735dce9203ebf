"""One signal policy for every command: SIGTERM (a CI job cancelled, a container stopped) means
what Ctrl-C means, an interrupt.

Every command runs inside :func:`interrupts` (``bench.cli``'s group installs it): SIGINT raises
``KeyboardInterrupt`` (set explicitly: a shell starts background jobs with SIGINT ignored), and
SIGTERM is turned into a SIGINT, so asyncio cancels a run's cells cleanly and every command
takes its interrupt on the same path. A command that is interrupted says in one line what it
left on disk and exits 130 (``ExitCode.INTERRUPTED``), never a traceback, never killed by the
signal (-15/143). ``bench serve`` and ``bench view``, whose normal end is a signal, stop on
either one the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM both interrupt (``KeyboardInterrupt``) inside the block; the handlers
    before it come back after (a command run in-process, by a test, leaves none behind)."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _as_sigint)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _as_sigint(signum: int, frame: object) -> None:
    """SIGTERM delivered as the SIGINT it stands for: asyncio (which handles SIGINT in a running
    loop) then cancels the running cells exactly as on Ctrl-C."""
    os.kill(os.getpid(), signal.SIGINT)


def folder_identity(path: Path) -> tuple[int, int] | None:
    """What tells a folder from the one that replaced it (a swap renames a new folder into place):
    its device and inode, or None when there is none."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
