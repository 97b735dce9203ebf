"""``bench gate`` through its CLI, on real runs: the committed baseline, a rerun of the default
matrix, the baseline with pydantic-ai's hardened variant swapped for its default variant (a real
regression: those are the default variant's real outcomes), and real stochastic runs of
pydantic-ai against a malformed-JSON sweep."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.cli import app as cli
from bench.gate import compare as gate
from bench.gate import output as gate_output
from bench.gate import power as gate_power
from bench.results import columns
from bench.results.store import read_manifest, read_table, write_manifest
from bench.run.plan import Filters
from bench.run.runner import RunOptions
from bench.run.suite import SuiteRequest, run_suite
from tests.paths import REPO

BASELINE = REPO / "results" / "baseline"
SLOW_FIXTURES = ("sweeps", "swapped", "capped")
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""
SWAP_MATCH = ["sdk", "mode", "protocol", "stream", "scenario"]
SWAP_VALUES = ["outcome", "model_calls", "exception_type", "input_tokens_billed", "output_tokens_billed"]

runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The gate reads the working directory's pyproject.toml and GitHub's variables: isolate both."""
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)


def bench_gate(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["gate", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def write_run(directory: Path, runs: pd.DataFrame, manifest: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(runs, schema=columns.RUNS, preserve_index=False), directory / "runs.parquet")
    write_manifest(directory, manifest)
    return directory


def baseline_runs() -> pd.DataFrame:
    """Through the reader: the committed baseline may predate a column (schema 3's ``agent``)."""
    return read_table(BASELINE, "runs").to_pandas()


def swap_variant(runs: pd.DataFrame, sdk: str, worse: str, better: str) -> pd.DataFrame:
    """The ``better`` variant's rows carrying what the ``worse`` variant really did in the same
    cells: the same run, as if the hardened configuration had been lost."""
    runs = runs.copy()
    source = runs[(runs.sdk == sdk) & (runs.variant == worse)].set_index(SWAP_MATCH)[SWAP_VALUES]
    target = (runs.sdk == sdk) & (runs.variant == better)
    runs.loc[target, SWAP_VALUES] = source.loc[runs.loc[target].set_index(SWAP_MATCH).index].to_numpy()
    return runs


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(
        tmp_path_factory.mktemp("swapped"),
        swap_variant(baseline_runs(), "pydantic-ai", "default", "hardened"),
        read_manifest(BASELINE),
    )


def test_identical_rerun_of_the_default_matrix_passes(default_run: dict) -> None:
    code, stdout, stderr = bench_gate(default_run["path"], "--baseline", BASELINE)
    assert code == 0, stdout + stderr
    assert "## misfit-bench gate: PASS" in stdout
    compared = int((default_run["runs"].outcome != "unsupported").sum())
    assert f"0 regressed of {compared} cells compared; 0 not compared" in stdout
    assert "SDK versions changed" not in stdout


@pytest.mark.slow
def test_hardened_variant_lost_fails_and_names_the_cells(swapped: Path) -> None:
    code, stdout, stderr = bench_gate(swapped, "--baseline", BASELINE, "--json")
    assert code == 1, stderr
    report = json.loads(stdout)
    regressed = {(c["mode"], c["protocol"], c["scenario"]): c for c in report["cells"] if c["regressed"]}
    assert {c["sdk"] for c in report["cells"] if c["regressed"]} == {"pydantic-ai"}
    assert {c["variant"] for c in report["cells"] if c["regressed"]} == {"hardened"}
    # The hardened variant's output validator turned a wrong answer into a retry, then a fallback.
    wrong = regressed[("tool", "openai-chat", "wrong_persistent")]
    assert (wrong["baseline"], wrong["current"], wrong["regressed"]) == ("fallback(4)", "wrong(1)", ["user_failure"])
    malformed = regressed[("tool", "openai-chat", "malformed_persistent")]
    assert (malformed["baseline"], malformed["current"], malformed["regressed"]) == (
        "fallback(4)",
        "raised(2)",
        ["raised"],
    )
    _, markdown, _ = bench_gate(swapped, "--baseline", BASELINE)
    assert "## misfit-bench gate: FAIL" in markdown
    assert (
        "| pydantic-ai/tool/hardened/openai-chat x wrong_persistent | fallback(4) | wrong(1) | user_failure 0% -> 100%"
        in markdown
    )


@pytest.mark.slow
def test_at_most_ten_annotations_worst_first(swapped: Path) -> None:
    code, _, stderr = bench_gate(swapped, "--baseline", BASELINE, "--annotations")
    errors = [line for line in stderr.splitlines() if line.startswith("::error")]
    assert code == 1 and len(errors) == 10
    assert errors[0].startswith("::error title=bench gate regression::pydantic-ai/")
    assert "100%25" in errors[0], "a % in a workflow command is escaped"
    _, _, quiet = bench_gate(swapped, "--baseline", BASELINE)
    assert "::error" not in quiet, "annotations only on GitHub Actions or when asked"


@pytest.mark.slow
def test_thresholds_from_pyproject_and_command_line(swapped: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.bench.gate]\n"
        'thresholds = ["user_failure:+100pp", "raised:+100pp", "model_calls:+20", "billed_tokens:+100%"]\n'
    )
    code, stdout, _ = bench_gate(swapped, "--baseline", BASELINE)
    # Within the wide thresholds but for the cells that now hand a wrong answer on: a deterministic
    # cell newly wrong is a regression whatever the threshold.
    rows = [line for line in stdout.split("### Regressions")[1].split("###")[0].splitlines() if line.startswith("| p")]
    assert code == 1 and "`raised:+100pp`" in stdout and rows
    assert all("| wrong(1) | user_failure 0% -> 100% (+100pp, a deterministic cell newly there" in r for r in rows)
    code, stdout, _ = bench_gate(swapped, "--baseline", BASELINE, "-t", "raised:+0pp")
    assert code == 1 and "raised 0% -> 100% (+100pp, allowed +0pp)" in stdout.split("### Regressions")[1]


@pytest.mark.slow
def test_junit_has_one_testcase_per_gated_cell(swapped: Path, tmp_path: Path) -> None:
    target = tmp_path / "reports" / "gate.xml"
    code, stdout, _ = bench_gate(swapped, "--baseline", BASELINE, "--junit", target, "--json")
    report = json.loads(stdout)
    assert code == 1
    suites = {s.get("name"): s for s in ET.parse(target).getroot().iter("testsuite")}
    cases = suites["bench gate"].findall("testcase")
    assert len(cases) == len(report["cells"]) > 1000
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == sum(1 for c in report["cells"] if c["regressed"]) == int(suites["bench gate"].get("failures"))
    assert {c.get("classname").split(".")[0] for c in failed} == {"pydantic-ai"}
    assert not suites["bench gate: not compared"].findall("testcase")


@pytest.mark.slow
def test_step_summary_is_appended(swapped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, stdout, _ = bench_gate(swapped, "--baseline", BASELINE)
    assert code == 1
    assert summary.read_text() == "# earlier step\n" + stdout


@pytest.mark.slow
def test_a_junit_path_that_cannot_be_written_is_one_line(swapped: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _, stderr = bench_gate(swapped, "--baseline", BASELINE, "--junit", blocker / "gate.xml")
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"error: {blocker}") and "cannot write" in stderr


def test_step_summary_stays_under_the_limit(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 50 + "\n")
    gate_output.append_step_summary("".join(f"| line {i} |\n" for i in range(100)), summary, limit=400)
    text = summary.read_text()
    assert len(text.encode()) <= 400 and text.endswith("in the job log.\n") and "| line 3 |" in text


@pytest.mark.slow
def test_missing_cells_and_changed_sdk_versions_are_reported(tmp_path: Path) -> None:
    runs = baseline_runs()
    dropped = (runs.sdk == "langchain") & (runs.scenario == "valid") & (runs.variant == "default")
    manifest = read_manifest(BASELINE)
    manifest["sdk_versions"] = manifest["sdk_versions"] | {"langchain": "9.9.9"}
    manifest["cells_planned"] = int((~dropped).sum())  # not partial: cells missing for another reason
    current = write_run(tmp_path / "current", runs[~dropped], manifest)
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE)
    assert code == 0
    assert (
        f"**SDK versions changed**: langchain {read_manifest(BASELINE)['sdk_versions']['langchain']} -> 9.9.9" in stdout
    )
    missing = stdout.split("### Not compared")[1]
    # A count per SDK and why (baseline -> current presence), not a row per cell.
    assert missing.startswith(f": planned, but in one run only, or not run in one ({int(dropped.sum())})")
    (row,) = [line for line in missing.splitlines() if line.startswith("| langchain |")]
    assert row == f"| langchain | {int(dropped.sum())} | run -> absent: {int(dropped.sum())} |"
    assert "x valid" not in missing
    code, _, _ = bench_gate(current, "--baseline", BASELINE, "--fail-on-missing")
    assert code == 1
    _, stdout, _ = bench_gate(current, "--baseline", BASELINE, "--json")
    flagged = {c["sdk"] for c in json.loads(stdout)["cells"] if c["sdk_version_changed"]}
    assert flagged == {"langchain"}


def narrow(runs: pd.DataFrame, manifest: dict, sdk: str, mode: str) -> tuple[pd.DataFrame, dict]:
    """A run of one SDK in one mode, with the manifest `bench run --sdk SDK --mode MODE` writes."""
    rows = runs[(runs.sdk == sdk) & (runs["mode"] == mode)]
    request = manifest["request"] | {"sdks": [sdk], "filters": manifest["filters"] | {"modes": [mode]}}
    manifest = manifest | {
        "request": request,
        "filters": request["filters"],
        "sdk_versions": {sdk: manifest["sdk_versions"][sdk]},
        "cells_planned": len(rows),
    }
    return rows, manifest


def test_a_narrow_run_is_compared_on_its_plan_only(tmp_path: Path) -> None:
    runs = baseline_runs()
    rows, manifest = narrow(runs, read_manifest(BASELINE), "langchain", "tool")
    current = write_run(tmp_path / "narrow", rows, manifest)
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE)
    outside = len(runs.drop_duplicates(gate.KEY)) - len(rows.drop_duplicates(gate.KEY))
    assert code == 0, stdout
    assert "0 not compared" in stdout and "### Not compared" not in stdout and "absent" not in stdout
    assert f"- outside the current run's plan (not compared): {outside} baseline cells (agentmaker " in stdout
    assert "SDK versions changed" not in stdout, "an SDK outside the plan is not 'absent now'"


