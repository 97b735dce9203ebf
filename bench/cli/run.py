"""``bench run``: the matrix against the local provider, with a progress bar and a summary."""

from __future__ import annotations

import errno
import gc
import sys
import warnings
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from bench.cli.common import fail, next_steps
from bench.cli.exit_codes import ExitCode
from bench.core.vocabulary import Outcome
from bench.results.store import ResultsError
from bench.scenarios.files import SCENARIO_DIR, ScenarioError

if TYPE_CHECKING:
    from bench.planner import CellCacheRequest, SuiteRequest


def _set(values: list[str] | None) -> frozenset[str] | None:
    return frozenset(values) if values else None


Names = list[str] | None

SdkOption = Annotated[Names, typer.Option("--sdk", help="Adapter(s) to run (default: all installed).")]
AgentOption = Annotated[
    Names,
    typer.Option(
        "--agent",
        help="Your own agent: module:attr (an agent object, or a factory taking the model handle) or a "
        "\\[\\[tool.bench.agents]] name from ./pyproject.toml; 'all' runs every declared agent.",
    ),
]
ModeOption = Annotated[Names, typer.Option("--mode", help="tool, native, prompted.")]
VariantOption = Annotated[Names, typer.Option("--variant", help="default, hardened, stream, ...")]
ProtocolOption = Annotated[Names, typer.Option("--protocol", help="openai-chat, openai-responses, anthropic-messages.")]
ScenarioOption = Annotated[Names, typer.Option("--scenario", help="Scenario name(s).")]
FaultOption = Annotated[Names, typer.Option("--fault", help="Fault label or behaviour, e.g. malformed.")]
SuiteOption = Annotated[
    str, typer.Option(help="default, full (adds what is slow by nature) or field (the failures users reported).")
]
ScenarioPathsOption = Annotated[list[Path] | None, typer.Option("--scenarios", help="Scenario files or folders.")]
RepsOption = Annotated[int, typer.Option(min=1, help="Repetitions per cell.")]
SeedOption = Annotated[int, typer.Option(help="Seed for stochastic scenarios.")]
CallCapOption = Annotated[int, typer.Option(min=1, help="Model calls after which a cell is a runaway.")]
TimeLimitOption = Annotated[
    float | None,
    typer.Option(
        help="Seconds a cell may go without progress (no model call reaching the provider or answered) "
        "before it is a timeout (default: per adapter, 30; 60 for the Claude CLI)."
    ),
]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="Cells at once (each adapter has its own cap too).")]
RecordBodiesOption = Annotated[
    bool, typer.Option(help="Store each request body and response served in the attempts table (bench view).")
]
OutOption = Annotated[
    Path,
    typer.Option(
        "--results", "--out", help="Results root folder, as bench view, runs, pick and gate name it (--out: the same)."
    ),
]
"""``--results``, the results root's one name across the commands; ``--out`` still works."""
ProgressOption = Annotated[bool | None, typer.Option(help="Progress bar on stderr (default: when a terminal).")]
WideOption = Annotated[bool, typer.Option(help="Landing matrix with one column per scenario (wide screens).")]
ShardOption = Annotated[
    str | None, typer.Option(help="Run only slice I of N (e.g. 2/4), by a stable hash of the cell.")
]
ResumeOption = Annotated[
    str | None, typer.Option(help="Finish an interrupted run (path or suite id): only its missing cells run.")
]
RerunOption = Annotated[
    str | None,
    typer.Option(help="Run again, in place, the cells of a finished run (path or suite id) with --outcome."),
]
OutcomeOption = Annotated[
    Names, typer.Option("--outcome", help="With --rerun: the outcomes to run again, e.g. timeout,harness_error.")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan (cells per SDK, a time estimate) and run nothing.")
]
ListOption = Annotated[
    bool,
    typer.Option(
        "--list",
        help="With --dry-run: every cell of the plan, one tab-separated line each (what the run would drive).",
    ),
]
ProcsOption = Annotated[
    int | None,
    typer.Option(
        min=1, max=64, help="Processes running cells side by side (default: one per core, fewer for small runs)."
    ),
]
ExecutorOption = Annotated[
    str,
    typer.Option(
        help="Where cells run: local (this machine, --procs processes) or ray (Ray tasks on the cluster at "
        "RAY_ADDRESS, or a local one; pip install 'misfit-bench\\[ray]')."
    ),
]
CassettesOption = Annotated[
    Path | None,
    typer.Option(help="Answer every cell from these recorded cassettes (bench record), the faults on top."),
]
RedactOption = Annotated[
    Names,
    typer.Option(
        "--redact",
        help="With --cassettes: the --redact patterns they were recorded with, and any text that changes per "
        "run (applied to recorded and new requests before matching).",
    ),
]
SkipBadOption = Annotated[
    bool,
    typer.Option(
        "--skip-bad", help="With --cassettes: skip a file that cannot be read (named, a warning), not refuse all."
    ),
]
TasksOption = Annotated[
    str,
    typer.Option(
        help="builtin (each scenario's own task) or cassettes: with --cassettes, tasks drawn from the "
        "recorded answers (their prompt, schema and answer), each request answered from its task's recording.",
    ),
]
CacheOption = Annotated[
    bool,
    typer.Option(
        "--cache/--no-cache",
        help="Reuse the rows of cells whose deciding inputs (code, adapter, SDK environment, scenario, cell, "
        "options) a past run already measured (the cell cache); --no-cache runs every cell.",
    ),
]
CacheOnlyOption = Annotated[
    bool, typer.Option("--cache-only", help="Refuse (exit 2, before any cell runs) when a cell is not in the cache.")
]
VerifyCacheOption = Annotated[
    int,
    typer.Option(
        "--verify-cache",
        min=0,
        max=1_000_000,
        help="Run N cached cells again (drawn at random) and exit 1 naming any that disagrees with its cached row.",
    ),
]
CellCacheOption = Annotated[
    Path | None,
    typer.Option(
        "--cell-cache",
        help="The cell cache's folder (default: $MISFIT_BENCH_CELL_CACHE, else "
        "~/.cache/misfit-bench/cells; MISFIT_BENCH_CELL_CACHE=off: no cache).",
    ),
]
ReleaseOption = Annotated[
    Names,
    typer.Option(
        "--release",
        help="An SDK release to measure, in its own environment: SDK==VERSION, SDK@latest, SDK@pinned "
        "(in-process), or SDK for its \\[tool.bench.releases] list; repeatable.",
    ),
]


