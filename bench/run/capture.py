"""What a run catches around the SDKs it drives: the sockets they open (tracked, closed after the
run, and refused when they would leave the machine: :mod:`bench.run.egress`) and what they log,
print and warn (``sdk.log`` in the run's folder, not the terminal)."""

from __future__ import annotations

import logging
import socket
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.results import sdklog
from bench.results.sdklog import SdkLog
from bench.run import egress


class _SocketTracker:
    """Sockets opened while a run is in progress (the SDKs' HTTP clients, the provider's).

    SDKs cache their HTTP clients in module globals (pydantic-ai's cached client, LangChain's
    default httpx clients), so connections to the provider outlive the run that opened them.
    The run closes what is still open once its event loop has finished: nothing outlives it.
    """

    active: _SocketTracker | None = None

    def __init__(self) -> None:
        self.sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def __enter__(self) -> _SocketTracker:
        _install_socket_audit()
        _SocketTracker.active = self
        return self

    def __exit__(self, *exc: object) -> None:
        _SocketTracker.active = None

    def close_leftovers(self, peer: tuple[str, int]) -> int:
        """Close the still-open client connections to ``peer`` (the provider, now stopped)."""
        closed = 0
        for sock in list(self.sockets):
            try:
                connected_to = sock.getpeername()[:2] if sock.fileno() != -1 else None
            except OSError:
                continue  # not connected (a listening socket, or already shut down)
            if connected_to == peer:
                sock.close()
                closed += 1
        return closed


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """While a run is in progress: track the sockets it opens, and refuse what would leave the
    machine (:func:`bench.run.egress.check` raises in the caller, before anything is sent)."""
    tracker = _SocketTracker.active
    if tracker is None:
        return
    if event == "socket.__new__" and args and isinstance(args[0], socket.socket):
        tracker.sockets.add(args[0])
    elif event.startswith("socket."):
        egress.check(event, args)


_AUDIT_INSTALLED: list[bool] = []


def _install_socket_audit() -> None:
    if not _AUDIT_INSTALLED:  # audit hooks cannot be removed: install one, switched by `active`
        sys.addaudithook(_audit)
        _AUDIT_INSTALLED.append(True)


_PREVIOUS_HOOKS: list[Callable[[Any], Any]] = []


_PREVIOUS_STREAMS: list[tuple[Any, Any, Any]] = []
"""sys.stdout and sys.stderr as they were before each nested capture, with the log stream."""


def _capture_sdk_logs(directory: Path) -> logging.Handler:
    """SDKs log their own failures ("Error getting response") and warn; during a run those are
    data, not terminal noise: they go to ``sdk.log`` in the run folder, stderr stays for progress,
    through one :class:`bench.results.sdklog.SdkLog` (bounded per cell and per run)."""
    # What in-process SDKs print (pydantic-ai's first-run banner and its Logfire advertisement,
    # pydantic_ai/_display.py display_agent_banner, written to sys.stderr when it is a terminal;
    # agentmaker's prints; the Claude CLI's stderr lines the adapter forwards) goes to sdk.log
    # too: the terminal is the progress line's. Callers that print during a run hold their own
    # stream (the CLI's console is bound to the real stderr).
    stream = SdkLog(directory / "sdk.log")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.captureWarnings(True)
    _PREVIOUS_HOOKS.append(sys.unraisablehook)
    sys.unraisablehook = _unraisable_logger(stream, directory / "sdk.log")
    _PREVIOUS_STREAMS.append((sys.stdout, sys.stderr, stream))
    sys.stdout = sys.stderr = stream
    return handler


def _unraisable_logger(stream: SdkLog, path: Path) -> Callable[[Any], None]:
    """Errors in SDK finalisers (coroutines closed by a cancelled cell, collected whenever the
    garbage collector gets to them, even after an interrupt) go to sdk.log, not the terminal:
    through the run's stream while it is open, after it only while the file is under its limit."""

    def hook(unraisable: Any) -> None:
        line = f"{unraisable.err_msg or 'Exception ignored'}: {unraisable.exc_value!r} in {unraisable.object!r}\n"
        if not stream.closed:
            stream.write(line)
        elif not path.exists() or path.stat().st_size < sdklog.RUN_LIMIT:
            with path.open("a", encoding="utf-8") as log:
                log.write(line)

    return hook


def _release_sdk_logs(handler: logging.Handler, completed: bool) -> None:
    if _PREVIOUS_STREAMS:
        sys.stdout, sys.stderr, stream = _PREVIOUS_STREAMS.pop()
        stream.close()
    previous = _PREVIOUS_HOOKS.pop() if _PREVIOUS_HOOKS else sys.__unraisablehook__
    if completed:  # after an interrupt, finalisers keep running until exit: keep them quiet
        # The caller's own hook comes back (pytest's, when a run happens inside a test).
        sys.unraisablehook = previous
    logging.captureWarnings(False)
    logging.getLogger().removeHandler(handler)
    handler.close()
