"""``bench record``: a recording reverse proxy in front of a real provider (bench.cassettes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail
from bench.cli.serve import stop_on_signals


def record(
    upstream: Annotated[str, typer.Option(help="The API to record, e.g. https://api.openai.com.")],
    out: Annotated[Path, typer.Option(help="Folder the cassettes are written to (one JSON file per exchange).")],
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = 8788,
    redact_header: Annotated[
        list[str] | None, typer.Option("--redact-header", help="Another header never to write (repeatable).")
    ] = None,
    redact: Annotated[
        list[str] | None,
        typer.Option("--redact", help="A regular expression blanked out of every body written (repeatable)."),
    ] = None,
) -> None:
    """Record every exchange with UPSTREAM through a proxy on loopback, until Ctrl-C.

    Point your SDK or agent at the proxy (OpenAI base URL http://HOST:PORT/v1, Anthropic base
    URL http://HOST:PORT) with your own key in its usual environment variable: the key is
    forwarded upstream and never written; auth headers never are. Replay with
    'bench run --cassettes OUT' or 'bench serve --cassettes OUT' (with the same --redact).
    """
    from bench.cassettes import RecordingProxy, Redaction

    try:
        redaction = Redaction(headers=frozenset(redact_header or ()), patterns=tuple(redact or ()))
        proxy = RecordingProxy(upstream, out, redaction, host=host, port=port)
    except ValueError as error:
        fail(str(error))
    stop = stop_on_signals()
    try:
        proxy.start()
    except OSError as error:
        fail(f"cannot listen on {host}:{port}: {error.strerror or error} (choose another with --port, or --port 0)")
    typer.echo(f"OpenAI base URL:    {proxy.base_url}/v1")
    typer.echo(f"Anthropic base URL: {proxy.base_url}")
    typer.echo(f"recording {proxy.upstream_origin} to {out}; Ctrl-C to stop", err=True)
    while not stop.wait(0.5):
        pass
    proxy.stop()
    typer.echo(f"{len(proxy.written)} cassette(s) written to {out}", err=True)