@pytest.mark.slow
def test_a_shard_is_compared_on_its_slice(tmp_path: Path) -> None:
    runs, manifest = baseline_runs(), read_manifest(BASELINE)
    rows = runs[runs.cell_id.map(lambda cid: int(cid, 16) % 3 == 1)]
    current = write_run(tmp_path / "shard", rows, manifest | {"shard": [2, 3], "cells_planned": len(rows)})
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE)
    assert code == 0 and "0 not compared" in stdout
    assert f"(not compared): {len(runs) - len(rows)} baseline cells" in stdout


@pytest.mark.slow
def test_an_interrupted_run_is_partial_unless_allowed(tmp_path: Path) -> None:
    runs = baseline_runs()
    manifest = read_manifest(BASELINE) | {"status": "interrupted", "cells_planned": len(runs)}
    current = write_run(tmp_path / "interrupted", runs.iloc[: len(runs) // 2], manifest)
    code, stdout, stderr = bench_gate(current, "--baseline", BASELINE)
    assert code == 6 and "## misfit-bench gate: PARTIAL RUN" in stdout, stderr
    assert f"> **Partial run**: the run is interrupted: {len(runs) // 2} of {len(runs)} planned cells written" in stdout
    assert f"bench run --resume {current}" in stdout
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE, "--allow-partial")
    assert code == 0 and "## misfit-bench gate: PASS" in stdout and "> **Partial run**" in stdout


@pytest.mark.slow
def test_a_change_in_rep_count_alone_is_not_a_change(tmp_path: Path) -> None:
    runs = baseline_runs()
    tripled = pd.concat([runs.assign(rep=rep) for rep in range(3)], ignore_index=True)
    current = write_run(tmp_path / "reps", tripled, read_manifest(BASELINE) | {"reps": 3})
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE, "--json", "--allow-option-change")
    report = json.loads(stdout)
    assert code == 0 and report["cells"] and not [c for c in report["cells"] if c["changed"]]
    assert {c["current"] for c in report["cells"]} >= {"ok(1) x3"}


