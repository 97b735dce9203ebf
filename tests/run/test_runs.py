"""Runs as things a user manages, through the CLI: ``bench runs``, ``bench run --dry-run``, an
empty plan, ``--rerun RUN --outcome``, the interrupted-run message and ``--resume ID|PATH``."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run, read_manifest, read_table
from bench.run.runner import Runner

SLOW_FIXTURES = ("root",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

SMALL = ["--sdk", "openai-parse", "--variant", "default", "--scenario", "valid", "--scenario", "wrong_persistent"]


def bench(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(map(str, args)))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder holding one complete small run."""
    out = tmp_path_factory.mktemp("results")
    code, _, stderr = bench("run", *SMALL, "--out", out, "--no-progress", "--procs", "1")
    assert code == 0, stderr
    return out


@pytest.mark.slow
def test_runs_lists_every_run(root: Path) -> None:
    code, stdout, _ = bench("runs", "--results", root, "--json")
    (run,) = json.loads(stdout)
    cells = read_table(root / run["id"], "runs").num_rows
    assert code == 0 and run["status"] == "complete" and run["latest"] is True
    assert list(run["sdks"]) == ["openai-parse"] and run["cells"] == run["planned"] == cells
    assert sum(run["outcomes"].values()) == cells and run["started_at"]
    code, stdout, _ = bench("runs", "--results", root)
    header, line = stdout.splitlines()
    assert header.split() == ["id", "date", "(UTC)", "status", "sdks", "cells", "outcomes"]
    assert line.startswith(f"*{run['id']}") and f"complete  openai-parse  {cells}/{cells}" in line


@pytest.mark.slow
def test_dry_run_prints_the_plan_and_an_estimate(root: Path) -> None:
    before = sorted(p.name for p in root.iterdir())
    code, stdout, _ = bench("run", *SMALL, "--out", root, "--dry-run")
    planned = read_manifest(latest_run(root))["cells_planned"]
    assert code == 0 and stdout.splitlines()[0].split()[:3] == ["openai-parse", str(planned), "cells"]
    assert (
        f"{planned} cells, " in stdout
        and "estimate: about " in stdout
        and "(mean cell times of 1 past run(s))" in stdout
    )
    assert sorted(p.name for p in root.iterdir()) == before, "a dry run writes nothing"


@pytest.mark.slow
def test_dry_run_list_prints_exactly_the_cells_the_run_wrote(root: Path) -> None:
    """``--dry-run --list``: one line per cell plan, the very cells (ids, and whether each runs)
    the same command's run wrote; ``--list`` alone is refused."""
    code, stdout, _ = bench("run", *SMALL, "--out", root, "--dry-run", "--list")
    header, *lines = stdout.splitlines()
    columns = header.split("\t")
    listed = {
        row["cell_id"]: row["runs"] for row in (dict(zip(columns, line.split("\t"), strict=True)) for line in lines)
    }
    ran = read_table(latest_run(root), "runs").to_pandas()
    assert code == 0 and columns[0] == "cell_id" and len(lines) == len(ran)
    assert listed == {
        cell: "unsupported" if outcome == "unsupported" else "yes"
        for cell, outcome in zip(ran.cell_id, ran.outcome, strict=True)
    }
    code, stdout, stderr = bench("run", *SMALL, "--out", root, "--list")
    assert code == 2 and stdout == "" and stderr == "error: --list prints the cells of a plan; it goes with --dry-run\n"


def test_an_empty_plan_is_exit_2_and_leaves_latest(root: Path) -> None:
    latest = latest_run(root)
    before = sorted(p.name for p in root.iterdir())
    code, stdout, stderr = bench("run", "--sdk", "agentmaker", "--mode", "tool", "--scenario", "valid", "--out", root)
    assert code == 2 and stdout == "" and "error: every cell of the plan is unsupported (" in stderr
    assert latest_run(root) == latest and sorted(p.name for p in root.iterdir()) == before


