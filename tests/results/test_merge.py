"""``bench merge`` and ``bench baseline update`` through their CLI: the default matrix run in
shards and merged equals the unsharded run cell by cell; runs that do not belong together are
refused unless forced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app as cli
from bench.gate.compare import KEY
from bench.results.golden import BUILTIN_SDKS, differences, golden_frame
from bench.results.store import load_run, read_manifest, write_manifest
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite
from tests.paths import REPO

SLOW_FIXTURES = ("halves", "narrow_run")
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

runner = CliRunner()
SHARDS = 3
BASELINE = REPO / "results" / "baseline"


def bench(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(cli, list(map(str, args)))
    return result.exit_code, result.stdout, result.stderr


SHARDED_SCENARIOS = frozenset(
    {"valid", "malformed_then_valid", "wrong_persistent", "tool_bad_args_then_ok", "http_500_then_valid"}
)
"""The slice of the default matrix the shard test runs again, on every SDK: an answer, a retry, a
fallback or a wrong answer, a tool loop, a transport retry (the whole matrix again cost about six
minutes of CI; slicing does not depend on which scenarios are asked for)."""


def test_sharded_run_merged_equals_the_unsharded_run_on_every_sdk(default_run: dict, tmp_path: Path) -> None:
    filters = Filters(scenarios=SHARDED_SCENARIOS)
    shards = [
        run_suite(
            SuiteRequest(sdks=BUILTIN_SDKS, filters=filters, shard=(i, SHARDS), results_root=tmp_path / f"shard{i}")
        )
        for i in range(1, SHARDS + 1)
    ]
    code, stdout, stderr = bench("merge", *shards, "--out", tmp_path / "merged")
    assert code == 0, stderr
    merged = load_run(tmp_path / "merged")
    whole = default_run["runs"][default_run["runs"].scenario.isin(SHARDED_SCENARIOS)]
    assert len(merged["runs"]) == len(whole) and f"{len(whole)} cells from {SHARDS} run(s)" in stdout
    assert sorted(merged["runs"].cell_id) == sorted(whole.cell_id)
    assert set(merged["runs"].sdk) == set(BUILTIN_SDKS)
    assert all(len(load_run(shard)["runs"]) < len(whole) for shard in shards)
    changed = differences(merged["runs"], golden_frame(whole))
    assert not changed, "cell by cell (whole -> merged):\n" + "\n".join(changed[:30])
    assert set(merged["attempts"].cell_id) == set(whole[whole.outcome != "unsupported"].cell_id)
    manifest = merged["manifest"]
    assert manifest["shards_complete"] is True and manifest["status"] == "complete"
    assert [m["shard"] for m in manifest["merged_from"]] == [[i, SHARDS] for i in range(1, SHARDS + 1)]
    assert set(merged["runs"].suite_id) == {manifest["suite_id"]}
    code, _, _ = bench("gate", tmp_path / "merged", "--baseline", default_run["path"])
    assert code == 0


def small_run(root: Path, shard: tuple[int, int] | None = None, sdk: str = "pydantic-ai", mode: str = "tool") -> Path:
    request = SuiteRequest(
        sdks=(sdk,),
        shard=shard,
        results_root=root,
        filters=Filters(modes=frozenset({mode}), scenarios=frozenset({"valid", "wrong_persistent"})),
    )
    return run_suite(request)


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("halves")
    return [small_run(root / f"half{i}", (i, 2)) for i in (1, 2)]


def editable_copy(run: Path, target: Path) -> Path:
    return Path(shutil.copytree(run, target))


@pytest.mark.slow
def test_shards_merge_and_a_missing_shard_is_flagged(halves: list[Path], tmp_path: Path) -> None:
    code, _, _ = bench("merge", *halves, "--out", tmp_path / "both")
    assert code == 0 and read_manifest(tmp_path / "both")["shards_complete"] is True
    code, _, stderr = bench("merge", halves[0], "--out", tmp_path / "one")
    assert code == 0 and "do not cover 1..N" in stderr


def test_different_sdk_versions_are_refused_unless_forced(halves: list[Path], tmp_path: Path) -> None:
    other = editable_copy(halves[1], tmp_path / "other")
    manifest = read_manifest(other)
    write_manifest(other, manifest | {"sdk_versions": manifest["sdk_versions"] | {"pydantic-ai": "0.0.1"}})
    code, stdout, stderr = bench("merge", halves[0], other, "--out", tmp_path / "merged")
    assert code == 2 and stdout == ""
    assert "runs do not belong together" in stderr and "pydantic-ai 0.0.1" in stderr
    assert not (tmp_path / "merged").exists()
    code, _, stderr = bench("merge", halves[0], other, "--out", tmp_path / "merged", "--force")
    assert code == 0 and "warning: merged despite" in stderr
    assert read_manifest(tmp_path / "merged")["forced_despite"]


def test_a_scenario_defined_differently_is_refused(halves: list[Path], tmp_path: Path) -> None:
    other = editable_copy(halves[1], tmp_path / "other")
    table = pq.read_table(other / "runs.parquet")
    faults = [
        "none-edited" if s == "valid" else f
        for s, f in zip(table["scenario"].to_pylist(), table["fault"].to_pylist(), strict=True)
    ]
    table = table.set_column(table.schema.get_field_index("fault"), "fault", [faults])
    pq.write_table(table.cast(pq.read_schema(halves[1] / "runs.parquet")), other / "runs.parquet")
    code, _, stderr = bench("merge", halves[0], other, "--out", tmp_path / "merged")
    assert code == 2 and "scenario 'valid'" in stderr


def test_overlapping_cells_are_refused_unless_forced(halves: list[Path], tmp_path: Path) -> None:
    again = editable_copy(halves[0], tmp_path / "again")
    code, _, stderr = bench("merge", halves[0], again, "--out", tmp_path / "merged")
    assert code == 2 and "in more than one run" in stderr
    code, stdout, _ = bench("merge", halves[0], again, "--out", tmp_path / "merged", "--force")
    rows = len(pq.read_table(halves[0] / "runs.parquet"))
    assert code == 0 and f"{rows} cells from 2 run(s)" in stdout


def test_settings_and_targets(halves: list[Path], tmp_path: Path) -> None:
    code, _, stderr = bench("merge", halves[0], tmp_path / "nothing", "--out", tmp_path / "merged")
    assert code == 2 and "not a misfit-bench run" in stderr
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, _, stderr = bench("merge", *halves, "--out", tmp_path / "taken", "--force")
    assert code == 2 and "not empty and not a run" in stderr
    other = editable_copy(halves[1], tmp_path / "other")
    write_manifest(other, read_manifest(other) | {"reps": 3})
    code, _, stderr = bench("merge", halves[0], other, "--out", tmp_path / "merged")
    assert code == 2 and "reps is 3" in stderr


def test_baseline_update_writes_runs_and_manifest_only(halves: list[Path], tmp_path: Path) -> None:
    results = tmp_path / "results"
    code, stdout, stderr = bench("baseline", "update", halves[0], "--results", results)
    assert code == 2 and "the run is shard 1/2" in stderr and "the run is filtered (--mode tool" in stderr
    assert "--merge replaces only the cells this run has; --force" in stderr and not (results / "baseline").exists()
    code, stdout, _ = bench("baseline", "update", halves[0], "--results", results, "--force")
    rows = [len(pq.read_table(half / "runs.parquet")) for half in halves]
    target = (results / "baseline").resolve()
    assert code == 0 and f"wrote {target}: {rows[0]} cells (pydantic-ai " in stdout
    assert f"replaced 0, kept 0, added {rows[0]} cells" in stdout
    assert sorted(p.name for p in (results / "baseline").iterdir()) == ["manifest.json", "runs.parquet"]
    manifest = json.loads((results / "baseline" / "manifest.json").read_text())
    assert manifest["baseline_of"] == read_manifest(halves[0])["suite_id"]
    code, _, _ = bench("gate", halves[0], "--baseline", "baseline", "--results", results)
    assert code == 0
    # The other half has none of the first half's cells: it would not replace them, but merges.
    code, stdout, stderr = bench("baseline", "update", halves[1], "--results", results)
    assert code == 2 and f"the run lacks {rows[0]} cell(s) the baseline has" in stderr
    code, stdout, _ = bench("baseline", "update", halves[1], "--results", results, "--merge")
    assert code == 0 and f"replaced 0, kept {rows[0]}, added {rows[1]} cells" in stdout
    assert len(pq.read_table(results / "baseline" / "runs.parquet")) == sum(rows)
    assert read_manifest(results / "baseline")["baseline_merged"][0]["suite_id"] == read_manifest(halves[1])["suite_id"]


def test_an_update_interrupted_between_its_renames_loses_no_baseline(
    halves: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename of the new baseline into place fails, after the old one is moved aside: the
    old one is put back at once, whole, and nothing is left beside it (a SIGKILL there is put
    back by the next update: tests/results/test_store_folder_swap.py); a merge then keeps its
    cells."""
    from bench.gate import baseline

    results = tmp_path / "results"
    assert bench("baseline", "update", halves[0], "--results", results, "--force")[0] == 0
    before = read_manifest(results / "baseline")
    rename = Path.rename

    def interrupted(self: Path, target: Path) -> Path:
        if Path(target) == results / "baseline" and ".baseline.old" not in self.parts:  # the new one
            raise KeyboardInterrupt
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt):
        baseline.update_baseline(str(halves[1]), results, merge=True)
    monkeypatch.undo()
    assert read_manifest(results / "baseline") == before
    assert sorted(p.name for p in results.iterdir()) == ["baseline"]
    update = baseline.update_baseline(str(halves[1]), results, merge=True)
    rows = [len(pq.read_table(half / "runs.parquet")) for half in halves]
    assert (update.kept, update.added) == (rows[0], rows[1])
    assert len(pq.read_table(results / "baseline" / "runs.parquet")) == sum(rows)
    assert sorted(p.name for p in results.iterdir()) == ["baseline"]


