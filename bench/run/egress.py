"""Nothing a run does leaves the machine: every connection off loopback is refused, and noted.

The SDKs under test talk to the local provider on loopback. A user's agent is their own code,
though: a tool that calls a public API, a tracing exporter (openai-agents sends traces to
api.openai.com unless told otherwise), a telemetry ping. While a run is in progress the socket
audit hook (:mod:`bench.run.suite`, ``sys.addaudithook``) hands each connect, datagram and name
lookup to :func:`check`, which raises :class:`EgressRefused` (an ``OSError``, as a network that
refuses would) for any address that is not loopback, before any packet is sent. Each refusal is
noted on the cell that made it (:func:`noting`, carried by a context variable into the cell's
tasks and the threads they start with their context), and ends up in the cell's
``details.other`` as ``refused_connections``.

The hook sees the Python process only: a subprocess (the Claude CLI, a user's own) is not
guarded.
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DETAIL = "refused_connections"
"""The ``details`` key of a cell's refused connections (under ``details.other``)."""

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})

_CELL: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("misfit_refused", default=None)


class EgressRefused(ConnectionRefusedError):
    """A connection to an address off loopback, refused by misfit-bench during a run."""


def loopback(host: Any) -> bool:
    """Whether ``host`` (an address's host part: an IP, a name, a path of a Unix socket) stays
    on this machine: loopback IPs, ``localhost``, the unspecified address (a listener), and any
    non-IP family (Unix sockets)."""
    if not isinstance(host, str | bytes):
        return True  # AF_UNIX abstract names, AF_NETLINK tuples of ints...
    text = host.decode(errors="replace") if isinstance(host, bytes) else host
    text = text.split("%", 1)[0].strip("[]")  # fe80::1%eth0, [::1]
    if text.lower() in LOOPBACK_NAMES or text in ("", "0.0.0.0", "::"):
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False  # a name: resolving it would ask a DNS server, which is off the machine
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def check(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook's part: refuse ``event`` if it would reach off loopback."""
    host = _host(event, args)
    if host is None or loopback(host):
        return
    port = _port(event, args)
    where = f"{host}:{port}" if port is not None else str(host)
    refused = _CELL.get()
    if refused is not None:
        refused.append(where)
    raise EgressRefused(f"misfit-bench refused a connection to {where}: nothing leaves the machine during a run")


def _host(event: str, args: tuple[Any, ...]) -> Any:
    """The host ``event`` would reach, or None when it reaches none (another event, a Unix socket)."""
    if event in ("socket.connect", "socket.sendto") and len(args) >= 2:
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
            return None
        return address[0] if isinstance(address, tuple) and address else address
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex") and args:
        return args[0]
    return None


def _port(event: str, args: tuple[Any, ...]) -> Any:
    if event in ("socket.connect", "socket.sendto") and len(args) >= 2 and isinstance(args[1], tuple):
        return args[1][1] if len(args[1]) > 1 else None
    return args[1] if event == "socket.getaddrinfo" and len(args) > 1 else None


@contextmanager
def noting() -> Iterator[list[str]]:
    """The refusals of the code run inside (one cell, its tasks and the threads they start with
    their context), as ``host:port`` in order."""
    refused: list[str] = []
    token = _CELL.set(refused)
    try:
        yield refused
    finally:
        _CELL.reset(token)