@pytest.mark.slow
def test_rerun_runs_chosen_cells_again_in_place(root: Path) -> None:
    run = latest_run(root)
    rows = read_table(run, "runs").to_pandas().set_index("cell_id")
    chosen = set(rows.index[rows.outcome == "wrong"])
    assert chosen and len(chosen) < len(rows)
    code, _, stderr = bench("run", "--rerun", run.name, "--outcome", "wrong,timeout", "--out", root, "--no-progress")
    assert code == 0, stderr
    after = read_table(run, "runs").to_pandas().set_index("cell_id")
    assert sorted(after.index) == sorted(rows.index), "same cells, each once"
    moved = after.index[after.started_at != rows.loc[after.index, "started_at"]]
    assert set(moved) == chosen and set(after.loc[list(chosen), "outcome"]) == {"wrong"}
    (entry,) = read_manifest(run)["reruns"]
    assert entry["outcomes"] == ["timeout", "wrong"] and entry["cells"] == len(chosen)
    code, _, stderr = bench("run", "--rerun", run.name, "--out", root)
    assert code == 2 and "--rerun RUN and --outcome go together" in stderr
    code, _, stderr = bench("run", "--rerun", run.name, "--outcome", "tiemout", "--out", root)
    assert code == 2 and "--outcome tiemout: unknown; known: " in stderr


@pytest.mark.slow
def test_an_interrupted_run_names_its_path_and_resumes_by_id_or_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Runner.run_cell
    started: list[int] = []

    async def interrupt_after_one(self: Runner, plan, provider, slot=None):  # type: ignore[no-untyped-def]
        started.append(1)
        if len(started) == 2:  # Ctrl-C, as the terminal sends it, once a cell has run
            os.kill(os.getpid(), signal.SIGINT)
        return await real(self, plan, provider, slot)

    monkeypatch.setattr(Runner, "run_cell", interrupt_after_one)
    args = [*SMALL, "--out", tmp_path, "--no-progress", "--procs", "1", "--concurrency", "1"]
    code, _, stderr = bench("run", *args)
    run = latest_run(tmp_path)
    assert code == 130 and read_manifest(run)["status"] == "interrupted"
    assert f"written to {run}; finish with: bench run --resume {run}" in stderr
    monkeypatch.setattr(Runner, "run_cell", real)
    code, _, stderr = bench("run", "--resume", run.name, "--out", tmp_path, "--no-progress", "--procs", "1")
    assert code == 0 and read_manifest(run)["status"] == "complete", stderr
    elsewhere = tmp_path / "elsewhere"
    code, _, stderr = bench("run", "--resume", run, "--out", elsewhere, "--no-progress", "--procs", "1")
    assert code == 0 and len(read_manifest(run)["resumed"]) == 2 and not elsewhere.exists(), stderr