def run(
    ctx: typer.Context,
    sdk: SdkOption = None,
    agent: AgentOption = None,
    mode: ModeOption = None,
    variant: VariantOption = None,
    protocol: ProtocolOption = None,
    scenario: ScenarioOption = None,
    fault: FaultOption = None,
    suite: SuiteOption = "default",
    scenario_paths: ScenarioPathsOption = None,
    reps: RepsOption = 1,
    seed: SeedOption = 0,
    call_cap: CallCapOption = 12,
    time_limit: TimeLimitOption = None,
    concurrency: ConcurrencyOption = 4,
    record_bodies: RecordBodiesOption = True,
    out: OutOption = Path("results"),
    progress: ProgressOption = None,
    wide: WideOption = False,
    shard: ShardOption = None,
    resume: ResumeOption = None,
    rerun: RerunOption = None,
    outcome: OutcomeOption = None,
    dry_run: DryRunOption = False,
    list_plans: ListOption = False,
    procs: ProcsOption = None,
    executor: ExecutorOption = "local",
    release: ReleaseOption = None,
    cassettes: CassettesOption = None,
    redact: RedactOption = None,
    skip_bad: SkipBadOption = False,
    tasks: TasksOption = "builtin",
    cache: CacheOption = True,
    cache_only: CacheOnlyOption = False,
    verify_cache: VerifyCacheOption = 0,
    cell_cache: CellCacheOption = None,
) -> None:
    """Run SDKs x modes x variants x scenarios against the local provider; write parquet.

    Cells are written as they finish; Ctrl-C or SIGTERM leaves a readable run of everything
    finished (exit 130), which --resume completes; --rerun RUN --outcome timeout re-runs chosen
    cells of a finished run in place; both take the run's recorded settings (of this command's
    flags only --procs, --executor, --results, --progress and --wide apply; others given are refused in one line).
    --agent with --release runs your agent in each release's environment, your project's
    dependencies installed beside the release (a conflict with it: one line, exit 2).
    Exit codes: 0 done, 2 usage or input error (an empty plan too, or a --release whose
    environment could not be built: the others still run), 3 harness error (a bug in
    misfit-bench), 130 interrupted.
    """
    from bench.run.plan import Filters, parse_shard
    from bench.run.runner import RunOptions
    from bench.run.suite import SuiteRequest

    if suite not in ("default", "full", "field"):
        fail(f"unknown suite {suite!r}; expected 'default', 'full' or 'field'")
    if executor not in ("local", "ray"):
        fail(f"unknown executor {executor!r}; expected 'local' or 'ray'")
    if executor == "ray" and procs is not None:
        fail("--procs applies to --executor local; on Ray each task is a process of its own (one CPU each)")
    try:
        shard_spec = parse_shard(shard) if shard else None
    except ValueError as error:
        fail(str(error))
    request = SuiteRequest(
        sdks=tuple(sdk or ()),
        filters=Filters(_set(mode), _set(variant), _set(protocol), _set(scenario), _set(fault)),
        suite=suite,
        scenario_paths=tuple(scenario_paths or (SCENARIO_DIR,)),
        reps=reps,
        seed=seed,
        options=RunOptions(
            call_cap=call_cap,
            time_limit_s=time_limit,
            concurrency=concurrency,
            record_bodies=record_bodies,
            cassettes=str(cassettes.resolve()) if cassettes else None,
            redact=tuple(redact or ()),
            skip_bad=skip_bad,
        ),
        results_root=out,
        shard=shard_spec,
        agents=None if agent is None else tuple(a for a in agent if a != "all"),
        procs=procs,
        executor=executor,
        releases=tuple(release or ()),
        tasks=tasks,
    )
    outcomes = _outcomes(outcome, rerun)
    if resume is not None and rerun is not None:
        fail("--resume and --rerun go separately: --resume finishes an interrupted run, --rerun a complete one")
    if resume is not None or rerun is not None:
        if dry_run:
            fail("--dry-run prints the plan of a new run; it does not take --resume or --rerun")
        _refuse_given(ctx, "--resume" if resume is not None else "--rerun", RECORDED_RUN_FLAGS)
    if list_plans and not dry_run:
        fail("--list prints the cells of a plan; it goes with --dry-run")
    if dry_run:
        _refuse_given(ctx, "--dry-run", DRY_RUN_FLAGS)
    _check_cassettes(request.options.cassettes, request.options.redact, tasks, skip_bad)
    if dry_run:
        _dry_run(request, list_plans)
        return
    if resume is None and rerun is None:
        request = replace(request, cell_cache=_cell_cache(cache, cache_only, verify_cache, cell_cache))
    show = sys.stderr.isatty() if progress is None else progress
    _finish(_start(request, resume, rerun, outcomes, show), wide)


