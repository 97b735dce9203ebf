"""HTTP clients shared across a run's cells, as a user's own loop shares one.

Users build an HTTP client (or the whole SDK client) once and reuse it for every call; every
SDK here takes one from its caller for that reason. Building one per cell instead costs an SSL
context with the certificate bundle loaded (about 16-30 ms on a 2-core machine), several times
what the SDK's own call costs on loopback, so a run shares one client per key (an SDK and a
protocol) for as long as it lasts.

Within a run, three SDKs (LangChain on the OpenAI protocols, pydantic-ai, openai-agents) also
build each configuration's agent once and reuse it across its scenarios and reps (:func:`reused`),
as a user's loop does: the agent is built on the provider-wide endpoint, and :func:`routed` sets
the cell's run prefix in a context variable that the shared clients' request hook
(:func:`route_request`) puts back on each request path, so every request still reaches its own
cell's run by the same path as before. Each adapter says why its SDK's objects hold no per-run
state; what does (agentmaker's agent keeps a session history) is still built per cell. An SDK
object that takes no HTTP client to route (agentmaker's LLMClient) is reused per runner slot
instead, on the slot's stable route (``Adapter.stable_route``, bench.run.runner.Slot). The
clients hold no per-cell state: the provider routes by path, sets no cookies, and a connection
goes back to the pool only after a whole response (httpcore closes one whose request was
cancelled).

Adapters ask for :func:`shared` with their key and the SDK's own default-client factory and pass
the result through the SDK's documented parameter; outside :func:`sharing` (a test calling
``run_cell`` directly) they get None and the SDK builds its own client, exactly as before.
"""

from __future__ import annotations

import inspect
import os
import re
import ssl
from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from bench.core.environ import environment_set
from bench.sdk.adapter import Endpoint


class ClientPool:
    """The clients of one run, built on first use and closed when the run ends.

    Async HTTP clients are bound to the event loop that first used them, so a pool lives inside
    one loop (``sharing`` is entered in the coroutine that runs the cells)."""

    def __init__(self) -> None:
        self._clients: dict[Hashable, Any] = {}
        self.reuse = True
        """Whether :func:`routed` cells reuse SDK objects; ``benchmarks/overhead.py`` switches it
        off to time the per-cell build (the harness before reuse) side by side."""
        self.reused: dict[Hashable, Any] = {}
        """SDK objects reused across cells (:func:`reused`): dropped, not closed, at the end
        (what they hold open is a client of ``_clients``)."""

    def get[ClientT](self, key: Hashable, factory: Callable[[], ClientT]) -> ClientT:
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = factory()
        return client

    def __len__(self) -> int:
        return len(self._clients)

    async def aclose(self) -> None:
        """Close every client: async ones with ``aclose``, sync ones (LangChain builds a sync
        client next to the async one) with ``close``."""
        clients, self._clients, self.reused = list(self._clients.values()), {}, {}
        for client in clients:
            closer = getattr(client, "aclose", None) or client.close
            result = closer()
            if inspect.isawaitable(result):
                await result


_CURRENT: ContextVar[ClientPool | None] = ContextVar("misfit_bench_client_pool", default=None)


@asynccontextmanager
async def sharing() -> AsyncIterator[ClientPool]:
    """Share clients among the cells run inside this block (tasks created in it inherit the
    pool through their context); close them all at the end."""
    pool = ClientPool()
    token = _CURRENT.set(pool)
    try:
        yield pool
    finally:
        _CURRENT.reset(token)
        await pool.aclose()


def shared[ClientT](key: Hashable, factory: Callable[[], ClientT]) -> ClientT | None:
    """The current run's client for ``key`` (built by ``factory`` on first use), or None when no
    run is sharing: the caller then lets the SDK build its own, as it always did."""
    pool = _CURRENT.get()
    return None if pool is None else pool.get(key, factory)


@contextmanager
def lazy_trust_store() -> Iterator[None]:
    """Point the TLS trust store at the system's hashed certificate directory while the block
    runs (``SSL_CERT_DIR``, ``SSL_CERT_FILE`` unset), then restore both variables.

    Two SDKs take no HTTP client from their caller (agentmaker's LLMClient, LangChain's
    ChatAnthropic, whose own cache is keyed by the cell's base URL), so each of their cells
    builds one, and every new client builds an SSL context. Loading a CA bundle file parses all
    ~150 certificates (about 20 ms of CPU, most of such a cell's cost); a hashed directory holds
    the same system certificates and is read only when a certificate is verified, which never
    happens here: every request goes to the provider over plain HTTP on loopback. httpx reads
    both variables when a client is built (httpcore2/_ssl.py:21-24), so they hold for the whole
    run. Nothing changes on the wire. Without a hashed directory the variables are left alone.
    """
    directory = _hashed_certificate_directory()
    if directory is None:
        yield
        return
    with environment_set({"SSL_CERT_FILE": None, "SSL_CERT_DIR": directory}):
        yield