@pytest.mark.slow
def test_harness_errors_and_failed_environments_are_both_printed(root: Path, tmp_path: Path) -> None:
    """Exit 3 for a harness error no longer hides the release environments that failed to build:
    both are said, then the harness error's code is the exit code."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.results.store import RUNS_FILE, write_manifest

    run = tmp_path / "results" / "run"
    shutil.copytree(latest_run(root), run)
    runs = read_table(run, "runs")
    outcomes = ["harness_error", *runs.column("outcome").to_pylist()[1:]]
    column = runs.schema.get_field_index("outcome")
    changed = runs.set_column(column, "outcome", pa.array(outcomes, runs.schema.field(column).type))
    pq.write_table(changed, run / RUNS_FILE)
    write_manifest(run, read_manifest(run) | {"environment_errors": ["pydantic-ai==0.0.1: the build failed"]})
    code, _, stderr = bench("run", "--resume", run, "--no-progress", "--procs", "1")
    assert code == 3, stderr
    assert "error: harness errors occurred" in stderr and "error: pydantic-ai==0.0.1: the build failed" in stderr


@pytest.mark.slow
def test_a_rerun_interrupted_while_dropping_rows_is_resumable(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C between staging the two rewritten tables: the manifest no longer says complete,
    and --resume brings back every cell with its attempts (tests/run/test_rerun_atomic.py kills
    the rerun at each of its writes)."""
    import shutil

    from bench.results import store

    run = tmp_path / "results" / "run"
    shutil.copytree(latest_run(root), run)
    cells = sorted(read_table(run, "runs").column("cell_id").to_pylist())
    attempts = read_table(run, "attempts").num_rows
    real = store.atomic_write_table
    staged: list[Path] = []

    def interrupted_before_the_second_table(table, target: Path) -> None:  # type: ignore[no-untyped-def]
        if target.name.endswith(".next"):
            if staged:
                raise KeyboardInterrupt
            staged.append(target)
        real(table, target)

    monkeypatch.setattr(store, "atomic_write_table", interrupted_before_the_second_table)
    code, _, stderr = bench("run", "--rerun", run, "--outcome", "wrong", "--no-progress", "--procs", "1")
    assert code == 130 and f"finish with: bench run --resume {run}" in stderr, stderr
    assert read_manifest(run)["status"] == "interrupted" and staged
    monkeypatch.setattr(store, "atomic_write_table", real)
    code, _, stderr = bench("run", "--resume", run, "--no-progress", "--procs", "1")
    assert code == 0 and read_manifest(run)["status"] == "complete", stderr
    assert sorted(read_table(run, "runs").column("cell_id").to_pylist()) == cells
    assert read_table(run, "attempts").num_rows == attempts