CAPPED = ("valid", "malformed_then_valid", "tool_ok", "malformed_persistent")
"""In the baseline (call cap 12) pydantic-ai's tool mode on openai-chat: ok(1), recovered(2),
ok(2) and raised(2); at a cap of one call every one but the control needs a second call."""


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of that slice with ``--call-cap 1`` (issue 45: the gate listed 193 such cells as
    "changed within thresholds")."""
    request = SuiteRequest(
        sdks=("pydantic-ai",),
        filters=Filters(
            modes=frozenset({"tool"}), variants=frozenset({"default"}), protocols=frozenset({"openai-chat"}),
            scenarios=frozenset(CAPPED),
        ),
        options=RunOptions(call_cap=1),
        results_root=tmp_path_factory.mktemp("capped"),
    )  # fmt: skip
    return run_suite(request)


def test_runs_made_with_another_call_cap_are_refused_naming_the_option(capped: Path) -> None:
    code, stdout, stderr = bench_gate(capped, "--baseline", BASELINE)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stdout + stderr
    assert (
        f"error: {capped} and {BASELINE} are not comparable: --call-cap 12 in the baseline, 1 in the current" in stderr
    )
    assert "--allow-option-change" in stderr


def test_a_deterministic_cell_that_newly_runs_away_is_a_regression_whatever_the_thresholds(capped: Path) -> None:
    wide = [arg for metric in gate.METRICS for arg in ("-t", f"{metric}:+100{'pp' if metric in gate.RATES else '%'}")]
    for thresholds in ([], wide):
        code, stdout, stderr = bench_gate(capped, "--baseline", BASELINE, "--allow-option-change", *thresholds)
        assert code == 1, stdout + stderr
        head = stdout.split("\n\n")[1]
        assert head.startswith("> **Options changed** (compared anyway, --allow-option-change): --call-cap 12 in")
        assert "3 regressed of 4 cells compared" in stdout and "### Changed within thresholds" not in stdout
        for scenario, before in (("malformed_then_valid", "recovered(2)"), ("tool_ok", "ok(2)")):
            (row,) = [
                line for line in stdout.splitlines() if line.endswith(f"x {scenario}") or f"x {scenario} |" in line
            ]
            assert f"| {before} | runaway(1) | runaway 0% -> 100% (+100pp, " in row
    assert "a deterministic cell newly there: a regression whatever the threshold" in stdout
    _, text, _ = bench_gate(capped, "--baseline", BASELINE, "--allow-option-change", "--json")
    report = json.loads(text)
    assert report["option_changes"] == {"--call-cap": {"baseline": "12", "current": "1"}}
    assert {c["scenario"] for c in report["cells"] if c["regressed"] == ["runaway"]} == set(CAPPED) - {"valid"}


@pytest.mark.parametrize(
    ("change", "option"),
    [
        ({"options": {"time_limit_s": 5.0}}, "--time-limit each adapter's own in the baseline, 5 in the current"),
        ({"reps": 3}, "--reps 1 in the baseline, 3 in the current run"),
        ({"seed": 7}, "--seed 0 in the baseline, 7 in the current run"),
        ({"request": {"tasks": "cassettes"}}, "--tasks builtin in the baseline, cassettes in the current run"),
    ],
)
def test_every_cell_deciding_option_is_named(tmp_path: Path, change: dict, option: str) -> None:
    manifest = read_manifest(BASELINE)
    edited = manifest | {k: (manifest[k] | v if isinstance(v, dict) else v) for k, v in change.items()}
    current = write_run(tmp_path / "other", baseline_runs(), edited)
    code, _, stderr = bench_gate(current, "--baseline", BASELINE)
    assert code == 2 and option in stderr, stderr
    # How a run was executed decides no cell: another concurrency compares as before.
    same = write_run(
        tmp_path / "same", baseline_runs(), manifest | {"options": manifest["options"] | {"concurrency": 1}}
    )
    assert bench_gate(same, "--baseline", BASELINE)[0] == 0


@pytest.mark.parametrize("side", ["current", "baseline"])
def test_an_empty_run_has_its_own_exit(tmp_path: Path, side: str) -> None:
    empty = tmp_path / "empty"
    (empty / "parts").mkdir(parents=True)
    write_manifest(empty, read_manifest(BASELINE) | {"status": "running", "cells_planned": 10})
    args = [empty, "--baseline", BASELINE] if side == "current" else [BASELINE, "--baseline", empty]
    code, stdout, stderr = bench_gate(*args)
    assert code == 7 and stdout == "" and len(stderr.strip().splitlines()) == 1
    assert f"error: the {side} run {empty} has no cells (status running" in stderr


@pytest.mark.parametrize("side", ["current", "baseline"])
def test_a_run_of_several_releases_of_one_sdk_is_refused(tmp_path: Path, side: str) -> None:
    """``bench run --release a --release b``: every release's reps would fold into one gate cell."""
    runs = baseline_runs()
    release = runs[runs.sdk == "langchain"].assign(environment="langchain==1.3.18")
    several = write_run(tmp_path / "releases", pd.concat([runs, release]), read_manifest(BASELINE))
    args = [several, "--baseline", BASELINE] if side == "current" else [BASELINE, "--baseline", several]
    code, stdout, stderr = bench_gate(*args)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert f"error: the {side} run {several} ran langchain (langchain==1.3.18, pinned) in more than one" in stderr
    assert "compare releases with bench changelog" in stderr


