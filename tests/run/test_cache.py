"""The cell cache (bench.run.cache), driven as a user drives it: `bench run` twice in a copy of the
tree, then one input changed at a time (an adapter file, a provider file, a scenario), each run
again cell by cell with exactly the cells that input decides; --cache-only, --verify-cache, an
entry edited or swapped, two writers of one entry, and a release environment's resolved set."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.releases.envs import Environment
from bench.results import columns
from bench.results.store import read_table
from bench.run.cache import CellCache
from bench.run.cellkeys import Keys
from bench.run.plan import CellPlan
from bench.scenarios.files import load_paths
from bench.sdk.adapter import Cell, ModeSupport
from tests.paths import REPO

SLOW_FIXTURES = ("tree",)
CELLS = ["--sdk", "agentmaker", "--sdk", "pydantic-ai", "--mode", "native", "--variant", "default"]
CELLS += ["--protocol", "openai-chat", "--scenario", "valid", "--scenario", "malformed_then_valid"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the code a cell's key digests (bench, adapters, scenarios): a test edits it."""
    root = tmp_path_factory.mktemp("tree")
    for name in ("bench", "adapters", "scenarios"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def bench_run(
    tree: Path, cache: Path, *args: str, site: Path | None = None, imports: bool = False
) -> tuple[int, str, dict[str, str | None]]:
    """`bench run` from the copy; (exit code, stderr, cell_id -> the run its row was cached from).
    ``site``: a folder of distributions put first on the path; ``imports``: stderr has Python's
    import lines too (``-X importtime``)."""
    paths = [str(site)] if site is not None else []
    env = os.environ | {"PYTHONPATH": os.pathsep.join([*paths, str(tree), os.environ.get("PYTHONPATH", "")])}
    env["MISFIT_BENCH_CELL_CACHE"] = str(cache)
    if imports:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    command = [sys.executable, "-m", "bench.cli", "run", *CELLS, "--out", str(tree / "results"), "--no-progress"]
    done = subprocess.run([*command, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    latest = (tree / "results" / "latest").read_text().strip() if (tree / "results" / "latest").exists() else ""
    rows: dict[str, str | None] = {}
    if done.returncode in (0, 1) and latest:
        table = pq.read_table(
            tree / "results" / latest / "runs.parquet", columns=["cell_id", "sdk", "scenario", "cached"]
        )
        rows = {f"{r['sdk']}/{r['scenario']}": r["cached"] for r in table.to_pylist()}
    return done.returncode, done.stderr, rows


def computed(rows: dict[str, str | None]) -> set[str]:
    return {cell for cell, cached in rows.items() if cached is None}


ALL = {"agentmaker/valid", "agentmaker/malformed_then_valid", "pydantic-ai/valid", "pydantic-ai/malformed_then_valid"}


@pytest.mark.slow
def test_a_cell_runs_again_exactly_when_an_input_that_decides_it_changes(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cells"
    code, stderr, rows = bench_run(tree, cache)
    assert code == 0 and set(rows) == ALL and computed(rows) == ALL, stderr
    code, stderr, rows = bench_run(tree, cache)
    assert code == 0 and computed(rows) == set(), stderr
    assert "cell cache: 4 cells served" in stderr and "0 stored" in stderr  # served, not stored again

    with (tree / "adapters" / "agentmaker" / "adapter.py").open("a") as handle:
        handle.write("\n# an edit\n")
    _, stderr, rows = bench_run(tree, cache)
    assert computed(rows) == {"agentmaker/valid", "agentmaker/malformed_then_valid"}, stderr

    library = tree / "scenarios" / "library.yaml"
    library.write_text(library.read_text().replace("JSON with a trailing comma, then valid JSON.", "Edited."))
    _, stderr, rows = bench_run(tree, cache)
    assert computed(rows) == {"agentmaker/malformed_then_valid", "pydantic-ai/malformed_then_valid"}, stderr

    with (tree / "bench" / "provider" / "wire.py").open("a") as handle:
        handle.write("\n# an edit\n")
    _, stderr, rows = bench_run(tree, cache)
    assert computed(rows) == ALL, stderr

    with (tree / "bench" / "report" / "matrix.py").open("a") as handle:  # a reader of runs: decides no cell
        handle.write("\n# an edit\n")
    _, stderr, rows = bench_run(tree, cache)
    assert computed(rows) == set(), stderr


@pytest.mark.slow
def test_cache_only_verify_and_a_damaged_entry(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cells"
    assert bench_run(tree, cache)[0] == 0
    code, stderr, _ = bench_run(tree, cache, "--cache-only", "--scenario", "wrong_then_valid")
    assert code == 2 and stderr.startswith("error: --cache-only: 2 of 6 cells are not in the cell cache"), stderr

    code, stderr, rows = bench_run(tree, cache, "--verify-cache", "4")
    assert code == 0 and "4 verified" in stderr and computed(rows) == ALL, stderr

    entries = sorted(cache.glob("*/*/entry.json"))
    assert len(entries) == 4
    entry_by_entry(cache)
    damaged = entries[0].with_name("runs.arrow")
    damaged.write_bytes(damaged.read_bytes()[:-7])  # truncated: its sha256 no longer matches
    code, stderr, rows = bench_run(tree, cache)
    assert code == 0 and stderr.count("cannot be used") == 1 and len(computed(rows)) == 1, stderr

    # An entry made to say another outcome, consistently (digest too): --verify-cache finds it.
    entry = json.loads(entries[1].read_text())
    runs = entries[1].with_name("runs.arrow")
    row = _read(runs)[0] | {"outcome": "raised" if _read(runs)[0]["outcome"] != "raised" else "ok"}
    entry["runs_sha256"] = _write(runs, [row])
    entries[1].write_text(json.dumps(entry))
    entry_by_entry(cache)
    code, stderr, _ = bench_run(tree, cache, "--verify-cache", "4")
    assert code == 1 and "error: --verify-cache:" in stderr and row["cell_id"] in stderr, stderr


def entry_by_entry(cache: Path) -> None:
    """No pack nor memo left (tests/run/test_cache.py's warm-run test damages those): the next run
    reads each cell's entry."""
    for folder in ("packs", "plans"):
        shutil.rmtree(cache / folder, ignore_errors=True)


def _read(path: Path) -> list[dict]:
    with pa.ipc.open_stream(path.read_bytes()) as reader:
        return reader.read_all().to_pylist()


def _write(path: Path, rows: list[dict]) -> str:
    import hashlib

    sink = pa.BufferOutputStream()
    table = pa.Table.from_pylist(rows, schema=columns.RUNS)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    path.write_bytes(sink.getvalue().to_pybytes())
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _plan(environment: Environment | None = None, scenario: str = "valid") -> CellPlan:
    found = next(s for s in load_paths([REPO / "scenarios"]) if s.name == scenario)
    cell = Cell("agentmaker", "native", "default", "openai-chat", False, ModeSupport.BUILTIN)  # type: ignore[arg-type]
    return CellPlan(cell=cell, scenario=found, rep=0, seed=0, environment=environment)


class _Adapter:
    name = "agentmaker"


def test_a_release_environments_resolved_set_is_in_its_cells_key_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bench.run.cellkeys.cacheable", lambda adapter, plan: True)
    keys = Keys(code="c", options="o", adapters={"agentmaker": "a"}, installed={"agentmaker": "i"})
    env = Environment(
        "agentmaker", "0.1.0", "agentmaker", Path("/envs/agentmaker/0.1.0"), freeze=("agentmaker==0.1.0",)
    )
    bumped = dataclasses.replace(env, freeze=("agentmaker==0.1.0", "httpx==0.28.1"))
    in_process, released, other = (keys.of(_Adapter(), _plan(e)) for e in (None, env, bumped))  # type: ignore[arg-type]
    assert len({in_process, released, other}) == 3
    assert keys.of(_Adapter(), _plan(None)) == in_process  # type: ignore[arg-type]
    assert dataclasses.replace(keys, installed={"agentmaker": "j"}).of(_Adapter(), _plan(env)) == released  # type: ignore[arg-type]


def test_two_writers_of_one_entry_leave_it_whole(tmp_path: Path) -> None:
    warned: list[str] = []
    store = CellCache(tmp_path, warn=warned.append)
    row = read_table(REPO / "results" / "baseline", "runs").slice(0, 1).to_pylist()[0]
    failures: list[BaseException] = []
    threading.excepthook = lambda args: failures.append(args.exc_value)  # type: ignore[assignment,misc]
    writers = [threading.Thread(target=store.put, args=("ab" * 32, row, [], f"s{i}")) for i in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    threading.excepthook = threading.__excepthook__
    assert not failures
    hit = store.get("ab" * 32, row["cell_id"])
    assert hit is not None and hit.run == row
    assert [p.name for p in (tmp_path / "ab").iterdir()] == ["ab" * 32]  # no staging folder left
    assert not warned
    assert store.get("ab" * 32, "another cell") is None  # a key serving another cell's row is refused
    assert len(warned) == 1 and "another cell's row" in warned[0]


def test_an_entry_moved_under_another_key_or_with_its_table_swapped_is_never_served(tmp_path: Path) -> None:
    """Another cell's entry renamed into this key's place is refused by its key; a table swapped
    for another entry's (its checksum no longer the one its entry.json names) too."""
    warned: list[str] = []
    store = CellCache(tmp_path, warn=warned.append)
    first, second = read_table(REPO / "results" / "baseline", "runs").slice(0, 2).to_pylist()
    store.put("cd" * 32, first, [], "s1")
    store.put("ce" * 32, second, [], "s2")
    moved = tmp_path / "cf" / ("cf" * 32)
    moved.parent.mkdir()
    shutil.copytree(tmp_path / "cd" / ("cd" * 32), moved)
    assert store.get("cf" * 32, first["cell_id"]) is None
    assert len(warned) == 1 and "its key is another cell's" in warned[0]
    shutil.copy(tmp_path / "ce" / ("ce" * 32) / "runs.arrow", tmp_path / "cd" / ("cd" * 32) / "runs.arrow")
    assert store.get("cd" * 32, first["cell_id"]) is None
    assert len(warned) == 2 and "runs.arrow is not the one its entry.json names" in warned[1]
    assert store.get("ce" * 32, second["cell_id"]) is not None and len(warned) == 2


def _dist(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    folder = name.replace("-", "_")  # a dist-info folder's name is the normalised one
    for old in site.glob(f"{folder}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{folder}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_a_pin_bump_changes_the_keys_of_the_sdks_that_require_it_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process environment in a key is the SDK's requirement closure, not the whole venv."""
    from bench.run.cellkeys import installed_digest

    site = tmp_path / "site"
    _dist(site, "fakesdk-one", "1.0", ("fakedep>=1",))
    _dist(site, "fakesdk-two", "1.0")
    _dist(site, "fakedep", "1.0")
    monkeypatch.syspath_prepend(str(site))

    class One:
        distribution, requirement, companions, worker_requirements = "fakesdk-one", "", (), ()
        language = "python"

    class Two(One):
        distribution = "fakesdk-two"

    before = installed_digest(One()), installed_digest(Two())  # type: ignore[arg-type]
    assert before[0] != before[1]
    _dist(site, "fakedep", "1.1")  # the PR bumps a package only fakesdk-one requires
    after = installed_digest(One()), installed_digest(Two())  # type: ignore[arg-type]
    assert after[0] != before[0] and after[1] == before[1]


def test_a_typescript_sdks_key_holds_the_node_sides_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bumped package in node/package-lock.json runs the TypeScript cells again, and no Python one."""
    from bench.node import setup
    from bench.run.cellkeys import installed_digest
    from bench.sdk import registry

    node = tmp_path / "node"
    node.mkdir()
    for path in setup.NODE_ROOT.iterdir():
        if path.is_file():
            shutil.copyfile(path, node / path.name)
    monkeypatch.setattr(setup, "NODE_ROOT", node)
    typescript, python = registry.load("ai"), registry.load("agentmaker")
    before = installed_digest(typescript), installed_digest(python)
    lock = node / "package-lock.json"
    lock.write_text(lock.read_text().replace('"version": ', '"version":  ', 1))
    after = installed_digest(typescript), installed_digest(python)
    assert after[0] != before[0] and after[1] == before[1]


def test_a_run_the_cache_serves_whole_starts_no_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm run on an unchanged tree (issue 38: at most 10 s) writes the served rows and starts
    nothing: the provider's start (its server, the tokenizer's vocabulary) and stop were a warm
    run's largest cost after the imports."""
    from typer.testing import CliRunner

    from bench.cli import app
    from bench.run import suite

    args = ["run", *CELLS, "--cell-cache", str(tmp_path / "cells"), "--out", str(tmp_path / "results"), "--no-progress"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.stderr

    class NoProvider:
        def __init__(self, **_: object) -> None:
            raise AssertionError("a provider started for a run the cache served whole")

    monkeypatch.setattr(suite, "LocalProvider", NoProvider)
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.stderr + repr(second.exception)
    assert "cell cache: 4 cells served" in second.stderr, second.stderr
    latest = (tmp_path / "results" / "latest").read_text().strip()
    table = pq.read_table(tmp_path / "results" / latest / "runs.parquet", columns=["sdk", "scenario", "cached"])
    assert {f"{r['sdk']}/{r['scenario']}" for r in table.to_pylist() if r["cached"]} == ALL


def imported(stderr: str, module: str) -> bool:
    """Whether the run's ``-X importtime`` lines show ``module`` imported."""
    lines = stderr.splitlines()
    return any(line.startswith("import time:") and line.split("|")[-1].strip() == module for line in lines)


def said(stderr: str) -> list[str]:
    """The run's own lines (without ``-X importtime``'s)."""
    return [line for line in stderr.splitlines() if not line.startswith("import time:")]


def rows_of(tree: Path) -> dict[str, list[dict]]:
    """The latest run's tables, without the columns that name runs (this one, the one cached)."""
    folder = tree / "results" / (tree / "results" / "latest").read_text().strip()
    tables = {name: pq.read_table(folder / f"{name}.parquet") for name in ("runs", "attempts")}
    return {name: t.drop_columns([c for c in ("suite_id", "cached") if c in t.column_names]).to_pylist()
            for name, t in tables.items()}  # fmt: skip


@pytest.mark.slow
def test_a_warm_run_is_served_whole_without_planning(tree: Path, tmp_path: Path) -> None:
    """The run after a cold one reads its plan's memo and one pack per SDK, imports no SDK and
    writes the tables a run that plans writes; a damaged pack or memo is one line, and the cells
    are served entry by entry (each checked), the pack and memo written again."""
    cache = tmp_path / "cells"
    code, stderr, rows = bench_run(tree, cache)
    assert code == 0 and computed(rows) == ALL, stderr
    assert len(list(cache.glob("plans/*.json"))) == 1 and len(list(cache.glob("packs/*/*/entry.json"))) == 2
    planned = rows_of(tree)

    code, stderr, rows = bench_run(tree, cache, imports=True)
    assert code == 0 and computed(rows) == set() and "cell cache: 4 cells served" in stderr, said(stderr)
    assert imported(stderr, "bench.run.warm") and not imported(stderr, "pydantic_ai"), said(stderr)
    assert not imported(stderr, "agentmaker")
    assert rows_of(tree) == planned

    pack = next(p for p in cache.glob("packs/*/*/runs.arrow") if "pydantic-ai" in str(_read(p)[0]["sdk"]))
    pack.write_bytes(pack.read_bytes()[:-9])
    code, stderr, rows = bench_run(tree, cache, imports=True)
    damaged = [line for line in said(stderr) if "cannot be used" in line]
    assert code == 0 and computed(rows) == set() and len(damaged) == 1 and "one by one" in damaged[0], said(stderr)
    assert imported(stderr, "pydantic_ai") and rows_of(tree) == planned
    code, stderr, rows = bench_run(tree, cache, imports=True)  # the pack was written again
    assert code == 0 and computed(rows) == set() and not imported(stderr, "pydantic_ai"), said(stderr)

    memo = next(cache.glob("plans/*.json"))
    memo.write_text(memo.read_text().replace('"warnings"', '"warning"'))
    code, stderr, rows = bench_run(tree, cache)
    assert code == 0 and computed(rows) == set() and stderr.count("the run plans again") == 1, stderr
    assert rows_of(tree) == planned


@pytest.mark.slow
def test_a_pin_bump_runs_that_sdks_cells_only(tree: Path, tmp_path: Path) -> None:
    """A PR that bumps a package only pydantic-ai requires (pydantic-graph, here a newer release's
    metadata first on the path) runs pydantic-ai's cells again and serves agentmaker's; the run
    after it is served whole again."""
    cache = tmp_path / "cells"
    assert bench_run(tree, cache)[0] == 0
    site = tmp_path / "site"
    _dist(site, "pydantic-graph", "2.68.1")
    code, stderr, rows = bench_run(tree, cache, site=site)
    assert code == 0 and computed(rows) == {"pydantic-ai/valid", "pydantic-ai/malformed_then_valid"}, stderr
    code, stderr, rows = bench_run(tree, cache, site=site, imports=True)
    assert code == 0 and computed(rows) == set() and not imported(stderr, "pydantic_ai"), said(stderr)


def test_a_pack_is_served_whole_and_only_as_the_cells_its_name_digests(tmp_path: Path) -> None:
    """A pack's name is the digest of its cells' keys, each table's sha256 is in its entry.json: a
    table swapped for another pack's is one warning line, the pack removed, and never served."""
    import pyarrow.compute as pc

    from bench.run.cache import group_key

    warned: list[str] = []
    store = CellCache(tmp_path, warn=warned.append)
    baseline = REPO / "results" / "baseline"
    runs = read_table(baseline, "runs").slice(0, 3).sort_by("cell_id")
    attempts = read_table(baseline, "attempts")
    attempts = attempts.filter(pc.is_in(attempts.column("cell_id"), value_set=runs.column("cell_id")))
    cells = [(cell_id, f"{i:064x}") for i, cell_id in enumerate(runs.column("cell_id").to_pylist())]
    store.put_pack(cells, runs, attempts)
    pack = store.pack(group_key(cells))
    assert pack is not None and pack.runs.equals(runs) and pack.attempts.num_rows == attempts.num_rows
    assert set(pack.hits()) == {cell_id for cell_id, _ in cells} and not warned

    fewer = cells[:2]
    store.put_pack(fewer, runs.slice(0, 2), attempts.slice(0, 0))
    folder = tmp_path / "packs" / group_key(cells)[:2] / group_key(cells)
    shutil.copy(tmp_path / "packs" / group_key(fewer)[:2] / group_key(fewer) / "runs.arrow", folder / "runs.arrow")
    assert store.pack(group_key(cells)) is None
    assert len(warned) == 1 and "runs.arrow is not the one its entry.json names" in warned[0]
    assert not folder.exists() and store.pack(group_key(cells)) is None and len(warned) == 1
    assert store.pack(group_key(fewer)) is not None
