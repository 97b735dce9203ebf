"""SDK releases as a matrix dimension (issue 16): environments, workers, changelog, bisect.

The environments these tests need are built from the package index with uv and cached in the
user's cache directory (``bench.releases.envs.cache_root``), so a second run reuses them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bench.provider import LocalProvider
from bench.releases import spec
from bench.releases.envs import MARKER, Environment, EnvironmentStore, SdkPackage, requirements_of, resolver_reason
from bench.releases.index import Release
from bench.releases.pool import WorkerCommand, WorkerPool
from bench.results.store import read_table
from bench.run.plan import Filters, expand
from bench.run.runner import CellRecord, Runner, RunOptions
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.sdk import registry
from bench.upgrade.bisect import candidates, search
from tests.paths import FIXTURES

IGNORED = {"run_id", "cell_id", "started_at", "latency_ms", "environment", "harness_traceback", "suite_id"}


def test_release_specs() -> None:
    assert spec.parse("pydantic-ai==1.0.18") == spec.ReleaseSpec("pydantic-ai", "1.0.18")
    assert spec.parse("openai-agents@latest") == spec.ReleaseSpec("openai-agents", "latest")
    assert spec.parse("langchain") == spec.ReleaseSpec("langchain", None)
    for bad in ("pydantic-ai==", "pydantic-ai@newest", "pydantic-ai==one"):
        with pytest.raises(spec.ReleaseSpecError, match="--release"):
            spec.parse(bad)
    config = {"pydantic-ai": ["1.0.18", "pinned"]}
    expanded = spec.expand([spec.parse("pydantic-ai"), spec.parse("pydantic-ai==1.0.18")], config)
    assert [str(s) for s in expanded] == ["pydantic-ai==1.0.18", "pydantic-ai@pinned"]


def test_resolver_reason_is_one_line() -> None:
    piped = (
        "error: No solution found when resolving dependencies\n"
        "  cause: Because pydantic-ai-slim==1.0.18 depends on pydantic-graph==1.0.18 and you require\n"
        "         pydantic-graph<1, we can conclude that your requirements are unsatisfiable.\n"
    )
    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because pydantic-ai-slim==1.0.18 depends on pydantic-graph==1.0.18 and you require\n"
        "      pydantic-graph<1, we can conclude that your requirements are unsatisfiable.\n"
    )
    expected = (
        "Because pydantic-ai-slim==1.0.18 depends on pydantic-graph==1.0.18 and you require "
        "pydantic-graph<1, we can conclude that your requirements are unsatisfiable."
    )
    assert resolver_reason(stderr) == resolver_reason(piped) == expected


def test_bisect_halves() -> None:
    versions = [f"0.{i}.0" for i in range(100)]
    probed: list[str] = []

    def probe(version: str) -> dict[tuple, str]:
        probed.append(version)
        return {("cell",): "old" if int(version.split(".")[1]) < 63 else "new"}

    index, _ = search(versions, probe)  # type: ignore[arg-type]
    assert versions[index] == "0.63.0"
    assert len(probed) <= 9, probed
    assert candidates(["0.13.6", "0.14.0", "0.14.1", "0.15.0", "0.15.1"], "0.15.0", "0.14.0") == [
        "0.14.0", "0.14.1", "0.15.0",
    ]  # fmt: skip


def _run(adapters: dict, plans: list, pools: dict) -> list[CellRecord]:
    records: list[CellRecord] = []

    async def main() -> None:
        try:
            await Runner(adapters, RunOptions(), "test", pools).run(plans, provider, records.append)
        finally:
            for pool in pools.values():
                await pool.close()

    with LocalProvider() as provider:
        asyncio.run(main())
    return records


@pytest.mark.slow
def test_worker_matches_in_process(tmp_path: Path) -> None:
    """The worker path measures exactly what in-process does: the harness's own interpreter run
    as a release environment (a worker per cell pool) gives the same row for every cell."""
    names = ("pydantic-ai", "openai-agents")
    adapters = {name: registry.load(name) for name in names}
    scenarios = [s for s in load_paths([SCENARIO_DIR]) if s.name in (
        "refusal_then_valid", "wrong_persistent", "tool_unknown_order_then_ok",
    )]  # fmt: skip
    assert len(scenarios) == 3
    filters = Filters(protocols=frozenset({"openai-chat"}), variants=frozenset({"default", "hardened"}))
    local = expand(adapters.values(), scenarios, filters)
    targets = {name: registry.adapter_target(name) for name in names}
    remote, drivers = [], {}
    for name in names:
        installed = version(adapters[name].distribution)  # the pinned release, so no cell is out of range
        env = Environment(name, installed, adapters[name].distribution, Path(sys.prefix))
        remote += expand([adapters[name]], scenarios, filters, environment=env)
        drivers[env.name] = WorkerPool(WorkerCommand(env.python, targets[name], tmp_path / "sdk.log"), 2)
    in_process = _frame(_run(adapters, local, {}))
    via_worker = _frame(_run(adapters, remote, drivers))
    assert (in_process["outcome"] != "unsupported").sum() == 30
    pd.testing.assert_frame_equal(in_process, via_worker)


def _frame(records: list[CellRecord]) -> pd.DataFrame:
    """The rows without what differs between any two runs: ids, timings, the message's tail
    (pydantic-ai's ContentFilterError message carries the response's timestamp and id), and the
    input tokens of tool cells (the tool call ids the provider draws are random, and the SDKs
    send them back)."""
    rows = [{k: v for k, v in r.run.items() if k not in IGNORED} for r in records]
    frame = pd.DataFrame(rows).drop(columns=["sdk_version"])
    frame["exception_message"] = frame["exception_message"].str.split("\n").str[0]
    tool_rows = (frame["task"] == "order_lookup") | (frame["mode"] == "tool")
    frame.loc[tool_rows, ["input_tokens_billed", "input_tokens_reported"]] = None
    key = ["sdk", "mode", "variant", "protocol", "stream", "scenario"]
    return frame.sort_values(key).reset_index(drop=True)[sorted(frame.columns)]


@pytest.mark.parametrize("fixture", ["small_run", "tool_run"])
def test_old_runs_load_without_environment(fixture: str) -> None:
    """Runs written before schema 3 (the vendored schema-1 and schema-2 runs) have no environment
    column: the reader adds it, null in every row."""
    directory = FIXTURES / fixture
    assert "environment" not in pq.read_schema(directory / "runs.parquet").names
    runs = read_table(directory, "runs")
    assert "environment" in runs.column_names
    assert runs.column("environment").null_count == runs.num_rows > 0


@pytest.mark.slow
def test_published_changelog_is_current_and_explained() -> None:
    """docs/changelog.md is what results/releases/ renders to, every change in it is explained by
    an annotation, and every annotation explains a change (misspell a release: this fails)."""
    from bench.report.changelog import steps
    from bench.upgrade import history

    assert history.CHANGELOG.read_text(encoding="utf-8") == history.render()
    runs = history.history_runs()
    assert set(runs["sdk"]) >= {"pydantic-ai", "openai-agents"}
    annotations = history.load_annotations()
    assert history.unexplained(runs, annotations) == []
    changes = [c for step in steps(runs) for c in step.changes]
    unused = [a for a in annotations if not any(a.explains(c) for c in changes)]
    assert unused == []
    for sdk, group in runs.groupby("sdk"):
        assert group["environment"].nunique() == len(history.PUBLISHED[sdk]), sdk


def test_release_gap_reads_companions_from_the_environment() -> None:
    """A cell that needs a companion release (LangChain's native Anthropic cells need
    langchain-anthropic 1.1.0) is unsupported where the environment resolved an older one, and
    the reason names the release needed; the SDK's own release decides the hardened cells."""
    from bench.core.vocabulary import Mode, ModeSupport, Protocol
    from bench.sdk.adapter import Cell

    adapter = registry.load("langchain")
    native = Cell("langchain", Mode.NATIVE, "default", Protocol.ANTHROPIC, False, ModeSupport.BUILTIN)
    auto = Cell("langchain", Mode.NATIVE, "auto", Protocol.ANTHROPIC, False, ModeSupport.BUILTIN)
    hardened = Cell("langchain", Mode.TOOL, "hardened", Protocol.CHAT, False, ModeSupport.BUILTIN)
    freeze = ("langchain==1.0.0", "langchain-anthropic==1.0.0", "langgraph-prebuilt==1.0.0")
    old = Environment("langchain", "1.0.0", "langchain", Path("/nowhere"), freeze=freeze)
    newer = Environment("langchain", "1.0.8", "langchain", Path("/nowhere"),
                        freeze=("langchain==1.0.8", "langchain_anthropic==1.1.0"))  # fmt: skip
    assert old.installed()["langchain-anthropic"] == "1.0.0"
    gap = adapter.release_gap(native, old.version, old.installed())
    assert gap is not None and gap.startswith("needs langchain-anthropic >= 1.1.0 (this environment has 1.0.0): ")
    assert adapter.release_gap(auto, old.version, old.installed()) is None  # 1.0.x picks ToolStrategy
    assert adapter.release_gap(native, newer.version, newer.installed()) is None
    assert adapter.release_gap(hardened, newer.version, newer.installed()).startswith("needs langchain >= 1.5.0: ")