def test_nothing_to_compare_exits_4(tmp_path: Path) -> None:
    runs, manifest = baseline_runs(), read_manifest(BASELINE)
    one = write_run(tmp_path / "one", *narrow(runs, manifest, "pydantic-ai", "tool"))
    other = write_run(tmp_path / "other", *narrow(runs, manifest, "langchain", "tool"))
    code, stdout, _ = bench_gate(one, "--baseline", other)
    assert code == 4 and "NOTHING TO COMPARE" in stdout


def test_harness_error_in_the_current_run_exits_3(tmp_path: Path) -> None:
    runs = baseline_runs()
    runs.loc[runs.index[runs.outcome == "ok"][0], ["outcome", "exception_type"]] = ["harness_error", "KeyError"]
    current = write_run(tmp_path / "current", runs, read_manifest(BASELINE))
    code, stdout, _ = bench_gate(current, "--baseline", BASELINE)
    assert code == 3 and "### Harness errors in the current run (1)" in stdout


LOADED = {"sdk": "langchain", "mode": "tool", "variant": "stream", "protocol": "anthropic-messages"}
"""The cell issue 26 saw time out on a loaded machine: ``runaway`` after 12 calls in the
baseline, ``timeout`` after 9 at the 30 s limit there."""


def _cell(runs: pd.DataFrame, scenario: str, **key: str) -> pd.Series:
    chosen = runs.scenario == scenario
    for column, value in key.items():
        chosen &= runs[column] == value
    assert chosen.sum() == 1
    return chosen