def _cell_cache(use: bool, only: bool, verify: int, folder: Path | None) -> CellCacheRequest | None:
    """The cell cache the run uses (None: every cell runs); a flag that needs the cache without
    one is refused in one line."""
    from bench.planner import CellCacheRequest
    from bench.run.cache import default_folder

    chosen = folder or default_folder()
    if not use or chosen is None:
        why = "--no-cache" if not use else "MISFIT_BENCH_CELL_CACHE=off"
        for flag, given in (("--cache-only", only), ("--verify-cache", verify > 0), ("--cell-cache", folder)):
            if given:
                fail(f"{flag} needs the cell cache, which {why} turns off")
        return None
    if only and verify:
        fail("--cache-only runs no cell, so it cannot --verify-cache: give one of them")
    return CellCacheRequest(chosen, only=only, verify=verify)


def _start(request: SuiteRequest, resume: str | None, rerun: str | None, outcomes: frozenset[str], show: bool) -> Path:
    """Run ``request`` (or resume, or rerun, a recorded run) with the progress line; an interrupt
    names what was written and exits 130."""
    from bench.run.suite import SuiteError, run_suite

    out = request.results_root
    latest_before = _latest(out)
    target: Path | None = None
    try:
        if resume is not None or rerun is not None:
            from bench.results.store import resolve_run
            from bench.run.rerun import rerun_suite
            from bench.run.suite import resume_suite

            target = resolve_run(resume if resume is not None else rerun, out)
            procs, executor = request.procs, request.executor
            if rerun is not None:
                again = partial(rerun_suite, outcomes=outcomes, procs=procs, executor=executor)
                return _run_with_progress(target, again, show)
            return _run_with_progress(target, partial(resume_suite, procs=procs, executor=executor), show)
        return _run_with_progress(request, run_suite, show)
    except (SuiteError, ScenarioError, ResultsError) as error:
        fail(str(error))
    except OSError as error:
        if error.errno not in WRITE_FAILURES:
            raise
        _write_failed(error, target or (latest if (latest := _latest(out)) != latest_before else None))
    except KeyboardInterrupt:
        _quiet_shutdown()
        written = target or (latest if (latest := _latest(out)) != latest_before else None)
        if written is None:
            typer.echo("interrupted before any cell was written", err=True)
        else:
            typer.echo(
                f"interrupted: the cells finished so far are written to {written}; "
                f"finish with: bench run --resume {written}",
                err=True,
            )
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        # SDK clients leaked past the run are collected at exit; their ResourceWarnings are
        # already in sdk.log, and must not spill onto the terminal after the summary.
        warnings.simplefilter("ignore", ResourceWarning)


WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})
"""Errors of the machine, not of misfit-bench: a full disk, a read-only or foreign results folder."""


def _write_failed(error: OSError, written: Path | None) -> NoReturn:
    """One line and exit 2 for a results folder the run cannot write to: what was written (the run
    says ``interrupted``, not ``running``) and how to finish it once the disk allows."""
    what = f"cannot write {error.filename}: {error.strerror}" if error.filename else f"cannot write: {error}"
    if written is None:
        fail(f"{what}; nothing was run (is the results folder writable?)")
    fail(f"{what}; the cells finished so far are in {written}; once it can be written: bench run --resume {written}")


def _finish(directory: Path, wide: bool) -> None:
    """The summary and the releases that could not be built, both printed; then the exit code:
    3 for harness errors, else 2 for a release whose environment failed, else 0."""
    harness_errors = _print_summary(directory, wide)
    environment_errors = _environment_errors(directory)
    if disagreements := _cache_said(directory):
        for line in disagreements:
            typer.echo(f"error: --verify-cache: {line}", err=True)
        raise typer.Exit(ExitCode.GATE_FAILED)
    if misused := _misused_handle(directory):
        fail(f"{misused[0]} (fix the factory; these cells measured nothing)")
    if harness_errors:
        raise typer.Exit(ExitCode.HARNESS_ERROR)
    if environment_errors:
        raise typer.Exit(ExitCode.USAGE)


def _cache_said(directory: Path) -> list[str]:
    """One line of what the cell cache served (and from which runs); the cells ``--verify-cache``
    found changed."""
    from bench.results.store import read_manifest

    used = read_manifest(directory).get("cell_cache")
    if not used:
        return []
    origins = ", ".join(f"{n} from {suite}" for suite, n in sorted(used["served_from"].items()))
    typer.echo(
        f"cell cache: {used['served']} cells served ({origins or 'none'}), {used['stored']} stored, "
        f"{used['not_cacheable']} not cacheable (own agents and types), {used['verified']} verified "
        f"({used['folder']}; --no-cache runs every cell)",
        err=True,
    )
    return list(used["disagreements"])


def _misused_handle(directory: Path) -> list[str]:
    """What a user's factory did wrong, from cells that failed on the model handle's own API."""
    from bench.results.store import read_table
    from bench.run.classify import usage_errors

    runs = read_table(directory, "runs").to_pandas()
    return usage_errors(list(runs["exception_type"]), list(runs["exception_message"]), list(runs["model_calls"]))


RECORDED_RUN_FLAGS = frozenset({"resume", "rerun", "outcome", "out", "progress", "wide", "procs", "executor"})
"""What ``--resume`` and ``--rerun`` take from the command line; every other setting is the
run's own, from its manifest."""


