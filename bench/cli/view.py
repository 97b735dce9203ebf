"""``bench view [RUN ...]``: the runs in a browser, served on loopback until Ctrl-C, or written
once as static files with ``--export DIR`` (a CI artefact that opens from the folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail, port_option


def view_command(
    runs: Annotated[
        list[str] | None, typer.Argument(help="Run folders or suite ids (default: every run under --results).")
    ] = None,
    results: Annotated[Path, typer.Option(help="Results root that suite ids are looked up in.")] = Path("results"),
    port: Annotated[int, port_option("Port on 127.0.0.1 (0 picks a free one).")] = 8765,
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    export: Annotated[Path | None, typer.Option(help="Write the pages and data to this folder instead.")] = None,
) -> None:
    """Runs, one run's pick (under the \\[tool.bench.pick] weights of ./pyproject.toml) and matrix
    (filter by SDK, release, mode, variant, protocol, fault family, outcome, realism), each cell's
    attempts with the requests the SDK sent and the responses served, and two runs side by side.
    Binds to loopback only and answers only the URL it prints (a new token at every start): the
    pages show every prompt the SDKs sent."""
    from bench.pick import PickInputError, resolve_weights
    from bench.results.store import ResultsError, resolve_run
    from bench.view.data import discover
    from bench.view.guard import new_token
    from bench.view.site import Site, ViewError, serve, url
    from bench.view.site import export as write_export

    try:
        unreadable: dict[str, str] = {}
        if runs:
            directories = [resolve_run(run, results) for run in runs]
        else:
            directories, unreadable = discover(results)
        for run_id, status in unreadable.items():
            typer.echo(f"bench view: skipped run {run_id}, {status.splitlines()[0]}", err=True)
        site = Site(directories, unreadable, resolve_weights(Path.cwd(), []))
        if export is not None:
            count = write_export(site, export)
            typer.echo(f"{export / 'index.html'} ({count} files, {len(site.runs)} runs)")
            return
        port = port or _free_port(host)
        token = new_token()
        address = url(host, port, token)
        line = f"bench view: {address} (Ctrl-C to stop)"
        serve(site, token, host, port, started=lambda _: typer.echo(line, err=True))
    except (ResultsError, ViewError, PickInputError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot serve on {host}:{port}: {error}")
    except KeyboardInterrupt:  # uvicorn stops on SIGINT or SIGTERM, then raises it again
        return  # stopped as asked: exit 0, as bench serve (bench.cli.signals)


def _free_port(host: str) -> int:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