@pytest.mark.slow
def test_a_cell_that_timed_out_where_the_baseline_did_not_is_inconclusive(tmp_path: Path) -> None:
    """A timeout may be machine load, not the SDK: never a regression without saying so."""
    runs = baseline_runs()
    loaded = _cell(runs, "malformed_fenced_prose_persistent", **LOADED)
    assert runs.loc[loaded, "outcome"].item() == "runaway"
    runs.loc[loaded, ["outcome", "model_calls"]] = ["timeout", 9]
    # A cell that raised after one call, timed out after three: its calls rose too, and are withheld.
    raised = _cell(runs, "malformed_fenced_prose_persistent", sdk="langchain", mode="native", variant="default",
                   protocol="openai-chat")  # fmt: skip
    assert runs.loc[raised, "outcome"].item() == "raised"
    runs.loc[raised, ["outcome", "model_calls", "exception_type", "exception_message"]] = ["timeout", 3, None, None]
    current = write_run(tmp_path / "loaded", runs, read_manifest(BASELINE))
    junit = tmp_path / "gate.xml"
    code, stdout, stderr = bench_gate(current, "--baseline", BASELINE, "--junit", junit)
    assert code == 5 and "## misfit-bench gate: INCONCLUSIVE" in stdout, stdout + stderr
    assert "0 regressed of" in stdout
    assert "### Inconclusive: timed out where the baseline did not (may be machine load) (2)" in stdout
    (line,) = [row for row in stdout.splitlines() if "langchain/tool/stream/anthropic-messages/stream x" in row]
    assert "| runaway(12) | timeout(9) | timed out: may be machine load; re-run it" in line
    assert f"re-run it (`bench run --rerun {current} --outcome timeout`); withheld: timeout 0% -> 100% (+100pp" in line
    skipped = [case.find("skipped") for case in ET.parse(junit).getroot().iter("testcase")]
    reasons = [s.get("message") for s in skipped if s is not None and s.get("type") == "inconclusive"]
    assert len(reasons) == 2 and all("timed out: may be machine load; re-run it" in r for r in reasons)
    _, text, _ = bench_gate(current, "--baseline", BASELINE, "--json")
    cells = {(c["mode"], c["scenario"], c["protocol"]): c for c in json.loads(text)["cells"] if c["inconclusive"]}
    assert cells.keys() == {
        ("tool", "malformed_fenced_prose_persistent", "anthropic-messages"),
        ("native", "malformed_fenced_prose_persistent", "openai-chat"),
    }
    assert cells["tool", "malformed_fenced_prose_persistent", "anthropic-messages"]["withheld"] == ["timeout"]
    assert cells["native", "malformed_fenced_prose_persistent", "openai-chat"]["withheld"] == ["timeout", "model_calls"]
    assert all(c["regressed"] == [] for c in cells.values())


@pytest.mark.slow
def test_a_rate_that_rose_beside_a_timeout_is_still_a_regression(tmp_path: Path) -> None:
    """A timed-out rep is neither raised nor a user failure: a rise there came from reps that
    finished, so the cell fails, and only what the timeout moved is withheld."""
    runs = baseline_runs()
    tripled = pd.concat([runs.assign(rep=rep) for rep in range(3)], ignore_index=True)
    base = write_run(tmp_path / "base", tripled, read_manifest(BASELINE) | {"reps": 3})
    cell = _cell(runs, "malformed_fenced_prose_persistent", **LOADED)
    first, second = tripled.index[pd.concat([cell] * 3, ignore_index=True)][:2]
    tripled.loc[first, ["outcome", "model_calls"]] = ["timeout", 9]
    tripled.loc[second, ["outcome", "model_calls", "exception_type"]] = ["raised", 3, "ValueError"]
    current = write_run(tmp_path / "current", tripled, read_manifest(BASELINE) | {"reps": 3})
    code, stdout, _ = bench_gate(current, "--baseline", base, "--json")
    (failed,) = [c for c in json.loads(stdout)["cells"] if c["regressed"] or c["withheld"]]
    assert code == 1 and failed["regressed"] == ["raised"] and failed["withheld"] == ["timeout"]
    assert not failed["inconclusive"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{empty}", "--baseline", str(BASELINE)], "current run: {empty}: not a misfit-bench run"),
        ([str(BASELINE), "--baseline", "no-such-run"], "baseline run: no-such-run: not a misfit-bench run"),
        ([str(BASELINE), "--baseline", str(BASELINE), "-t", "user_failure:+2"], "user_failure is a rate; give pp or %"),
        ([str(BASELINE), "--baseline", str(BASELINE), "-t", "speed:+2%"], "unknown metric 'speed'"),
        ([str(BASELINE), "--baseline", str(BASELINE), "--alpha", "0"], "--alpha 0.0: expected a number between 0"),
        (["--plan", "--baseline", str(BASELINE), "--alpha", "0"], "--alpha 0.0: expected a number between 0"),
        (["--plan", "--baseline", str(BASELINE), "--alpha", "1.5"], "--alpha 1.5: expected a number between 0"),
    ],
)
def test_input_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, stdout, stderr = bench_gate(*(a.format(empty=empty) for a in args))
    assert code == 2 and stdout == ""
    assert stderr.startswith("error: ") and message.format(empty=empty) in stderr and "Traceback" not in stderr


def test_bad_pyproject_section_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.bench.gate]\nthresholds = ["raised:+1pp", "raised"]\n')
    code, _, stderr = bench_gate(BASELINE, "--baseline", BASELINE)
    assert code == 2 and "pyproject.toml: [tool.bench.gate] thresholds[1]: threshold 'raised'" in stderr
    (tmp_path / "pyproject.toml").write_text("[tool.bench.gate]\nalpa = 0.1\n")
    code, _, stderr = bench_gate(BASELINE, "--baseline", BASELINE)
    assert code == 2 and "[tool.bench.gate] alpa: Extra inputs are not permitted" in stderr


def test_threshold_syntax() -> None:
    assert gate.parse_threshold("user_failure:+2pp") == gate.Threshold("user_failure", 2.0, "pp")
    assert gate.parse_threshold(" billed_tokens : 10% ") == gate.Threshold("billed_tokens", 10.0, "%")
    assert gate.parse_threshold("model_calls:+0.5") == gate.Threshold("model_calls", 0.5, "")
    pp, relative = gate.parse_threshold("raised:+2pp"), gate.parse_threshold("billed_tokens:+10%")
    assert not pp.exceeded(0.10, 0.12, 1) and pp.exceeded(0.10, 0.125, 1)
    assert not relative.exceeded(0.0, 100.0, 1000.0) and relative.exceeded(0.0, 101.0, 1000.0)
    with pytest.raises(gate.GateInputError, match="give a number or %"):
        gate.parse_threshold("model_calls:+1pp")
    with pytest.raises(gate.GateInputError, match="unknown metric 'extra_calls'"):
        gate.parse_threshold("extra_calls:+1")