DRY_RUN_FLAGS = frozenset(
    {"sdk", "agent", "mode", "variant", "protocol", "scenario", "fault", "suite", "scenario_paths", "reps", "seed",
     "call_cap", "time_limit", "concurrency", "record_bodies", "out", "shard", "procs", "release", "dry_run",
     "cassettes", "redact", "tasks", "skip_bad", "list_plans"}
)  # fmt: skip
"""What ``--dry-run`` takes: what makes the plan and its estimate (``--results``: the past runs it
estimates from; ``--tasks cassettes``: the tasks drawn from the folder); ``--progress`` and
``--wide`` shape a run's output, and there is none."""


def _refuse_given(ctx: typer.Context, action: str, applies: frozenset[str]) -> None:
    """One line, exit 2, naming the flags given with ``action`` that do not apply to it (with
    ``--resume``/``--rerun`` the recorded request's settings win; ``--dry-run`` runs nothing):
    no flag is ever silently ignored."""
    given = ("COMMANDLINE", "ENVIRONMENT")  # typer's ParameterSource (its own copy of click's)
    ignored = [
        param.opts[0]
        for param in ctx.command.params
        if param.name is not None
        and param.name not in applies
        and getattr(ctx.get_parameter_source(param.name), "name", None) in given
    ]
    if not ignored:
        return
    if action == "--dry-run":
        fail(f"--dry-run prints the plan and runs nothing; it does not take {', '.join(ignored)}")
    fail(f"{action} runs with the run's recorded settings; it does not take {', '.join(ignored)} (start a new run)")


def _environment_errors(directory: Path) -> bool:
    """Releases whose environment could not be built: one line each (the others ran); whether
    there were any. A run of several releases points at the changelog: the matrix mixes them."""
    from bench.results.store import read_manifest

    manifest = read_manifest(directory)
    if len((manifest.get("request") or {}).get("releases") or []) > 1:
        typer.echo(f"several releases in this run; compare them with: bench changelog {directory.name}")
    errors = manifest.get("environment_errors") or []
    for line in errors:
        typer.echo(f"error: {line}", err=True)
    return bool(errors)


def _latest(results_root: Path) -> Path | None:
    from bench.results.store import latest_run

    return latest_run(results_root)


def _outcomes(given: list[str] | None, rerun: str | None) -> frozenset[str]:
    """``--outcome timeout,harness_error`` (repeatable), checked against the outcome vocabulary."""

    if (given is None) != (rerun is None):
        fail("--rerun RUN and --outcome go together, e.g. bench run --rerun RUN --outcome timeout,harness_error")
    chosen = frozenset(part.strip() for text in given or [] for part in text.split(",") if part.strip())
    known = {str(o) for o in Outcome}
    if unknown := sorted(chosen - known):
        fail(f"--outcome {', '.join(unknown)}: unknown; known: {', '.join(sorted(known))}")
    return chosen


def _dry_run(request: SuiteRequest, list_plans: bool) -> None:
    """The plan, without running it: cells per adapter, how many run, and a time estimate; with
    ``--list``, every cell plan instead, one line each, for a pipe or a diff."""
    from bench.run.runs import PLAN_COLUMNS, estimate, plan_rows
    from bench.run.suite import SuiteError, check_settings, plan_suite

    try:
        check_settings(request)
        adapters, plans = plan_suite(request, lambda message: typer.echo(f"warning: {message}", err=True))
    except (SuiteError, ScenarioError) as error:
        fail(str(error))
    if list_plans:
        typer.echo("\t".join(PLAN_COLUMNS))
        for row in plan_rows(adapters, plans, request.options):
            typer.echo("\t".join(row))
        return
    plan = estimate(adapters, plans, request.options, request.results_root)
    width = max(len(line.name) for line in plan.lines)
    for line in plan.lines:
        time = "no past runs" if line.seconds is None else _duration(line.seconds)
        typer.echo(f"{line.name:<{width}}  {line.cells:>6} cells  {line.runnable:>6} run  {time}")
    total = len(plans)
    typer.echo(f"{total} cells, {plan.runnable} run ({total - plan.runnable} unsupported, recorded without running)")
    if plan.seconds is None:
        typer.echo("estimate: no past run under the results folder to estimate from")
    else:
        typer.echo(f"estimate: about {_duration(plan.seconds)} (mean cell times of {plan.history_runs} past run(s))")


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def _quiet_shutdown() -> None:
    """An interrupt leaves SDK coroutines that were created but never started; collected at
    interpreter exit they print "never awaited" noise. The results are already on disk: drop it."""
    warnings.simplefilter("ignore")
    sys.unraisablehook = lambda unraisable: None
    gc.collect()


