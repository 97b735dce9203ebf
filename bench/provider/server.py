"""Serve the provider on loopback, in a background thread, for the runner, the tests and
``bench serve``.

The server gets its own thread and event loop so that an SDK that blocks its caller's loop
(or a synchronous client) can never starve the provider it is talking to.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bench.core.environ import environment_set
from bench.provider import admin
from bench.provider.app import DEFAULT_RUN, ProviderApp, attempts_as_dicts, too_large
from bench.provider.ledger import AttemptRecord, RunState
from bench.provider.source import AnswerSource
from bench.scenarios.behaviours import Script, Stochastic
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import Endpoint

if TYPE_CHECKING:
    from bench.scenarios.files import Scenario


def require_loopback(host: str) -> None:
    """The provider never listens beyond this machine: it has no auth and scripts faults."""
    if host == "localhost":
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"host {host!r} is not a loopback address") from None
    if not address.is_loopback:
        raise ValueError(f"host {host!r} is not a loopback address; the provider binds only to loopback")


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
PROXY_BYPASS_VARIABLES = ("NO_PROXY", "no_proxy")


@contextlib.contextmanager
def loopback_bypasses_proxies() -> Iterator[None]:
    """Add the loopback names to ``NO_PROXY``/``no_proxy`` while the block runs, then restore them.

    With ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` set (corporate machines, CI runners), every
    SDK's HTTP client, and the Claude CLI, which inherits the environment, otherwise sends the
    provider's loopback traffic to the proxy: cells fail with no model call, and with a real
    proxy the prompts leave the machine. httpx, urllib/aiohttp and Node's clients all read
    ``NO_PROXY`` when a client is built, so it must hold for the whole run."""
    current = (os.environ.get(name) for name in PROXY_BYPASS_VARIABLES)
    present = [v.strip() for value in current if value for v in value.split(",") if v.strip()]
    merged = ",".join(dict.fromkeys([*present, *LOOPBACK_NAMES]))
    with environment_set(dict.fromkeys(PROXY_BYPASS_VARIABLES, merged)):
        yield


IDLE_TIMEOUT_S = 10.0
"""A connection that has not finished sending a request's headers within this long is closed."""


def _idle_limited_h11() -> type:
    """uvicorn's h11 protocol with an idle timer from the moment a connection opens.

    uvicorn times out only keep-alive connections between requests; one that connects and then
    sends nothing (or half a request line) is held forever, so 20,000 of them exhausted the
    descriptors and filled the log with accept() tracebacks. Here the keep-alive timer is armed
    on connect and re-armed while a request's headers are incomplete."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class IdleLimitedH11(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_idle_timer()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                self._arm_idle_timer()

        def _arm_idle_timer(self) -> None:
            self._unset_keepalive_if_required()
            self.timeout_keep_alive_task = self.loop.call_later(IDLE_TIMEOUT_S, self._close_idle)

        def _close_idle(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

    return IdleLimitedH11


@dataclass
class Served:
    """A server :func:`serve_in_thread` started: the port it bound, and how to stop it."""

    server: Any
    thread: threading.Thread
    port: int

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_in_thread(app: Any, host: str, port: int, name: str) -> Served:
    """Serve the ASGI ``app`` on loopback ``host:port`` in its own thread and event loop, once
    it listens. The provider and ``bench record``'s proxy both serve this way."""
    import uvicorn

    require_loopback(host)
    # proto=IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets whose
    # proto says TCP, and accepted sockets inherit it. Without it, Nagle holds a response's
    # body behind its headers until the client's delayed ACK: ~40 ms per request.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", access_log=False,
        timeout_graceful_shutdown=1, timeout_keep_alive=30, http=_idle_limited_h11(),
    )  # fmt: skip
    server = uvicorn.Server(config)
    started = threading.Event()

    def serve() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        task = loop.create_task(server.serve(sockets=[sock]))
        loop.call_soon(started.set)
        loop.run_until_complete(task)
        loop.close()

    thread = threading.Thread(target=serve, name=name, daemon=True)
    thread.start()
    started.wait(10)
    while not server.started and thread.is_alive():
        threading.Event().wait(0.005)
    return Served(server, thread, bound)


class RunHandle:
    """One open run: its endpoint for the SDK, its ledger for the runner."""

    def __init__(self, provider: LocalProvider, state: RunState, route: str) -> None:
        self._provider = provider
        self.state = state
        self.run_id = state.run_id
        self.route = route
        """The URL segment that reaches the run (``/runs/<route>``): its id, or the stable route
        of a runner slot (:meth:`LocalProvider.open_run`)."""
        self.endpoint = Endpoint(root=f"{provider.base_url}/runs/{route}")

    @property
    def attempts(self) -> list[AttemptRecord]:
        return list(self.state.attempts)

    @property
    def calls_recorded(self) -> int:
        """Model calls in the ledger so far (a call held at the cap included; auxiliary requests
        such as ``count_tokens`` not)."""
        return sum(1 for record in self.state.attempts if record.attempt is not None)

    @property
    def last_progress(self) -> float:
        """When (``time.monotonic()``) a model call last reached the provider or was answered."""
        return self.state.last_progress

    def cap_reached(self) -> asyncio.Future[None]:
        return self.state.cap_future()

    def close(self) -> None:
        self._provider.close_run(self.route, self.state)

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


SERVE_LEDGER_LIMIT = 1_000
"""Attempts a run opened through ``bench serve`` keeps (the oldest go first); bodies over
:data:`bench.provider.ledger.MAX_KEPT_BODY_BYTES` are not kept. ``bench serve`` ran for days
kept every body it was sent: 188 -> 293 MB RSS over 20,000 requests."""


MAX_SERVE_RUNS = 512
"""Runs open at once that ``POST /runs`` will add to; past it the answer is 429 until a client
closes one (``DELETE /runs/ID``). A closed run is dropped at once, ledger and script, so no
closed run is ever kept at the expense of an open one, and an open run is never dropped. ``bench
run`` opens its runs in process, at most ``--concurrency`` (4 by default, 256 at most) at once;
``bench serve`` once kept every run posted (30,000 runs of 500 steps: 7.6 GB)."""


class LocalProvider:
    """The fault-injecting provider on ``127.0.0.1:<ephemeral port>``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, record_bodies: bool = True) -> None:
        require_loopback(host)
        self.host, self.port = host, port
        self.record_bodies = record_bodies
        self.app = ProviderApp()
        self.app.admin = self._admin
        self.scenarios: dict[str, Scenario] | None = None
        """What ``POST /runs`` may name (None: the scenario library)."""
        self._served: Served | None = None

    @property
    def base_url(self) -> str:
        """An IPv6 literal is bracketed (``http://[::1]:8787``): unbracketed, no client parses it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> LocalProvider:
        from bench.core.tokens import count_tokens

        count_tokens("warm up the tokenizer")  # load the vocabulary now, not on the first request
        self._served = serve_in_thread(self.app, self.host, self.port, "misfit-provider")
        self.port = self._served.port
        return self

    def stop(self) -> None:
        for state in list(self.app.runs.values()):
            state.seal()
            state.closed.set()
        if self._served is not None:
            self._served.stop()

    def __enter__(self) -> LocalProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def open_run(
        self,
        task: Task,
        script: Script,
        *,
        run_id: str | None = None,
        call_cap: int | None = None,
        ledger_limit: int | None = None,
        answers: AnswerSource | None = None,
        route: str | None = None,
    ) -> RunHandle:
        """Open a run with its own URL prefix: ``script`` decides each attempt's behaviour and
        ``task`` is the very object the adapter answers (the runner passes both, typed);
        ``answers`` (a replay from cassettes) answers each attempt instead of rendering it.

        ``ledger_limit``: keep only the last that many attempts (a long-lived ``bench serve``
        run); None keeps all (a runner's run lasts one cell, bounded by its call cap).

        ``route``: the URL segment (``/runs/<route>``) that reaches the run, when not its id: a
        runner slot's, the same for the slot's cells one after another, so an SDK object bound to
        its base URL serves them all (bench.run.runner.Slot). A route reaches one open run at a
        time; the run keeps its own id (the ledger's ``run_id``)."""
        state = RunState(
            run_id=run_id or uuid.uuid4().hex[:16],
            task=task,
            script=script,
            call_cap=call_cap,
            record_bodies=self.record_bodies,
            attempts=deque(maxlen=ledger_limit),
            answers=answers,
        )
        key = route or state.run_id
        if key in self.app.runs:
            raise ValueError(f"run {key!r} is already open")
        self.app.runs[key] = state
        return RunHandle(self, state, key)

    def open_script(
        self,
        task: str = "person",
        script: list[Any] | None = None,
        then: Any = "repeat",
        stochastic: Stochastic | dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
        call_cap: int | None = None,
        unit_seed: int = 0,
        ledger_limit: int | None = None,
        route: str | None = None,
    ) -> RunHandle:
        """Open a run from plain data (a task name and a script in short or long forms), for
        tests and benchmarks; ``POST /runs`` parses its body in bench.provider.admin."""
        if isinstance(stochastic, dict):
            stochastic = Stochastic.model_validate(stochastic)
        known = get_task(task)
        parsed = Script.parse(script, then=then, stochastic=stochastic, unit_seed=unit_seed)
        return self.open_run(known, parsed, run_id=run_id, call_cap=call_cap, ledger_limit=ledger_limit, route=route)

    def close_run(self, route: str, state: RunState | None = None) -> None:
        """Close the run at ``route`` (its id, unless it was opened on another route); with
        ``state``, only if that run is still the one there (a route's next run is never closed
        by its previous handle)."""
        if state is not None and self.app.runs.get(route) is not state:
            return
        state = self.app.runs.pop(route, None)
        if state is not None:
            state.seal()
            state.closed.set()

    def _admin(self, method: str, path: str, body: bytes) -> tuple[int, Any] | None:
        """The small JSON API ``bench serve`` users script runs with."""
        if method == "GET" and path == "/health":
            return 200, {"status": "ok", "runs": len(self.app.runs)}
        if method == "POST" and path == "/runs":
            return self._admin_open(body)
        if path.startswith("/runs/"):
            run_id, _, rest = path[len("/runs/") :].partition("/")
            state = self.app.runs.get(run_id)
            if rest not in ("ledger", ""):
                return None  # a protocol path: the app answers with that protocol's 404
            if state is None:
                return 404, {"error": {"message": f"unknown run {run_id!r}", "type": "not_found"}}
            if method == "GET" and rest == "ledger":
                kept = {"ledger_limit": state.attempts.maxlen} if isinstance(state.attempts, deque) else {}
                return 200, {"run_id": run_id, **kept, "attempts": attempts_as_dicts(state)}
            if method == "DELETE" and rest == "":
                self.close_run(run_id)
                return 200, {"run_id": run_id, "closed": True}
        return None

    def _admin_open(self, body: bytes) -> tuple[int, Any]:
        """``POST /runs``: 201 with the run's URLs, 400 with one line naming the field, 413 past
        :data:`bench.provider.admin.MAX_ADMIN_BODY_BYTES` (unparsed) or a script past
        ``MAX_SCRIPT_STEPS`` steps (unbuilt), 429 with :data:`MAX_SERVE_RUNS` runs open (unread)."""
        if len(self.app.runs) >= MAX_SERVE_RUNS:
            return 429, _too_many_runs(len(self.app.runs))
        if len(body) > admin.MAX_ADMIN_BODY_BYTES:
            refused = too_large("/runs", admin.MAX_ADMIN_BODY_BYTES)
            return refused.status, refused.body
        try:
            spec = admin.parse(body)
            task, script = admin.opened(spec, self._scenarios)
            handle = self.open_run(
                task, script, run_id=spec.run_id, call_cap=spec.call_cap, ledger_limit=SERVE_LEDGER_LIMIT
            )
        except admin.ScriptTooLong as error:
            return 413, _invalid(str(error), param="script", code="request_too_large")
        except ValidationError as error:  # a behaviour or stochastic mix, parsed by the script
            return 400, _invalid(admin.one_line(error))
        except (ValueError, KeyError, TypeError) as error:
            return 400, _invalid(str(error).strip("'\""))
        return 201, {
            "run_id": handle.run_id,
            "endpoint": handle.endpoint.root,
            "openai_base_url": handle.endpoint.openai_base_url,
            "anthropic_base_url": handle.endpoint.anthropic_base_url,
            "ledger": f"{self.base_url}/runs/{handle.run_id}/ledger",
        }

    def _scenarios(self) -> dict[str, Scenario]:
        """The scenarios ``POST /runs`` can name: ``scenarios`` if set (``bench serve
        --scenarios``), else the library, loaded on first use."""
        if self.scenarios is None:
            from bench.scenarios.files import default_scenarios

            self.scenarios = {scenario.name: scenario for scenario in default_scenarios()}
        return self.scenarios


def _invalid(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _too_many_runs(open_runs: int) -> dict[str, Any]:
    """The 429 of a full ``bench serve``, in the OpenAI envelope of a rate limit."""
    message = (
        f"{open_runs:,} runs are open, the most bench serve keeps ({MAX_SERVE_RUNS:,}); "
        "close one you are done with (DELETE /runs/ID) and post again"
    )
    return {"error": {"message": message, "type": "requests", "param": None, "code": "too_many_runs"}}


__all__ = ["DEFAULT_RUN", "LocalProvider", "RunHandle", "Served", "serve_in_thread"]
