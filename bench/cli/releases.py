"""``bench releases list|build|prune``, ``bench changelog RUN`` and ``bench bisect``: SDK
releases as a matrix dimension (the library is ``bench.releases``)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.common import fail
from bench.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from bench.releases.envs import EnvironmentStore
    from bench.releases.index import Release
    from bench.sdk.adapter import Adapter

releases_app = typer.Typer(
    help="Release environments: list, build, prune (cached outside the repo); --new: the releases the "
    "committed history does not hold yet.",
    invoke_without_command=True,
)


@releases_app.callback()
def _releases(
    ctx: typer.Context,
    new: Annotated[
        bool, typer.Option("--new", help="The releases newer than the committed history (bench releases list --new).")
    ] = False,
    only: Annotated[list[str] | None, typer.Option("--sdk", help="With --new: only these SDKs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="With --new: machine-readable output.")] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        if new or only or as_json:
            fail(f"--new, --sdk and --json go after 'bench releases {ctx.invoked_subcommand}', not before it")
        return
    if not new:
        typer.echo(ctx.get_help())
        raise typer.Exit(int(ExitCode.USAGE))
    _list_new(only or [], as_json)


def _store(cache: Path | None) -> EnvironmentStore:
    from bench.releases.envs import EnvironmentStore

    return EnvironmentStore(cache)


def _adapter(name: str) -> Adapter:
    from bench.sdk import registry

    try:
        return registry.load(name)
    except (registry.UnknownAdapter, registry.AdapterUnavailable) as error:
        fail(str(error))


CacheOption = Annotated[
    Path | None,
    typer.Option("--cache", help="Environment cache (default: $MISFIT_BENCH_CACHE or ~/.cache/misfit-bench)."),
]


@releases_app.command("list")
def list_releases(
    sdk: Annotated[
        str | None, typer.Argument(help="With an SDK: its releases on the index, cached ones marked.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    cache: CacheOption = None,
    new: Annotated[
        bool, typer.Option("--new", help="The releases newer than the committed history of each tracked SDK.")
    ] = False,
    only: Annotated[list[str] | None, typer.Option("--sdk", help="With --new: only these SDKs.")] = None,
) -> None:
    """The cached environments; or, for one SDK, every release on the package index with its
    upload date, whether the adapter supports it and whether its environment is cached; or, with
    --new, what the scheduled refresh measures next (pre-releases and yanked ones said apart)."""
    from bench.releases.index import IndexLookupError

    store = _store(cache)
    if new:
        if sdk is not None:
            fail(f"--new lists every tracked SDK (or --sdk {sdk}), not one SDK's index")
        _list_new(only or [], as_json)
        return
    if only:
        fail("--sdk applies to --new only")
    if sdk is None:
        rows = [env.manifest() | {"packages": len(env.freeze)} for env in store.listing()]
        for row in rows:
            row.pop("freeze")
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        for row in rows:
            typer.echo(f"{row['name']:<32} {row['packages']:>3} packages  as of {row['exclude_newer']}  {row['path']}")
        if not rows:
            typer.echo(f"no cached environments under {store.root / 'envs'}", err=True)
        return
    adapter = _adapter(sdk)
    try:
        found = store.index.releases(adapter.distribution)
    except IndexLookupError as error:
        fail(str(error))
    rows = [_release_row(adapter, store, r) for r in found]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        marks = [name for name, on in (("cached", row["cached"]), ("unsupported", not row["supported"]),
                                       ("yanked", row["yanked"])) if on]  # fmt: skip
        typer.echo(f"{sdk}=={row['version']:<12} {str(row['uploaded'])[:10]}  {' '.join(marks)}".rstrip())


def _list_new(only: list[str], as_json: bool) -> None:
    """``bench releases --new``: per Python SDK with a committed history, the package index's
    releases above it; per TypeScript SDK, the npm registry's above its history or, without one,
    above the release the committed lock holds."""
    from bench.releases.index import IndexLookupError
    from bench.releases.newer import Listed, measured, newer, npm_key, npm_releases, python_key, python_releases
    from bench.sdk import registry
    from bench.upgrade.history import HISTORY, PUBLISHED

    listed: list[Listed] = []
    for name in only or sorted({*PUBLISHED, *registry.registrations()}):
        adapter = _adapter(name)
        try:
            if adapter.language == "python":  # above the history, or without one above the pinned release
                floor = measured(HISTORY, name) or [v for v in [registry.sdk_version(adapter)] if v]
                listed += newer(name, floor, python_releases(adapter.distribution), python_key)
            elif adapter.language != "python":  # no history yet: what is newer than the committed lock
                from bench.node import setup

                locked = setup.locked().get(adapter.npm_package)  # type: ignore[attr-defined]
                floor = measured(HISTORY, name) or ([locked] if locked else [])
                listed += newer(name, floor, npm_releases(adapter.npm_package), npm_key)  # type: ignore[attr-defined]
        except IndexLookupError as error:
            fail(str(error))
    if as_json:
        typer.echo(json.dumps([entry.to_json() for entry in listed], indent=2))
        return
    for entry in listed:
        typer.echo(f"{entry.spec:<32} {entry.uploaded:<10}  {entry.status}")
    if not listed:
        typer.echo("no release newer than the committed history", err=True)


def _release_row(adapter: Adapter, store: EnvironmentStore, release: Release) -> dict[str, object]:
    from packaging.specifiers import SpecifierSet

    supported = not adapter.supported_releases or release.version in SpecifierSet(adapter.supported_releases)
    return {
        "version": release.version,
        "uploaded": release.uploaded.isoformat(),
        "yanked": release.yanked,
        "supported": supported,
        "cached": store.cached(adapter.name, release.version) is not None,
    }


@releases_app.command("build")
def build_releases(
    releases: Annotated[
        list[str], typer.Argument(help="SDK==VERSION, SDK@latest or SDK (its \\[tool.bench.releases] list).")
    ],
    cache: CacheOption = None,
) -> None:
    """Build (or find cached) the environment of each release; one line each. Exit 2 when any
    could not be built (the others are built all the same)."""
    from bench.releases import spec
    from bench.releases.envs import key_text
    from bench.releases.prepare import ReleaseUnavailable, prepare

    try:
        parsed = [spec.parse(text) for text in releases]
        specs = spec.expand(parsed, spec.configured() if any(p.version is None for p in parsed) else {})
    except spec.ReleaseSpecError as error:
        fail(str(error))
    adapters = {s.sdk: _adapter(s.sdk) for s in specs}
    try:
        envs, errors = prepare(specs, adapters, _store(cache), progress=lambda m: typer.echo(m, err=True))
    except ReleaseUnavailable as error:  # before any build: nothing to list
        fail(str(error))
    for env in envs:
        where = "in-process (the harness's own environment)" if env.path is None else str(env.path)
        built = f", built in {env.build_s:.1f} s" if env.build_s is not None and env.path is not None else ""
        companions = adapters[env.sdk].companions
        key = f" with {key_text(env.freeze, companions)}" if companions and env.freeze else ""
        typer.echo(f"{env.name}: {len(env.freeze)} packages as of {env.exclude_newer}{key}{built}: {where}")
    for line in errors:
        typer.echo(f"error: {line}", err=True)
    if errors:
        raise typer.Exit(ExitCode.USAGE)


@releases_app.command("prune")
def prune_releases(
    keep: Annotated[list[str] | None, typer.Option("--keep", help="SDK==VERSION to keep (repeatable).")] = None,
    cache: CacheOption = None,
) -> None:
    """Delete cached environments, all but the ``--keep`` ones; prints what was removed."""
    removed = _store(cache).prune(set(keep or ()))
    for env in removed:
        typer.echo(f"removed {env.name}: {env.path}")
    if not removed:
        typer.echo("nothing to remove", err=True)


def changelog_command(
    run: Annotated[str | None, typer.Argument(help="Run folder or suite id (default: the latest run).")] = None,
    results_root: Annotated[Path, typer.Option("--results", help="Results root folder.")] = Path("results"),
) -> None:
    """Per SDK run in several releases (``bench run --release``): a release x scenario grid and
    every cell whose outcome, model calls or exception changed from one release to the next.
    Markdown on stdout; also written to changelog.md in the run folder."""
    from bench.report.changelog import markdown
    from bench.results.store import ResultsError, read_table, resolve_run

    try:
        directory = resolve_run(run, results_root)
        runs = read_table(directory, "runs").to_pandas()
    except ResultsError as error:
        fail(str(error))
    text = markdown(runs, f"Failure-handling changelog: {directory.name}")
    (directory / "changelog.md").write_text(text, encoding="utf-8")
    typer.echo(text, nl=False)
    typer.echo(f"written to {directory / 'changelog.md'}", err=True)


def bisect_command(
    sdk: Annotated[str, typer.Argument(help="The SDK, e.g. openai-agents.")],
    scenario: Annotated[str, typer.Argument(help="The scenario whose cells changed, e.g. refusal_then_valid.")],
    good: Annotated[str, typer.Option("--good", help="A release that behaves the old way.")],
    bad: Annotated[str, typer.Option("--bad", help="A release that behaves the new way.")],
    mode: Annotated[list[str] | None, typer.Option("--mode", help="Only these modes.")] = None,
    variant: Annotated[list[str] | None, typer.Option("--variant", help="Only these variants.")] = None,
    protocol: Annotated[list[str] | None, typer.Option("--protocol", help="Only these protocols.")] = None,
    cache: CacheOption = None,
) -> None:
    """The first release between --good and --bad where the scenario's cells changed outcome,
    model calls or exception, by halving (about log2(n) + 2 environments). Exit 0 with the
    release on stdout; 4 when --good and --bad behave alike; 2 on bad input."""
    from bench.releases.index import IndexLookupError, choose, installable
    from bench.run.plan import Filters
    from bench.upgrade.bisect import BisectError, bisect, run_probe

    adapter = _adapter(sdk)
    store = _store(cache)
    try:
        found = store.index.releases(adapter.distribution)
        for given in (good, bad):  # a release that cannot be installed here: one line, before any build
            choose(found, adapter.distribution, given)
        versions = [r.version for r in installable(found)]
    except IndexLookupError as error:
        fail(f"{sdk}: {error}")
    filters = Filters(
        modes=frozenset(mode) if mode else None,
        variants=frozenset(variant) if variant else None,
        protocols=frozenset(protocol) if protocol else None,
    )
    say = lambda message: typer.echo(message, err=True)  # noqa: E731
    # One scratch results folder for every probe's run, removed at the end (no option keeps it).
    with tempfile.TemporaryDirectory(prefix="misfit-bisect-") as scratch:
        probe = run_probe(sdk, scenario, filters, cache, Path(scratch), say)
        try:
            result = bisect(sdk, scenario, good, bad, versions, probe, adapter.supported_releases)
        except BisectError as error:
            fail(str(error))
    tested = f"{len(result.tested)} of {result.candidates} releases run"
    if result.first_bad is None:
        typer.echo(f"{sdk} {scenario}: {good} and {bad} behave alike ({tested})")
        raise typer.Exit(ExitCode.NOTHING_TO_COMPARE)
    typer.echo(f"{sdk} {scenario}: first changed in {result.first_bad} (last alike: {result.last_good}; {tested})")
    for line in result.differences():
        typer.echo(f"  {line}")
    sys.stdout.flush()