_HASHED = re.compile(r"[0-9a-f]{8}\.\d+")


def _hashed_certificate_directory() -> str | None:
    """OpenSSL's certificate directory, if it holds hash-named links (``5ad8a5d6.0``)."""
    for candidate in (os.environ.get("SSL_CERT_DIR"), ssl.get_default_verify_paths().openssl_capath, "/etc/ssl/certs"):
        if candidate and os.path.isdir(candidate) and any(map(_HASHED.fullmatch, os.listdir(candidate))):
            return candidate
    return None


_ROUTE: ContextVar[str | None] = ContextVar("misfit_bench_route", default=None)
"""The URL prefix of the cell running in this context (``/runs/<run_id>``), or None."""


@contextmanager
def routed(endpoint: Endpoint) -> Iterator[Endpoint | None]:
    """Route this context's requests through the shared clients to ``endpoint``'s run.

    Inside :func:`sharing`, yields the provider-wide endpoint (``endpoint`` without its
    ``/runs/<run_id>`` prefix) and, while the block runs, the shared clients' request hook
    (:func:`route_request`) puts the prefix back on every request sent from this context
    (tasks an SDK starts inherit it). So an SDK object built on the provider-wide endpoint
    holds nothing of one cell and can be reused across cells, as a user's loop reuses it, while
    each request still reaches the cell's own run by exactly the path it did before (the ledger's
    ``path`` is unchanged). Outside :func:`sharing` (no shared clients, so no hook), yields None:
    the caller builds its objects on ``endpoint`` itself, as before; so it does when the pool's
    ``reuse`` is off."""
    origin, marker, run = endpoint.root.rpartition("/runs/")
    pool = _CURRENT.get()
    if pool is None or not pool.reuse or not marker or "/" in run:
        yield None
        return
    token = _ROUTE.set(f"/runs/{run}")
    try:
        yield replace(endpoint, root=origin)
    finally:
        _ROUTE.reset(token)


def route_request(request: Any) -> None:
    """httpx request hook of the shared clients: prefix the path with the current cell's run
    (:func:`routed`); a request sent outside a routed cell, or already prefixed, is left as is."""
    prefix = _ROUTE.get()
    if prefix is not None and not request.url.path.startswith("/runs/"):
        request.url = request.url.copy_with(path=prefix + request.url.path)


async def route_request_async(request: Any) -> None:
    """:func:`route_request` for async clients (httpx awaits their hooks)."""
    route_request(request)


def routing[ClientT](client: ClientT, asynchronous: bool = True) -> ClientT:
    """``client`` (an httpx client, as an SDK's own factory builds it) with the request hook that
    sends :func:`routed` cells' requests to their run, set through httpx's public
    ``event_hooks``; a client shared by a run must have it before a routed cell uses it."""
    hooks = client.event_hooks  # type: ignore[attr-defined]
    hook = route_request_async if asynchronous else route_request
    client.event_hooks = {"request": [*hooks["request"], hook], "response": hooks["response"]}  # type: ignore[attr-defined]
    return client


def reusing() -> bool:
    """Whether this context's cells reuse SDK objects across cells: inside :func:`sharing`, with
    the pool's ``reuse`` on (``benchmarks/overhead.py`` turns it off to time a per-cell build)."""
    pool = _CURRENT.get()
    return pool is not None and pool.reuse


def reused[ObjectT](key: Hashable, factory: Callable[[], ObjectT]) -> ObjectT:
    """The current run's SDK object for ``key`` (an agent and its model, built by ``factory`` on
    first use on the provider-wide endpoint of :func:`routed`), reused by every cell of that key
    as a user's loop reuses its agent. Only for objects that hold no per-run state (checked per
    SDK in its adapter); outside :func:`sharing`, ``factory()`` each time."""
    pool = _CURRENT.get()
    if pool is None:
        return factory()
    found = pool.reused.get(key)
    if found is None:
        found = pool.reused[key] = factory()
    return found
