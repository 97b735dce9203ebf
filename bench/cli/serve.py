"""``bench serve``: the fault-injecting provider alone, for any client to point at."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.common import fail, load_scenarios, port_option
from bench.core.suggest import did_you_mean

if TYPE_CHECKING:
    from bench.cassettes import Replay


def serve(
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[int, port_option("Port (0 picks a free one).")] = 8787,
    scenario: Annotated[str | None, typer.Option(help="Scenario name that scripts the default run.")] = None,
    scenario_path: Annotated[list[Path] | None, typer.Option("--scenarios", help="Scenario files or folders.")] = None,
    task: Annotated[str, typer.Option(help="Task of the default run when no scenario is given.")] = "person",
    cassettes: Annotated[
        Path | None, typer.Option(help="Answer from these recorded cassettes (bench record), faults on top.")
    ] = None,
    redact: Annotated[
        list[str] | None,
        typer.Option(
            "--redact",
            help="With --cassettes: the --redact patterns they were recorded with, and any text that changes "
            "per run (applied to recorded and new requests before matching).",
        ),
    ] = None,
    skip_bad: Annotated[
        bool,
        typer.Option(
            "--skip-bad", help="With --cassettes: skip a file that cannot be read (named, a warning), not refuse all."
        ),
    ] = False,
) -> None:
    """Serve the fault-injecting provider until Ctrl-C, for any client to point at.

    The default run answers under /v1/... (OpenAI base URL http://HOST:PORT/v1, Anthropic base
    URL http://HOST:PORT); POST /runs opens more runs (at most 512 open at once, a script of at
    most 1,000 steps), DELETE /runs/ID closes one, GET /runs/ID/ledger shows what was served.
    With --cassettes, the default run answers each request from the cassette matching it, the
    scenario's faults applied to the recorded answer (docs/record-replay.md).
    """
    from bench.provider import LocalProvider
    from bench.scenarios.behaviours import Script, Valid
    from bench.scenarios.tasks import TASKS

    if scenario is not None:
        known = {s.name: s for s in load_scenarios(scenario_path)}
        chosen = known.get(scenario)
        if chosen is None:
            fail(f"unknown scenario {scenario!r}{did_you_mean(scenario, known) or ';'} see 'bench scenarios list'")
        default_task, default_script = TASKS[chosen.task], chosen.build_script()
    elif task not in TASKS:
        fail(f"unknown task {task!r}; known tasks: {', '.join(sorted(TASKS))}")
    else:
        default_task, default_script = TASKS[task], Script([Valid()])
    if redact and cassettes is None:
        fail("--redact applies to --cassettes only")
    if skip_bad and cassettes is None:
        fail("--skip-bad applies to --cassettes only")
    replay = _replay(cassettes, redact, skip_bad) if cassettes is not None else None
    stop = stop_on_signals()  # before anything says it listens: a signal then stops it too
    try:
        provider = LocalProvider(host=host, port=port).start()
    except OSError as error:  # a busy port, a non-loopback address: say which
        fail(f"cannot listen on {host}:{port}: {error.strerror or error} (choose another with --port, or --port 0)")
    except ValueError as error:
        fail(str(error))
    from bench.provider.server import SERVE_LEDGER_LIMIT

    if scenario_path:  # what POST /runs {"scenario": NAME} may name; the library otherwise
        provider.scenarios = {s.name: s for s in load_scenarios(scenario_path)}
    provider.open_run(default_task, default_script, run_id="default", ledger_limit=SERVE_LEDGER_LIMIT, answers=replay)
    typer.echo(f"OpenAI base URL:    {provider.base_url}/v1")
    typer.echo(f"Anthropic base URL: {provider.base_url}")
    typer.echo(f"ledger:             {provider.base_url}/runs/default/ledger")
    typer.echo("serving on loopback; Ctrl-C to stop", err=True)
    while not stop.wait(0.5):
        pass
    provider.stop()


def warn_skipped(error: Exception) -> None:
    """``--skip-bad``: a cassette file left out, named on stderr."""
    typer.echo(f"warning: --skip-bad: skipped {error}", err=True)


def stop_on_signals() -> threading.Event:
    """Set by SIGINT or SIGTERM alike: stopping is how a server ends, so either is exit 0
    (:mod:`bench.cli.signals`; the group's policy restores its handlers once the command ends)."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _replay(folder: Path, redact: list[str] | None, skip_bad: bool = False) -> Replay:
    """The replay of ``folder``; a folder that cannot be read is one line and exit 2 (with
    ``skip_bad``, a file that cannot be read is a warning naming it, and left out)."""
    from bench.cassettes import CassetteError, Redaction, Replay

    try:
        return Replay.from_folder(folder, Redaction(patterns=tuple(redact or ())), warn_skipped if skip_bad else None)
    except CassetteError as error:
        fail(f"--cassettes {error}")
    except ValueError as error:
        fail(f"--cassettes {folder}: {error}")