@pytest.mark.slow
def test_model_calls_is_the_runs_mean_model_calls(swapped: Path) -> None:
    """The gate's ``model_calls`` before and after are the runs table's mean ``model_calls`` of the
    cell (not calls after the first: report.json's ``extra_calls`` is calls over the control)."""
    code, stdout, _ = bench_gate(swapped, "--baseline", BASELINE, "--json")
    assert code == 1
    cells = {tuple(c[k] for k in gate.KEY): c for c in json.loads(stdout)["cells"]}
    key = ("", "pydantic-ai", "tool", "hardened", "openai-chat", False, "malformed_persistent")
    match = ["sdk", "mode", "variant", "protocol", "scenario"]
    means = [
        runs[~runs.stream.astype(bool)].groupby(match).model_calls.mean()[key[1:5] + key[-1:]]
        for runs in (baseline_runs(), pq.read_table(swapped / "runs.parquet").to_pandas())
    ]
    metric = cells[key]["metrics"]["model_calls"]
    assert (metric["before"], metric["after"]) == (means[0], means[1]) == (4.0, 2.0)


@pytest.mark.slow
def test_the_json_is_valid_when_a_figure_is_not_a_number(swapped: Path) -> None:
    """json.dumps writes a NaN float as the invalid ``NaN`` itself (``default`` is never asked)."""
    result = gate.run_gate(str(swapped), str(BASELINE), REPO / "results", [], None, None, Path.cwd())
    cell = result.cells[0]
    cell.metrics["raised"].mde, cell.metrics["raised"].power = float("nan"), float("inf")

    def refuse(constant: str) -> None:
        raise ValueError(f"invalid JSON constant {constant}")

    report = json.loads(gate_output.json_text(gate_output.to_json(result, 1)), parse_constant=refuse)
    assert report["cells"][0]["metrics"]["raised"]["mde"] is None
    assert report["cells"][0]["metrics"]["raised"]["power"] is None