@pytest.mark.slow
def test_resume_and_rerun_take_procs_and_refuse_what_they_ignore(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--procs reaches a resume and a rerun; other settings come from the manifest, and a flag
    given anyway is refused in one line (exit 2); --resume with --rerun is refused too."""
    import shutil

    from bench.run import suite

    run = tmp_path / "results" / "run"
    shutil.copytree(latest_run(root), run)
    asked: list[int | None] = []
    real = suite.process_count
    monkeypatch.setattr(suite, "process_count", lambda requested, cells: asked.append(requested) or real(1, cells))
    code, _, stderr = bench("run", "--rerun", run, "--outcome", "wrong", "--no-progress", "--procs", "1")
    assert code == 0 and asked == [1] and "warning" not in stderr, stderr
    code, _, stderr = bench("run", "--resume", run, "--no-progress", "--procs", "1", "--reps", "3", "--sdk", "x")
    assert code == 2 and asked == [1], stderr
    assert stderr == (
        "error: --resume runs with the run's recorded settings; it does not take --sdk, --reps (start a new run)\n"
    )
    code, stdout, stderr = bench("run", "--resume", run, "--dry-run")
    assert code == 2 and stdout == "" and "error: --dry-run prints the plan of a new run;" in stderr
    code, _, stderr = bench("run", "--resume", run, "--rerun", run, "--outcome", "timeout")
    assert code == 2 and stderr == (
        "error: --resume and --rerun go separately: --resume finishes an interrupted run, --rerun a complete one\n"
    )


def test_one_shard_rule_for_planning_and_the_gate() -> None:
    """A cell is in exactly one shard of N, and the run plan the gate reads from a shard's
    manifest covers exactly the cells planning put in that shard (bench.run.plan.shard_of)."""
    from bench.run.plan import Filters, expand, in_shard, shard_of
    from bench.run.runplan import RunPlan
    from bench.run.suite import SuiteRequest, select_scenarios
    from bench.sdk import registry

    adapter = registry.load("agentmaker")
    plans = expand([adapter], select_scenarios(SuiteRequest()), Filters())
    for plan in plans:
        key = ("", plan.cell.sdk, plan.cell.mode, plan.cell.variant, plan.cell.protocol, plan.cell.stream, "s")
        shards = [index for index in (1, 2, 3) if in_shard(plan, (index, 3))]
        covered = [index for index in (1, 2, 3) if RunPlan(shard=(index, 3)).covers(key, [plan.cell_id])]
        assert shards == covered == [shard_of(plan.cell_id, 3)]
    assert {shard_of(plan.cell_id, 3) for plan in plans} == {1, 2, 3}


@pytest.mark.slow
def test_processes_are_sized_by_the_cells_that_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell the runner will not run (here a scenario gap) does not count towards --procs
    sizing: the count is the runner's own decision (Runner.runs)."""
    from bench.run import suite

    counted: list[int] = []
    real = suite.process_count
    monkeypatch.setattr(suite, "process_count", lambda requested, cells: counted.append(cells) or real(1, cells))
    monkeypatch.setattr(Runner, "scenario_gap", lambda self, plan: "gap" if plan.scenario.name == "valid" else None)
    code, _, stderr = bench("run", *SMALL, "--out", tmp_path, "--no-progress")
    assert code == 0, stderr
    runs = read_table(latest_run(tmp_path), "runs").to_pandas()
    ran = int((runs.outcome != "unsupported").sum())
    assert 0 < ran < len(runs) and counted == [ran]


def test_one_rule_names_an_adapter() -> None:
    """The own agent's name, else the SDK's: bench.results.labels.adapter_name, and its frame version,
    read by cells, the gate, run plans and the time estimate; importing it (through bench.sdk.adapter,
    as a release worker does) does not import pandas."""
    import subprocess
    import sys

    import pandas as pd

    from bench.core.vocabulary import Mode, ModeSupport, Protocol
    from bench.gate import compare as gate
    from bench.results import labels
    from bench.run.runplan import RunPlan
    from bench.sdk.adapter import Cell

    for agent, name in (("", "pydantic-ai"), ("support", "support")):
        cell = Cell("pydantic-ai", Mode.TOOL, "default", Protocol.CHAT, False, ModeSupport.BUILTIN, agent=agent)
        key = (agent, "pydantic-ai", "tool", "default", "openai-chat", False, "valid")
        assert cell.key == gate.adapter_name(key) == labels.adapter_name(agent, "pydantic-ai") == name
        assert RunPlan(sdks=frozenset({name})).covers(key) and not RunPlan(sdks=frozenset({"x"})).covers(key)
    frame = pd.DataFrame({"agent": [None, "", "support"], "sdk": ["a", "b", "c"]})
    assert list(labels.adapter_names(frame)) == ["a", "b", "support"]
    assert list(labels.adapter_names(frame.drop(columns="agent"))) == ["a", "b", "c"]
    code = "import sys, bench.sdk.adapter, bench.releases.worker; sys.exit('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_release_plan_expands_the_scenarios_the_adapter_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter that adds a scenario (a user's agent adds one per opted-in tool) plans it with
    --release too: agentmaker@pinned plans exactly the cells of the in-process run."""
    from bench.run.plan import Filters
    from bench.run.suite import SuiteRequest, plan_suite
    from bench.scenarios.files import SCENARIO_DIR, load_paths
    from bench.sdk import registry

    (extra,) = [s for s in load_paths([SCENARIO_DIR]) if s.name == "http_503_then_valid"]
    adapter_type = type(registry.load("agentmaker"))
    monkeypatch.setattr(adapter_type, "scenarios", lambda self, scenarios: [*scenarios, extra])
    request = SuiteRequest(sdks=("agentmaker",), filters=Filters(scenarios=frozenset({"valid", extra.name})))
    _, in_process = plan_suite(request, lambda message: None)
    _, released = plan_suite(replace(request, releases=("agentmaker@pinned",)), lambda message: None)
    assert {plan.scenario.name for plan in in_process} == {"valid", extra.name}
    assert sorted(plan.cell_id for plan in released) == sorted(plan.cell_id for plan in in_process)
