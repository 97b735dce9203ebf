"""``bench upgrade``: should I take this release? (the library is ``bench.upgrade.decision``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.common import fail
from bench.cli.exit_codes import ExitCode


def upgrade_command(
    to: Annotated[str, typer.Option("--to", help="The release to take: SDK==VERSION (or SDK@latest).")],
    from_: Annotated[
        str | None, typer.Option("--from", help="The release you have: SDK==VERSION or @pinned (the default).")
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", help="Your agent (module:attr or a \\[\\[tool.bench.agents]] name; 'all': every one)."),
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write a JUnit file (one case per behaviour).")] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Write a markdown summary for a PR comment (under 60 KB).")
    ] = None,
    out: Annotated[
        Path, typer.Option("--results", "--out", help="Results root folder: the run of both releases goes there.")
    ] = Path("results"),
    cache: Annotated[Path | None, typer.Option("--cache", help="Release environment cache.")] = None,
) -> None:
    """Run your agent (or, without --agent, the built-in adapter) under both releases on the
    default suite and print the decision: your own try blocks, file:line, each once, with every
    cell whose new exception escapes them (issubclass on the class actually raised, in that
    release's environment), what changes per behaviour with cell counts, the cost old vs new.
    Exit codes: 0 nothing got worse, 1 a cell got worse or a handler stops catching, 5
    inconclusive, 2 usage or input error (a release that cannot be installed or built too).
    """
    from bench.upgrade.decision import UpgradeError, UpgradeRequest, run_upgrade, sides
    from bench.upgrade.render import EXIT, text
    from bench.upgrade.render import junit as junit_text
    from bench.upgrade.render import markdown as markdown_text

    try:
        chosen = sides(to, from_)
        agents = None if agent is None else tuple(a for a in agent if a != "all")
        request = UpgradeRequest(chosen, agents, Path("."), out, cache)
        decision = run_upgrade(request, warn=lambda message: typer.echo(message, err=True))
    except UpgradeError as error:
        fail(str(error))
    typer.echo(text(decision), nl=False)
    if junit is not None:
        junit.write_text(junit_text(decision), encoding="utf-8")
    if markdown is not None:
        markdown.write_text(markdown_text(decision), encoding="utf-8")
    raise typer.Exit(ExitCode(EXIT[decision.verdict]))