def _run_with_progress(request: object, run_suite: Callable[..., Path], show: bool) -> Path:
    """Call ``run_suite(request, ...)`` (or ``resume_suite(path, ...)``) with the progress line
    (``bench.run.progress``: outcomes so far, the SDKs in progress, an ETA)."""
    from rich.console import Console
    from rich.markup import escape

    from bench.run.progress import RunProgress

    console = Console(file=sys.stderr)  # bound now: during the run sys.stderr is sdk.log
    # escape: an install hint's "[extra]" is text, not console markup; soft_wrap: one warning is
    # one line, whatever the width (a reader greps it: "not measured: agent 'x': wrong (...)").
    warn = lambda message: console.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)  # noqa: E731
    with RunProgress(console, enabled=show) as progress:
        return run_suite(request, on_record=progress.record, warn=warn, on_plan=progress.plan)


def _print_summary(directory: Path, wide: bool = False) -> bool:
    """The landing matrix and totals; whether the run has harness errors (said on stderr)."""
    from rich.console import Console
    from rich.text import Text

    from bench.report.terminal import compact_lines, landing_matrix_wide, landing_view, totals_line
    from bench.results.store import read_manifest, read_table
    from bench.run.classify import unrunnable_lines
    from bench.run.manifests import not_measured_line

    runs = read_table(directory, "runs").to_pandas()
    if wide:
        typer.echo(landing_matrix_wide(runs))
    elif sys.stdout.isatty():  # coloured, laid out for the terminal's width (120 when it is wider)
        console = Console(highlight=False)
        for line in compact_lines(runs, min(console.width, 120)):
            console.print(Text.assemble(*((text, style or "") for text, style in line)), overflow="ignore", crop=False)
    else:
        typer.echo(landing_view(runs))
    typer.echo("")
    typer.echo(f"{len(runs)} cells: {totals_line(runs)}")
    for entry in read_manifest(directory).get("not_measured") or []:  # unsupported above; why, and how many
        typer.echo(not_measured_line(entry))
    names = [agent or sdk for agent, sdk in zip(runs["agent"], runs["sdk"], strict=True)]
    for said in unrunnable_lines(names, list(runs["outcome"]), list(runs["exception_message"])):
        typer.echo(said)  # an SDK that could not import what it needs: once per SDK, with the hint
    typer.echo(f"results: {directory}")
    typer.echo("\n".join(next_steps(directory, "run")))
    if harness_errors := bool((runs["outcome"] == Outcome.HARNESS_ERROR).any()):
        typer.echo("error: harness errors occurred (a bug in misfit-bench, not in an SDK)", err=True)
    return harness_errors


def _check_cassettes(folder: str | None, redact: tuple[str, ...], tasks: str, skip_bad: bool = False) -> None:
    """The ``--cassettes`` folder (and ``--tasks``), read before anything runs (one line, exit 2
    if unusable; with ``--skip-bad``, a warning naming each file left out)."""
    if tasks not in ("builtin", "cassettes"):
        fail(f"unknown --tasks {tasks!r}; expected 'builtin' or 'cassettes'")
    if tasks == "cassettes" and folder is None:
        fail("--tasks cassettes draws the tasks from a cassette folder: give --cassettes DIR")
    if folder is None:
        if redact or skip_bad:
            fail(f"{'--redact' if redact else '--skip-bad'} applies to --cassettes only")
        return
    from bench.cassettes import CassetteError, Redaction, Replay
    from bench.cli.serve import warn_skipped

    try:
        Replay.from_folder(Path(folder), Redaction(patterns=redact), warn_skipped if skip_bad else None)
    except CassetteError as error:
        fail(f"--cassettes {error}")
    except ValueError as error:
        fail(f"--cassettes {folder}: {error}")
