"""Serve the provider on loopback, in a background thread, for the runner, the tests and
``bench serve``.

The server gets its own thread and event loop so that an SDK that blocks its caller's loop
(or a synchronous client) can never starve the provider it is talking to.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from bench.adapter import Endpoint
from bench.behaviours import Script, Stochastic
from bench.provider.app import DEFAULT_RUN, ProviderApp, attempts_as_dicts
from bench.provider.ledger import AttemptRecord, RunState
from bench.tasks import Task, get_task


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
    saved = {name: os.environ.get(name) for name in PROXY_BYPASS_VARIABLES}
    present = [v.strip() for value in saved.values() if value for v in value.split(",") if v.strip()]
    merged = ",".join(dict.fromkeys([*present, *LOOPBACK_NAMES]))
    try:
        for name in PROXY_BYPASS_VARIABLES:
            os.environ[name] = merged
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class RunHandle:
    """One open run: its endpoint for the SDK, its ledger for the runner."""

    def __init__(self, provider: LocalProvider, state: RunState) -> None:
        self._provider = provider
        self.state = state
        self.run_id = state.run_id
        self.endpoint = Endpoint(root=f"{provider.base_url}/runs/{state.run_id}")

    @property
    def attempts(self) -> list[AttemptRecord]:
        return list(self.state.attempts)

    @property
    def model_calls(self) -> int:
        return sum(1 for record in self.state.attempts if record.attempt is not None)

    def cap_reached(self) -> asyncio.Future[None]:
        return self.state.cap_future()

    def close(self) -> None:
        self._provider.close_run(self.run_id)

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalProvider:
    """The fault-injecting provider on ``127.0.0.1:<ephemeral port>``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, record_bodies: bool = True) -> None:
        require_loopback(host)
        self.host, self.port = host, port
        self.record_bodies = record_bodies
        self.app = ProviderApp()
        self.app.admin = self._admin
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> LocalProvider:
        import uvicorn

        from bench.tokens import count_tokens

        count_tokens("warm up the tokenizer")  # load the vocabulary now, not on the first request

        # proto=IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets whose
        # proto says TCP, and accepted sockets inherit it. Without it, Nagle holds a response's
        # body behind its headers until the client's delayed ACK: ~40 ms per request.
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", access_log=False,
            timeout_graceful_shutdown=1, timeout_keep_alive=30,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        started = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            task = loop.create_task(self._server.serve(sockets=[sock]))
            loop.call_soon(started.set)
            loop.run_until_complete(task)
            loop.close()

        self._thread = threading.Thread(target=serve, name="misfit-provider", daemon=True)
        self._thread.start()
        started.wait(10)
        while not self._server.started and self._thread.is_alive():
            threading.Event().wait(0.005)
        return self

    def stop(self) -> None:
        for state in list(self.app.runs.values()):
            state.seal()
            state.closed.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> LocalProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def open_run(
        self,
        task: str | Task,
        script: list[Any] | None = None,
        then: Any = "repeat",
        stochastic: Stochastic | dict[str, Any] | None = None,
        run_id: str | None = None,
        call_cap: int | None = None,
        unit_seed: int = 0,
    ) -> RunHandle:
        """Open a run with its own URL prefix; the script decides each attempt's behaviour."""
        if isinstance(stochastic, dict):
            stochastic = Stochastic.model_validate(stochastic)
        state = RunState(
            run_id=run_id or uuid.uuid4().hex[:16],
            task=get_task(task) if isinstance(task, str) else task,
            script=Script(script, then=then, stochastic=stochastic, unit_seed=unit_seed),
            call_cap=call_cap,
            record_bodies=self.record_bodies,
        )
        if state.run_id in self.app.runs:
            raise ValueError(f"run {state.run_id!r} is already open")
        self.app.runs[state.run_id] = state
        return RunHandle(self, state)

    def close_run(self, run_id: str) -> None:
        state = self.app.runs.pop(run_id, None)
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
                return 200, {"run_id": run_id, "attempts": attempts_as_dicts(state)}
            if method == "DELETE" and rest == "":
                self.close_run(run_id)
                return 200, {"run_id": run_id, "closed": True}
        return None

    def _admin_open(self, body: bytes) -> tuple[int, Any]:
        try:
            spec = json.loads(body or b"{}")
            handle = self.open_run(
                task=spec.get("task", "person"),
                script=spec.get("script"),
                then=spec.get("then", "repeat"),
                stochastic=spec.get("stochastic"),
                run_id=spec.get("run_id"),
                call_cap=spec.get("call_cap"),
            )
        except (ValueError, KeyError, TypeError) as error:
            return 400, {"error": {"message": str(error), "type": "invalid_request_error"}}
        return 201, {
            "run_id": handle.run_id,
            "openai_base_url": handle.endpoint.openai_base_url,
            "anthropic_base_url": handle.endpoint.anthropic_base_url,
        }


__all__ = ["DEFAULT_RUN", "LocalProvider", "RunHandle"]
