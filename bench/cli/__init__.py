"""The ``bench`` command: a thin layer that parses arguments and calls library functions.

One module per command group; the library (``bench.*`` outside this package) never imports
this package. Data goes to stdout, progress and errors to stderr. Exit codes are declared once,
in ``bench.cli.exit_codes``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer._click import exceptions as click_errors
from typer.core import TyperGroup

from bench.cli.baseline import baseline_app
from bench.cli.exit_codes import ExitCode
from bench.cli.gate import gate_command
from bench.cli.listing import list_adapters
from bench.cli.merge import merge_command
from bench.cli.pick import pick_command
from bench.cli.publish import publish_command
from bench.cli.record import record
from bench.cli.releases import bisect_command, changelog_command, releases_app
from bench.cli.report import report_command
from bench.cli.run import run
from bench.cli.runs import runs_command
from bench.cli.scenarios import scenarios_app
from bench.cli.serve import serve
from bench.cli.signals import interrupts
from bench.cli.upgrade import upgrade_command
from bench.cli.view import view_command


class _OneLineUsageErrors(TyperGroup):
    """A usage error (``--reps 0``, a missing argument, an unknown option) is one line on stderr
    and exit 2, like every other input error, instead of Typer's boxed panel; and every command
    runs under the one signal policy (:mod:`bench.cli.signals`: SIGTERM interrupts as Ctrl-C
    does, exit 130)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """``TyperGroup.main``'s own parameters, so ``standalone_mode`` is passed exactly once."""
        with interrupts():
            if not standalone_mode:
                return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
            self._main_with_one_line_errors(args, prog_name, complete_var, windows_expand_args, **extra)

    def _main_with_one_line_errors(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        windows_expand_args: bool,
        **extra: Any,
    ) -> None:
        """Typer's main, not standalone; its errors turned into the one line and the exit code
        (a KeyboardInterrupt Typer already turns into its 130)."""
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except click_errors.NoArgsIsHelpError as error:
            error.show()
            sys.exit(ExitCode.USAGE)
        except click_errors.UsageError as error:
            where = f" (see '{error.ctx.command_path} --help')" if error.ctx is not None else ""
            message = " ".join(error.format_message().split())
            typer.echo(f"error: {message}{where}", err=True)
            sys.exit(ExitCode.USAGE)
        except click_errors.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        sys.exit(code if isinstance(code, int) else ExitCode.OK)


app = typer.Typer(
    cls=_OneLineUsageErrors,
    help="misfit-bench: what agent SDKs do when the model's answer does not fit the type.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(scenarios_app, name="scenarios")
app.command()(serve)
app.command()(record)
app.command()(run)
app.command("runs")(runs_command)
app.command("list")(list_adapters)
app.command("report")(report_command)
app.command("pick")(pick_command)
app.command("view")(view_command)
app.command("gate")(gate_command)
app.command("merge")(merge_command)
app.command("upgrade")(upgrade_command)
app.add_typer(baseline_app, name="baseline")
app.add_typer(releases_app, name="releases")
app.command("changelog")(changelog_command)
app.command("bisect")(bisect_command)
app.command("publish")(publish_command)

DEBUG = {"traceback": False}


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an internal error.")] = False,
) -> None:
    DEBUG["traceback"] = debug


def main() -> None:
    """Entry point: an internal error is one line and exit 3 unless --debug asks for more.

    The process ends with ``os._exit`` once the streams are flushed: the SDKs keep HTTP clients
    in module globals, and finalising those during interpreter shutdown (after every warnings
    filter is gone) prints pages of "unclosed transport" noise after the summary. Everything a
    command writes is on disk by then, so there is nothing left for shutdown to do.
    """
    code: int = ExitCode.OK
    try:
        app()
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    except Exception as error:
        if DEBUG["traceback"]:
            raise
        typer.echo(f"internal error: {type(error).__name__}: {error} (rerun with --debug for the traceback)", err=True)
        code = ExitCode.HARNESS_ERROR
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code))


__all__ = ["app", "main"]
