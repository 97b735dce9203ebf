"""``bench record``: a recording reverse proxy in front of a real provider (bench.cassettes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.common import fail, port_option
from bench.cli.exit_codes import ExitCode
from bench.cli.serve import stop_on_signals

if TYPE_CHECKING:
    from bench.cassettes import RecordingProxy
    from bench.own.adapter import OwnAgentAdapter


def record(
    upstream: Annotated[str, typer.Option(help="The API to record, e.g. https://api.openai.com.")],
    out: Annotated[Path, typer.Option(help="Folder the cassettes are written to (one JSON file per exchange).")],
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[int, port_option("Port (0 picks a free one).")] = 8788,
    redact_header: Annotated[
        list[str] | None, typer.Option("--redact-header", help="Another header never to write (repeatable).")
    ] = None,
    redact: Annotated[
        list[str] | None,
        typer.Option("--redact", help="A regular expression blanked out of every body written (repeatable)."),
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="Run your own agent (module:attr or a \\[\\[tool.bench.agents]] name) once on its declared prompt "
            "through the proxy, then stop; repeatable, 'all' for every declared agent.",
        ),
    ] = None,
) -> None:
    """Record every exchange with UPSTREAM through a proxy on loopback, until Ctrl-C.

    Point your SDK or agent at the proxy (OpenAI base URL http://HOST:PORT/v1, Anthropic base
    URL http://HOST:PORT) with your own key in its usual environment variable: the key is
    forwarded upstream and never written; auth headers never are, nor a credential field
    (api_key, token, secret...) of any body. An answer reaches the client whole; a cassette
    keeps at most 8 MiB of it, and a request body past 8 MiB is refused (docs/record-replay.md#limits). Replay with
    'bench run --cassettes OUT' or 'bench serve --cassettes OUT' (with the same --redact).
    With --agent, each agent runs once on its declared prompt with the key from OPENAI_API_KEY
    (ANTHROPIC_API_KEY for an Anthropic model) and the command ends: 0 when every agent ran
    (whatever its SDK answered), 2 for an agent that cannot be loaded or a key that is not set.
    """
    from bench.cassettes import RecordingProxy, Redaction

    try:
        redaction = Redaction(headers=frozenset(redact_header or ()), patterns=tuple(redact or ()))
        proxy = RecordingProxy(upstream, out, redaction, host=host, port=port)
    except ValueError as error:
        fail(str(error))
    agents = _agents(agent) if agent else None
    # the proxy alone waits for a signal; with --agent, Ctrl-C interrupts the agent's call itself
    stop = stop_on_signals() if agents is None else None
    try:
        proxy.start()
    except OSError as error:
        fail(f"cannot listen on {host}:{port}: {error.strerror or error} (choose another with --port, or --port 0)")
    typer.echo(f"OpenAI base URL:    {proxy.base_url}/v1")
    typer.echo(f"Anthropic base URL: {proxy.base_url}")
    if agents is not None:
        try:
            _record_agents(agents, proxy)
        except KeyboardInterrupt:
            proxy.stop()
            _summary(proxy, out, "interrupted: ")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        proxy.stop()
        _summary(proxy, out)
        return
    typer.echo(f"recording {proxy.upstream_origin} to {out}; Ctrl-C to stop", err=True)
    assert stop is not None  # set whenever no agent is recorded
    while not stop.wait(0.5):
        pass
    proxy.stop()
    _summary(proxy, out)


def _summary(proxy: RecordingProxy, out: Path, lead: str = "") -> None:
    """What was written, and loudly what was not whole: each answer cut, each exchange not written."""
    from bench.cassettes.record import MAX_ANSWER_BYTES

    for path in proxy.cut:
        typer.echo(f"cut: {path}: the answer passed {MAX_ANSWER_BYTES:,} bytes (the rest not recorded; "
                   "never replayed)", err=True)  # fmt: skip
    for line in proxy.unwritten:
        typer.echo(f"error: {line}", err=True)
    typer.echo(f"{lead}{len(proxy.written)} cassette(s) written to {out}", err=True)


def _agents(requested: list[str]) -> dict[str, OwnAgentAdapter]:
    """The agents to record and their keys checked, before anything listens (one line, exit 2)."""
    import os

    from bench.cassettes.record import key_variable
    from bench.own.adapter import load_agents
    from bench.own.config import OwnAgentError

    if "all" in requested and len(requested) > 1:
        others = ", ".join(name for name in requested if name != "all")
        fail(f"--agent all means every declared agent: give it alone, not with {others}")
    try:
        agents = load_agents([name for name in requested if name != "all"])
    except OwnAgentError as error:
        fail(str(error))
    for name, adapter in agents.items():
        if not os.environ.get(key_variable(adapter)):
            fail(f"agent {name!r}: set {key_variable(adapter)} to your key (it is forwarded upstream, never written)")
    return agents


def _record_agents(agents: dict[str, OwnAgentAdapter], proxy: RecordingProxy) -> None:
    import os

    from bench.cassettes.record import key_variable, record_agent

    for name, adapter in agents.items():
        before = len(proxy.written)
        result = record_agent(adapter, proxy, os.environ[key_variable(adapter)])
        said = f"; its SDK raised {type(result.exception).__name__}" if result.exception is not None else ""
        typer.echo(f"agent {name}: {len(proxy.written) - before} exchange(s) recorded{said}", err=True)