def test_a_manifest_that_is_not_an_object_is_one_line(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", baseline_runs(), read_manifest(BASELINE))
    (run / "manifest.json").write_text("[]\n")
    code, stdout, stderr = bench_gate(run, "--baseline", BASELINE)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert f"error: current run: {run / 'manifest.json'}: unreadable manifest: a JSON list, not an object" in stderr


def test_help_documents_the_exit_codes() -> None:
    result = runner.invoke(cli, ["gate", "--help"], terminal_width=200)
    text = " ".join(result.stdout.split())
    for phrase in ("0 pass", "1 regression", "2 usage or input error", "3 harness error", "4 nothing to compare"):
        assert phrase in text


# --- stochastic runs ------------------------------------------------------------------------

SWEEP = """version: 1
scenarios:
  - name: sweep_malformed
    task: person
    stochastic: {rates: {malformed: 0.6}, seed: 3}
"""


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """pydantic-ai's tool mode on openai-chat, default and hardened variants, 40 reps of a sweep
    where each attempt is malformed JSON with probability 0.6 (seed 0), and the default variant
    again with seed 1 (other draws: not pairable)."""
    root = tmp_path_factory.mktemp("sweeps")
    (root / "sweep.yaml").write_text(SWEEP)
    runs = {}
    for seed, variants in ((0, {"default", "hardened"}), (1, {"default"})):
        request = SuiteRequest(
            sdks=("pydantic-ai",),
            scenario_paths=(root / "sweep.yaml",),
            reps=40,
            seed=seed,
            filters=Filters(
                modes=frozenset({"tool"}), variants=frozenset(variants), protocols=frozenset({"openai-chat"})
            ),
            results_root=root / f"seed{seed}",
        )
        directory = run_suite(request)
        table = pq.read_table(directory / "runs.parquet").to_pandas()
        manifest = read_manifest(directory)
        hardened = table[table.variant == "hardened"]
        manifest["cells_planned"] = len(hardened)  # one variant of the two the run planned: whole
        runs[f"hardened{seed}"] = write_run(root / f"hardened{seed}", hardened, manifest)
        # The default variant's real outcomes, labelled as the hardened cell: the hardening lost.
        relabelled = table[table.variant == "default"].assign(variant="hardened")
        runs[f"lost{seed}"] = write_run(root / f"lost{seed}", relabelled, manifest)
    return runs


@pytest.mark.slow
def test_stochastic_regression_is_caught_paired(sweeps: dict[str, Path]) -> None:
    code, stdout, _ = bench_gate(sweeps["lost0"], "--baseline", sweeps["hardened0"], "--json")
    report = json.loads(stdout)
    (cell,) = report["cells"]
    assert cell["method"] == "paired" and cell["n_current"] == 40
    assert code == 1 and "raised" in cell["regressed"]
    assert cell["metrics"]["raised"]["p_adjusted"] < 0.05 and cell["metrics"]["raised"]["mde"] is not None


@pytest.mark.slow
def test_stochastic_regression_is_caught_unpaired(sweeps: dict[str, Path]) -> None:
    code, stdout, _ = bench_gate(sweeps["lost1"], "--baseline", sweeps["hardened0"], "--json")
    assert code == 2, "another seed: refused unless asked"
    code, stdout, _ = bench_gate(sweeps["lost1"], "--baseline", sweeps["hardened0"], "--json", "--allow-option-change")
    (cell,) = json.loads(stdout)["cells"]
    assert cell["method"] == "unpaired" and code == 1 and "raised" in cell["regressed"]
    _, markdown, _ = bench_gate(sweeps["lost1"], "--baseline", sweeps["hardened0"], "--allow-option-change")
    assert "unpaired (Fisher's exact" in markdown and "smallest detectable rise of a failure rate" in markdown


@pytest.mark.slow
def test_stochastic_rerun_with_too_few_reps_is_inconclusive(sweeps: dict[str, Path], tmp_path: Path) -> None:
    copy = shutil.copytree(sweeps["hardened0"], tmp_path / "again")
    junit = tmp_path / "gate.xml"
    code, stdout, _ = bench_gate(copy, "--baseline", sweeps["hardened0"], "--junit", junit)
    assert code == 5 and "## misfit-bench gate: INCONCLUSIVE" in stdout and "1 stochastic cells paired" in stdout
    assert "### Inconclusive: too few reps to see a rise of the effect size (1)" in stdout
    assert "to see +10pp at n=40 (paired);" in stdout and "reps would give 80%" in stdout
    (case,) = ET.parse(junit).getroot().iter("testcase")
    assert case.find("skipped").get("type") == "inconclusive"
    # A rise the reps can see (30 points with 40 paired reps) makes the same rerun a pass.
    wide = [arg for metric in gate.RATES for arg in ("-t", f"{metric}:+30pp")]
    code, stdout, _ = bench_gate(copy, "--baseline", sweeps["hardened0"], *wide)
    assert code == 0 and "0 cell(s) inconclusive" in stdout


def test_the_plan_says_how_many_reps_and_they_suffice(sweeps: dict[str, Path], tmp_path: Path) -> None:
    code, stdout, _ = bench_gate("--plan", "--baseline", sweeps["hardened0"], "--json")
    plan = json.loads(stdout)
    (cell,) = plan["cells"]
    assert code == 0 and cell["reps"] == 40 and plan["power"] == 0.8 and plan["level"] == pytest.approx(0.05 / 6)
    # The gate's Holm family can hold every metric of the cell (rates and means): the plan's level
    # is alpha over that many, never a milder level than the gate's power is stated at.
    assert plan["tests"] == len(gate.METRICS) == 6
    needed = max(m["paired"] for m in cell["metrics"])
    for m in cell["metrics"]:
        at, below = (
            gate_power.cell_power(True, plan["level"], m["before"], n, n, m["effect"])
            for n in (m["paired"], m["paired"] - 1)
        )
        assert at >= 0.8 > below, m
    # The same sweep at that many reps (the 40 real reps repeated as new reps) is no longer inconclusive.
    runs = pq.read_table(sweeps["hardened0"] / "runs.parquet").to_pandas()
    copies = -(-needed // len(runs))
    more = pd.concat([runs.assign(rep=runs.rep + i * len(runs)) for i in range(copies)], ignore_index=True)
    manifest = read_manifest(sweeps["hardened0"]) | {"reps": len(more), "cells_planned": len(more)}
    bigger = write_run(tmp_path / "bigger", more, manifest)
    code, stdout, _ = bench_gate(bigger, "--baseline", bigger)
    assert code == 0 and "## misfit-bench gate: PASS" in stdout
    _, markdown, _ = bench_gate("--plan", "--baseline", sweeps["hardened0"])
    assert "| cell | baseline rates (reps) | power now | reps needed, paired | reps needed, unpaired |" in markdown
    assert f"| {needed} (" in markdown
    assert "one-sided, alpha 0.05 over 6 tests, every metric of every stochastic cell (level 0.00833," in markdown


def test_a_rise_within_the_threshold_is_not_a_regression(sweeps: dict[str, Path]) -> None:
    # The other rates' thresholds wide too: at +0pp their 40 reps would be inconclusive (exit 5).
    wide = ["-t", "user_failure:+30pp", "-t", "timeout:+30pp", "-t", "runaway:+30pp"]
    code, _, _ = bench_gate(
        sweeps["lost0"], "--baseline", sweeps["hardened0"], "-t", "raised:+80pp", "-t", "model_calls:+5", *wide
    )
    assert code == 0


@pytest.mark.slow
def test_a_p_value_that_underflows_to_zero_is_the_clearest_regression(sweeps: dict[str, Path], tmp_path: Path) -> None:
    """The paired sweep's real reps repeated as new reps until the sign test's p underflows to
    0.0: that is the most significant result there is, not "no p-value" (read as 1)."""
    base, lost = (pq.read_table(sweeps[name] / "runs.parquet").to_pandas() for name in ("hardened0", "lost0"))
    diff = lost.set_index("rep").outcome.eq("raised").astype(int) - base.set_index("rep").outcome.eq("raised")
    up, down = int((diff > 0).sum()), int((diff < 0).sum())
    copies = next(c for c in range(1, 500) if gate.stats.sign_test_greater([1] * up * c + [-1] * down * c) == 0.0)
    sides = {}
    for name, runs in (("hardened0", base), ("lost0", lost)):
        more = pd.concat([runs.assign(rep=runs.rep + i * len(runs)) for i in range(copies)], ignore_index=True)
        manifest = read_manifest(sweeps[name]) | {"reps": len(more), "cells_planned": len(more)}
        sides[name] = write_run(tmp_path / name, more, manifest)
    code, stdout, _ = bench_gate(sides["lost0"], "--baseline", sides["hardened0"], "--json")
    (cell,) = json.loads(stdout)["cells"]
    raised = cell["metrics"]["raised"]
    assert cell["method"] == "paired" and raised["p"] == 0.0 and raised["p_adjusted"] == 0.0
    assert code == 1 and "raised" in cell["regressed"]


def with_scenario_file(run: Path, target: Path, text: str, fault: str | None = None) -> Path:
    """A copy of ``run`` whose manifest records ``target`` (holding ``text``) as its scenario file;
    with ``fault``, its rows carry that label, as the file's scenario gives them."""
    copy = Path(shutil.copytree(run, target / "run"))
    (target / "scenarios.yaml").write_text(text)
    manifest = read_manifest(copy)
    manifest["request"] = manifest["request"] | {"scenario_paths": [str(target / "scenarios.yaml")]}
    runs = pq.read_table(copy / "runs.parquet").to_pandas()
    return write_run(copy, runs if fault is None else runs.assign(fault=fault), manifest)


@pytest.mark.slow
def test_a_stochastic_scenario_with_its_own_label_is_read_from_the_runs_files(
    sweeps: dict[str, Path], tmp_path: Path
) -> None:
    """The sweep with a custom fault label (not ``mix:...``): only its file, which the runs'
    manifests record, says it is stochastic; compared exactly it would be a false regression."""
    labelled = SWEEP.replace("    task: person\n", "    task: person\n    fault: noisy_json\n")
    assert "fault: noisy_json" in labelled
    base, cur = (
        with_scenario_file(sweeps[name], tmp_path / name, labelled, fault="noisy_json")
        for name in ("hardened0", "lost0")
    )
    code, stdout, _ = bench_gate(cur, "--baseline", base, "--json")
    (cell,) = json.loads(stdout)["cells"]
    assert cell["method"] == "paired" and cell["metrics"]["raised"]["p"] is not None, code


@pytest.mark.slow
def test_a_scenario_file_that_does_not_load_is_an_input_error(sweeps: dict[str, Path], tmp_path: Path) -> None:
    broken = with_scenario_file(sweeps["hardened0"], tmp_path, SWEEP.replace("rates:", "rats:"))
    code, stdout, stderr = bench_gate(sweeps["lost0"], "--baseline", broken)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert f"error: baseline run {broken}: cannot tell which scenarios are stochastic: " in stderr
    assert str(tmp_path / "scenarios.yaml") in stderr
    code, _, stderr = bench_gate("--plan", "--baseline", broken)
    assert code == 2 and "cannot tell which scenarios are stochastic" in stderr
    # A file recorded on another machine: only matters for a scenario whose label does not say.
    labelled = SWEEP.replace("    task: person\n", "    task: person\n    fault: noisy_json\n")
    moved = with_scenario_file(sweeps["hardened0"], tmp_path / "moved", labelled, fault="noisy_json")
    (tmp_path / "moved" / "scenarios.yaml").unlink()
    code, _, stderr = bench_gate(moved, "--baseline", moved)
    assert code == 2 and "recorded in its manifest are not here: cannot tell whether sweep_malformed" in stderr


def test_a_run_on_a_user_type_is_not_compared_with_one_on_the_built_in_tasks(tmp_path: Path) -> None:
    """A `bench pick --type` run's cells carry the built-in ids (no agent name), so the gate must
    tell them apart by the manifest: one line, exit 2, before any cell is judged."""
    typed = {"reference": "myapp.models:Ticket", "valid": {}, "wrong": None, "violations": {}, "not_measured": {}}
    current = write_run(tmp_path / "typed", baseline_runs(), read_manifest(BASELINE) | {"output_type": typed})
    code, stdout, stderr = bench_gate(current, "--baseline", BASELINE)
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert "one run answers the user type myapp.models:Ticket, the other the built-in tasks" in stderr


def test_the_same_user_type_with_other_answers_is_not_compared(tmp_path: Path) -> None:
    typed = {"reference": "myapp.models:Ticket", "valid": {"a": 1}, "wrong": None, "violations": {}, "not_measured": {}}
    other = typed | {"valid": {"a": 2}}
    current = write_run(tmp_path / "one", baseline_runs(), read_manifest(BASELINE) | {"output_type": typed})
    baseline = write_run(tmp_path / "two", baseline_runs(), read_manifest(BASELINE) | {"output_type": other})
    code, _, stderr = bench_gate(current, "--baseline", baseline)
    assert code == 2 and "both answer the user type myapp.models:Ticket, with different answers" in stderr