@pytest.fixture(scope="module")
def narrow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pydantic-ai's tool mode on two scenarios: a run far narrower than the committed baseline."""
    return small_run(tmp_path_factory.mktemp("narrow"))


@pytest.mark.slow
def test_a_narrow_run_cannot_replace_a_wide_baseline(narrow_run: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(BASELINE, results / "baseline")
    before = (results / "baseline" / "runs.parquet").read_bytes()
    code, stdout, stderr = bench("baseline", "update", narrow_run, "--results", results)
    assert code == 2 and (results / "baseline" / "runs.parquet").read_bytes() == before
    committed = set(pq.read_table(BASELINE / "runs.parquet", columns=["sdk"])["sdk"].to_pylist())
    lacking = sorted(committed - {"pydantic-ai"})
    assert f"the run lacks SDK(s) the baseline has: {', '.join(lacking)}" in stderr
    assert "the run is filtered (--mode tool --scenario valid,wrong_persistent)" in stderr
    # The gate's diff is shown first: what the update would accept.
    assert stdout.startswith("## misfit-bench gate: ") and "outside the current run's plan" in stdout
    code, stdout, _ = bench("baseline", "update", narrow_run, "--results", results, "--merge")
    run_rows = pq.read_table(narrow_run / "runs.parquet").to_pandas()
    replaced = run_rows.drop_duplicates(KEY).shape[0]
    assert code == 0 and f"replaced {replaced}, kept " in stdout and "added 0 cells" in stdout
    assert "new to the baseline" not in stdout
    merged = pq.read_table(results / "baseline" / "runs.parquet").to_pandas()
    wide = pq.read_table(BASELINE / "runs.parquet").to_pandas()
    assert len(merged) == len(wide) and set(merged.sdk) == set(wide.sdk)
    assert set(run_rows.cell_id) <= set(merged.cell_id)
    assert set(merged[merged.suite_id == run_rows.suite_id[0]].cell_id) == set(run_rows.cell_id)
    code, stdout, _ = bench("baseline", "update", narrow_run, "--results", results, "--force")
    assert code == 0 and f"wrote {(results / 'baseline').resolve()}: {len(run_rows)} cells" in stdout
    assert len(pq.read_table(results / "baseline" / "runs.parquet")) == len(run_rows)


def test_baseline_update_refuses_runs_with_harness_errors(halves: list[Path], tmp_path: Path) -> None:
    broken = editable_copy(halves[0], tmp_path / "broken")
    table = pq.read_table(broken / "runs.parquet")
    outcomes = table["outcome"].to_pylist()
    outcomes[0] = "harness_error"
    table = table.set_column(table.schema.get_field_index("outcome"), table.schema.field("outcome"), [outcomes])
    pq.write_table(table, broken / "runs.parquet")
    code, _, stderr = bench("baseline", "update", broken, "--results", tmp_path / "results")
    assert code == 2 and "harness_error" in stderr and not (tmp_path / "results" / "baseline").exists()


@pytest.mark.slow
def test_a_merge_names_the_sdks_it_brings_into_the_baseline(tmp_path: Path) -> None:
    """A run of every installed SDK also runs a plugin installed only for tests (openai-parse here):
    merged into the committed baseline, its cells are named, not slipped in under a count."""
    results = tmp_path / "results"
    shutil.copytree(BASELINE, results / "baseline")
    assert "openai-parse" not in set(pq.read_table(BASELINE / "runs.parquet").column("sdk").to_pylist())
    plugin_run = small_run(tmp_path / "plugin", sdk="openai-parse", mode="native")
    code, stdout, stderr = bench("baseline", "update", plugin_run, "--results", results, "--merge")
    assert code == 0, stderr
    added = pq.read_table(plugin_run / "runs.parquet").num_rows
    assert f"added {added} cells; SDK(s) new to the baseline: openai-parse" in stdout


def test_a_shard_on_a_user_type_does_not_merge_with_one_on_the_built_in_tasks(
    halves: list[Path], tmp_path: Path
) -> None:
    other = editable_copy(halves[1], tmp_path / "other")
    typed = {"reference": "myapp.models:Ticket", "valid": {}, "wrong": None, "violations": {}, "not_measured": {}}
    write_manifest(other, read_manifest(other) | {"output_type": typed})
    code, stdout, stderr = bench("merge", halves[0], other, "--out", tmp_path / "merged")
    assert code == 2 and stdout == "" and not (tmp_path / "merged").exists()
    assert "one run answers the user type myapp.models:Ticket, the other the built-in tasks" in stderr