def test_index_reads_sdists_whose_name_has_dashes(tmp_path: Path) -> None:
    """Older sdists spell the name with dashes (``openai-agents-0.0.3.tar.gz``): the version is
    what follows the name, matched canonically, not what follows the first dash. Read from a
    cached index page, as the releases commands do once the index has been read."""
    import json

    from bench.releases.index import PackageIndex

    def file(name: str, yanked: bool = False) -> dict[str, object]:
        return {"filename": name, "upload-time": "2025-03-11T18:00:00Z", "yanked": yanked}

    page = {
        "versions": ["0.0.3", "0.2.0"],
        "files": [
            file("openai-agents-0.0.3.tar.gz"),
            file("openai_agents-0.2.0-py3-none-any.whl"),
            file("openai_agents-0.2.0.tar.gz"),
            file("openai-agents-extras-9.0.0.tar.gz"),  # another distribution
            file("openai_agents-0.3.0.egg"),  # not a name packaging reads
        ],
    }
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "openai-agents.json").write_text(json.dumps(page), encoding="utf-8")
    found = PackageIndex(tmp_path).releases("openai-agents")
    assert [r.version for r in found] == ["0.0.3", "0.2.0"]


def test_worker_pool_leases_at_most_size_workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Three cells asking one pool of size 2 at once: two workers start, the third cell waits
    for one to come back and reuses it (Worker.start replaced: no subprocess needed here)."""
    from bench.releases import pool as pool_module

    class Started:
        alive = True
        forwarder = None

    async def start(cls: type, command: WorkerCommand, log: object) -> Started:
        await asyncio.sleep(0)
        return Started()

    monkeypatch.setattr(pool_module.Worker, "start", classmethod(start))

    async def main() -> tuple[int, int]:
        pool = WorkerPool(WorkerCommand(Path(sys.executable), "misfit_echo:OpenAIParseAdapter"), 2)
        busy = most = 0

        async def cell() -> None:
            nonlocal busy, most
            async with pool.lease():
                busy += 1
                most = max(most, busy)
                await asyncio.sleep(0.05)
                busy -= 1

        await asyncio.gather(cell(), cell(), cell())
        return most, pool.started

    assert asyncio.run(main()) == (2, 2)


def test_bisect_probes_only_the_adapters_range() -> None:
    """A range that is not a lower bound (here one release excluded) is honoured: the excluded
    release is never probed nor counted, and an end outside the range is refused."""
    from bench.upgrade.bisect import BisectError, bisect

    versions = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"]
    probed: list[str] = []

    def probe(version: str) -> dict[tuple, str]:
        probed.append(version)
        return {("cell",): "old" if version < "1.3.0" else "new"}

    result = bisect("sdk", "scenario", "1.0.0", "1.4.0", versions, probe, "!=1.2.0")  # type: ignore[arg-type]
    assert (result.first_bad, result.last_good, result.candidates) == ("1.3.0", "1.1.0", 4)
    assert "1.2.0" not in probed
    with pytest.raises(BisectError, match=r"does not support 1\.0\.0"):
        bisect("sdk", "scenario", "1.0.0", "1.4.0", versions, probe, ">=1.1")  # type: ignore[arg-type]


def test_bisect_keeps_every_probe_under_one_temporary_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``bench bisect`` runs each probe's suite under one temporary results folder and removes it
    at the end, instead of a new folder in /tmp per probe. The suite is replaced by one that
    writes an empty run (so the two ends behave alike: exit 4); the index by a fixed list."""
    from typer.testing import CliRunner

    import bench.run.suite
    from bench.cli import app
    from bench.cli import releases as releases_cli
    from bench.releases.index import Release

    roots: list[Path] = []

    def run_suite(request: bench.run.suite.SuiteRequest, warn: object = None) -> Path:
        assert request.results_root is not None
        roots.append(request.results_root)
        run = request.results_root / f"run-{len(roots)}"
        run.mkdir()
        return run

    class Index:
        def releases(self, distribution: str) -> list[Release]:
            uploaded = pd.Timestamp("2025-01-01", tz="UTC").to_pydatetime()
            return [Release(distribution, v, uploaded) for v in ("0.14.0", "0.14.1", "0.15.0")]

    class Store:
        index = Index()

    monkeypatch.setattr(bench.run.suite, "run_suite", run_suite)
    monkeypatch.setattr(releases_cli, "_store", lambda cache: Store())
    result = CliRunner().invoke(app, ["bisect", "openai-agents", "valid", "--good", "0.14.0", "--bad", "0.15.0"])
    assert result.exit_code == 4, result.output
    assert len(roots) == 2 and roots[0] == roots[1]
    assert roots[0].name.startswith("misfit-bisect-") and not roots[0].exists()


class _SlowBuilds(EnvironmentStore):
    """A store whose build (uv's part) only sleeps and writes the marker: what is tested is who
    builds, not uv."""

    def __init__(self, root: Path) -> None:
        super().__init__(root=root)
        self.builds: list[str] = []

    def _release(self, package: SdkPackage, version: str) -> Release:
        return Release(package.distribution, version, datetime(2026, 1, 1, tzinfo=UTC))

    def _build(self, package: SdkPackage, release: Release) -> Environment:
        self.builds.append(threading.current_thread().name)
        time.sleep(0.5)  # long enough for the other builder to arrive while this one builds
        target = self.path(package.sdk, release.version)
        target.mkdir(parents=True)
        env = Environment(sdk=package.sdk, version=release.version, distribution=package.distribution,
                          path=target, exclude_newer="", freeze=())  # fmt: skip
        marker = env.manifest() | {"requirements": requirements_of(package, release.version)}
        (target / MARKER).write_text(json.dumps(marker), encoding="utf-8")
        return env


def test_two_builders_of_one_environment_build_it_once(tmp_path: Path) -> None:
    """Two runs (or test workers) asking for one release at once: the second waits for the first
    and takes its environment, instead of replacing the folder under the first one's workers."""
    store = _SlowBuilds(tmp_path)
    package = SdkPackage(sdk="agentmaker", distribution="agentmaker", requirement="agentmaker")
    built: list[Environment] = []
    threads = [threading.Thread(target=lambda: built.append(store.build(package, "0.1.0"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(store.builds) == 1, store.builds
    assert [env.path for env in built] == [store.path("agentmaker", "0.1.0")] * 2


class _InterruptedBuilds(EnvironmentStore):
    """A store whose uv makes the venv folder, then is interrupted at the install (once): what is
    tested is what an interrupted build leaves, not uv."""

    def __init__(self, root: Path) -> None:
        super().__init__(root=root)
        self.interrupt = True

    def _release(self, package: SdkPackage, version: str) -> Release:
        return Release(package.distribution, version, datetime(2026, 1, 1, tzinfo=UTC))

    def _uv(self, what: str, deadline: float, *args: str) -> str:
        if args[0] == "venv":
            Path(args[-1], "bin").mkdir(parents=True)
        elif args[:2] == ("pip", "install") and self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        return ""


def test_a_build_interrupted_midway_is_never_trusted(tmp_path: Path) -> None:
    """Ctrl-C during a release build leaves no environment a later run takes: it was built under a
    temporary name, removed at the interrupt; the next run builds it whole."""
    store = _InterruptedBuilds(tmp_path)
    package = SdkPackage(sdk="agentmaker", distribution="agentmaker", requirement="agentmaker")
    with pytest.raises(KeyboardInterrupt):
        store.build(package, "0.1.0")
    target = store.path("agentmaker", "0.1.0")
    left = [p.name for p in target.parent.iterdir()]
    assert not target.exists() and left == [".0.1.0.lock"], left  # the builders' lock file only
    assert store.cached("agentmaker", "0.1.0") is None
    env = store.build(package, "0.1.0")
    assert env.path == target and (target / MARKER).is_file() and store.cached("agentmaker", "0.1.0") is not None
