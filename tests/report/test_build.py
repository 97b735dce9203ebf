"""`bench report`: the markdown of a fixed small run equals a committed reference, the JSON
validates, the HTML is self-contained (and, where Chromium is installed, renders the matrix),
and the published claims get the verdicts measured on the full default matrix.

Regenerate the references deliberately after a change to the report or the claims file:
    bench report tests/fixtures/small_run --out /tmp/x --markdown > tests/golden/report_small_run.md
    bench report tests/fixtures/tool_run --out /tmp/x --markdown > tests/golden/report_tool_run.md

tests/fixtures/small_run is a schema-1 run (no tool or retry-layer columns, no tool or http_*
scenarios); tests/fixtures/tool_run is a schema-2 run of pydantic-ai and openai-agents on
openai-chat (``bench run --suite full --sdk pydantic-ai --sdk openai-agents --scenario 'tool_*'
--scenario 'http_*' --scenario malformed_then_valid --scenario valid --protocol openai-chat``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.report import claims as claims_module
from bench.report import render_markdown
from bench.report.build import Report, build
from bench.report.sweep import wilson
from bench.results.golden import BUILTIN_SDKS
from bench.results.store import point_latest
from tests.paths import FIXTURES, GOLDEN_DIR, REPO

SLOW_FIXTURES = ("small_report",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

SMALL_RUN = FIXTURES / "small_run"
GOLDEN = GOLDEN_DIR / "report_small_run.md"
TOOL_RUN = FIXTURES / "tool_run"
TOOL_GOLDEN = GOLDEN_DIR / "report_tool_run.md"

runner = CliRunner()


def bench_report(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("report")
    code, stdout, stderr = bench_report(str(SMALL_RUN), "--out", str(out))
    assert code == 0, stderr
    return {"stdout": stdout, **{p.suffix: p.read_text(encoding="utf-8") for p in out.iterdir()}}


@pytest.mark.slow
def test_markdown_of_the_small_run_equals_the_reference(small_report: dict[str, str]) -> None:
    assert small_report[".md"] == GOLDEN.read_text(encoding="utf-8")


def test_markdown_printed_with_markdown_flag(tmp_path: Path) -> None:
    code, stdout, stderr = bench_report(str(SMALL_RUN), "--out", str(tmp_path), "--markdown")
    assert code == 0 and stdout == GOLDEN.read_text(encoding="utf-8")
    assert "report written to" in stderr


def test_json_output_validates(tmp_path: Path) -> None:
    code, stdout, _ = bench_report(str(SMALL_RUN), "--out", str(tmp_path), "--json")
    assert code == 0
    data = json.loads(stdout, parse_constant=lambda name: pytest.fail(f"JSON has {name}"))
    report = Report.model_validate(data)
    assert report.suite_id == "20261129-221413-a188" and report.rows == 210
    assert {c.sdk for c in report.matrix} == {"langchain", "pydantic-ai"}
    assert report.uncontrolled_scenarios == ["out_of_range_persistent"]
    assert {s.rate for s in report.sweep} == {0.0, 0.3} and {s.n for s in report.sweep} == {2}
    assert [c.id for c in report.claims] == [c.id for c in claims_module.load_claims().claims]


def test_html_is_self_contained(small_report: dict[str, str]) -> None:
    html = small_report[".html"]
    assert "http://" not in html and "https://" not in html and "<script" not in html.lower()
    links = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert links and all(link.startswith(("data:image/png;base64,", "#")) for link in links)
    assert html.count("data:image/png;base64,") >= 3, "heatmap, cost bars, token gap, sweep curves"
    assert "raised UnexpectedModelBehavior" in html.replace("<wbr>", "")


def test_reports_go_into_the_run_folder_and_the_latest_run_is_the_default(tmp_path: Path) -> None:
    run = tmp_path / "20261129-000000-abcd"
    shutil.copytree(SMALL_RUN, run)
    point_latest(tmp_path, run)
    code, stdout, _ = bench_report("--results", str(tmp_path))
    assert code == 0
    written = sorted(p.name for p in run.iterdir() if p.name.startswith("report."))
    assert written == ["report.html", "report.json", "report.md"]
    assert f"markdown: {run.resolve() / 'report.md'}" in stdout.splitlines()


def test_a_missing_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, stdout, stderr = bench_report(str(tmp_path / "nope"))
    assert code == 2 and stdout == ""
    assert stderr.startswith("error: ") and "not a misfit-bench run" in stderr and len(stderr.splitlines()) == 1


def test_a_bad_claims_file_names_file_entry_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "claims.yaml"
    bad.write_text(
        "version: 1\nclaims:\n  - id: x\n    sdk: a\n    claim: c\n    checks:\n"
        "      - says: s\n        select: {sdk: [a], colour: red}\n        expect: {outcome: [ok]}\n"
    )
    code, _, stderr = bench_report(str(SMALL_RUN), "--out", str(tmp_path), "--claims", str(bad))
    assert code == 2
    assert f"{bad}: entry 'x' (claims[0]), field checks.0.select.colour: Extra inputs are not permitted" in stderr


def test_claims_schema_is_current() -> None:
    committed = json.loads(claims_module.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert committed == claims_module.json_schema(), (
        "regenerate: python -c 'from bench.report import claims; claims.write_json_schema()'"
    )


def test_wilson_interval() -> None:
    low, high = wilson(0, 10)
    assert low == 0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson(0, 0) == (0.0, 1.0)


def test_markdown_is_cut_at_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = pd.read_parquet(SMALL_RUN / "runs.parquet")
    report = build(runs, json.loads((SMALL_RUN / "manifest.json").read_text()))
    monkeypatch.setattr(render_markdown, "MAX_BYTES", 4000)
    text = render_markdown.render(report, sorted(set(runs["scenario"])))
    assert len(text.encode()) <= 4000 and text.endswith("have everything)_\n")


BASELINE = REPO / "results" / "baseline"


@pytest.mark.slow
def test_the_pr_summary_of_the_committed_baseline_is_under_60_kb() -> None:
    """The default run (results/baseline: five SDKs, 36 scenarios, 4,644 rows) fits a GitHub
    comment, decisions first, without being cut."""
    from bench.report.build import build_from_run
    from bench.report.matrix import is_sweep, scenario_order

    report, runs = build_from_run(BASELINE)
    text = render_markdown.render(report, scenario_order(runs[~is_sweep(runs)]))
    assert len(text.encode()) < 60_000 and "_(report cut" not in text
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Decisions", "## Where the failure landed"]
    claim = "tool-error-returned-with-call-id"
    assert f"| [{claim}](report.html#{claim}) | all | **refuted** |" in text
    assert "| claude-agent-sdk | tool | default | tool_unknown_order_persistent | RUNAWAY (12) | +10 |" in text


@pytest.mark.slow
def test_changes_against_a_baseline_come_from_the_gate(tmp_path: Path) -> None:
    """One cell made worse in a copy of the tool run: the summary names it under the gate's
    regressions, with what got worse."""
    from bench.report.build import build_from_run

    current = tmp_path / "current"
    shutil.copytree(TOOL_RUN, current)
    runs = pd.read_parquet(current / "runs.parquet")
    scenario = "malformed_then_valid"
    cell = (runs["sdk"] == "pydantic-ai") & (runs["variant"] == "default") & (runs["scenario"] == scenario)
    runs.loc[cell, "outcome"] = "wrong"
    runs.to_parquet(current / "runs.parquet")
    report, _ = build_from_run(current, baseline=TOOL_RUN)
    assert report.baseline is not None and report.baseline.verdict == "regression"
    assert {c.cell.split(" ")[0] for c in report.baseline.regressions} == {"pydantic-ai/native/default/openai-chat",
        "pydantic-ai/prompted/default/openai-chat", "pydantic-ai/tool/default/openai-chat"}  # fmt: skip
    text = render_markdown.render(report, sorted(set(runs["scenario"])))
    assert "`bench gate` against `20261130-005409-5d02`: **regression**, 3 regressed" in text
    assert "user_failure" in text
    out = str(tmp_path / "r")
    code, stdout, stderr = bench_report(str(current), "--baseline", str(TOOL_RUN), "--out", out, "--markdown")
    assert code == 0 and "**regression**, 3 regressed" in stdout, stderr
    code, _, stderr = bench_report(str(current), "--baseline", str(tmp_path / "nope"), "--out", out)
    assert code == 2 and stderr.startswith("error: ")


@pytest.mark.slow
def test_an_empty_baseline_or_an_unwritable_out_is_one_line(tmp_path: Path) -> None:
    """Not "internal error" (exit 3, a harness bug): exit 7 as bench gate says it, and exit 2
    naming the path the report could not be written to."""
    empty = tmp_path / "empty"
    empty.mkdir()
    manifest = json.loads((TOOL_RUN / "manifest.json").read_text()) | {"status": "running"}
    (empty / "manifest.json").write_text(json.dumps(manifest))
    code, stdout, stderr = bench_report(str(TOOL_RUN), "--baseline", str(empty), "--out", str(tmp_path / "r"))
    assert code == 7 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"error: the baseline run {empty} has no cells (status running")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, stdout, stderr = bench_report(str(TOOL_RUN), "--out", str(blocker / "reports"))
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"error: {blocker / 'reports'}: cannot write the report: ")


def tool_run_report(runs: pd.DataFrame | None = None) -> Report:
    runs = pd.read_parquet(TOOL_RUN / "runs.parquet") if runs is None else runs
    return build(runs, json.loads((TOOL_RUN / "manifest.json").read_text()))


@pytest.mark.slow
def test_markdown_of_the_tool_run_equals_the_reference(tmp_path: Path) -> None:
    code, stdout, stderr = bench_report(str(TOOL_RUN), "--out", str(tmp_path), "--markdown")
    assert code == 0, stderr
    assert stdout == TOOL_GOLDEN.read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="tools">Tool failures</h2>' in html and '<h2 id="layers">Retry layers</h2>' in html


def test_a_run_without_tool_or_http_rows_has_neither_section(small_report: dict[str, str]) -> None:
    for text in (small_report[".md"], small_report[".html"]):
        assert "Tool failures" not in text and "Retry layers" not in text
    data = json.loads(small_report[".json"])
    assert data["tool_task_rows"] == 0
    assert all(data[k] == [] for k in ("tool_cells", "tool_summary", "tool_budget", "retry_layers"))


@pytest.mark.slow
def test_tool_failures_per_sdk() -> None:
    report = tool_run_report()
    summary = {t.sdk: t for t in report.tool_summary}
    assert set(summary) == {"openai-agents", "pydantic-ai"}
    agents, pydantic = summary["openai-agents"], summary["pydantic-ai"]
    # openai-agents hands every retryable failure back (its default failure_error_function turns the
    # exception into the tool's output) and so keeps calling the tool after a fatal error until max_turns.
    assert (agents.to_model, agents.failed_runs, agents.max_after_fatal) == (18, 18, 9)
    # pydantic-ai re-raises a tool's own exception (only ModelRetry goes back), so a fatal error ends
    # the run at once, and so does the retryable ORDER_NOT_FOUND in the variants that do not convert it.
    assert pydantic.max_after_fatal == 0 and (pydantic.to_model, pydantic.failed_runs) == (21, 27)
    cells = {(c.sdk, c.mode, c.variant, c.scenario): c for c in report.tool_cells}
    fatal = cells["openai-agents", "native", "default", "tool_permission_denied"]
    assert (fatal.label, fatal.tool_calls, fatal.after_fatal) == ("raised MaxTurnsExceeded (10)", 10, 9)
    stopped = cells["pydantic-ai", "tool", "default", "tool_quota_exceeded"]
    assert (stopped.outcome, stopped.model_calls, stopped.after_fatal) == ("raised", 1, 0)
    assert cells["pydantic-ai", "tool", "default", "tool_ok"].label == "ok"


@pytest.mark.slow
def test_budget_sharing_is_read_against_malformed_then_valid() -> None:
    readings = {(b.sdk, b.mode, b.variant): b for b in tool_run_report().tool_budget}
    assert readings["pydantic-ai", "tool", "default"].reading == "separate (or > 1)"
    assert readings["pydantic-ai", "tool", "default"].output_label == "recovered (2)"
    # openai-agents has no output retry at all: a failure there says nothing about sharing.
    assert {b.reading for k, b in readings.items() if k[0] == "openai-agents"} == {"no output retry to share"}


@pytest.mark.slow
def test_retry_layers_and_persistent_faults() -> None:
    report = tool_run_report()
    layers = {(r.sdk, r.variant, r.scenario): r for r in report.retry_layers}
    for sdk in ("openai-agents", "pydantic-ai"):
        absorbed = layers[sdk, "all", "http_429_then_valid"]  # the client's own retry, nothing else
        assert (absorbed.layers, absorbed.client, absorbed.framework, absorbed.output) == ("client", 1, 0, 0)
        assert absorbed.label == "recovered (2)"
        assert layers[sdk, "all", "http_429_should_not_retry"].layers == "none"
    stacked = layers["openai-agents", "hardened", "http_500_persistent"]
    assert (stacked.layers, stacked.client, stacked.framework) == ("client+framework", 2, 2)
    persistent = {(p.sdk, p.variant, p.scenario): p for p in report.persistent_faults}
    assert {p.ended for p in persistent.values()} == {"by itself"}
    assert persistent["pydantic-ai", "all", "http_500_persistent"].requests == 3
    assert persistent["openai-agents", "default", "http_500_persistent"].requests == 3
    assert persistent["openai-agents", "hardened", "http_500_persistent"].requests == 5


TOOL_RUN_VERDICTS = {
    "tool-error-returned-with-call-id": ["refuted", "confirmed"],
    "fatal-tool-errors-not-retried": ["refuted", "refuted"],
    "retry-layers-separate": ["confirmed", "confirmed", "confirmed"],
}


@pytest.mark.slow
def test_claim_verdicts_on_the_tool_run() -> None:
    claims = {c.id: c for c in tool_run_report().claims}
    assert {k: [c.verdict for c in claims[k].checks] for k in TOOL_RUN_VERDICTS} == TOOL_RUN_VERDICTS
    returned = claims["tool-error-returned-with-call-id"].checks[0]
    assert returned.counter and all(
        line.startswith("pydantic-ai/")
        and "tool_unknown_order_then_ok: raised, 1 call(s), OrderToolError (tool_retries 0)" in line
        for line in returned.counter
    ), "pydantic-ai's default re-raises a tool's own exception: the error never reaches the model"
    fatal = claims["fatal-tool-errors-not-retried"].checks[0]
    assert all(line.startswith("openai-agents/") and "tool_calls_after_fatal 9" in line for line in fatal.counter)


@pytest.mark.parametrize(
    ("checks", "claim"),
    [
        (["confirmed", "confirmed"], "confirmed"),
        (["confirmed", "untested"], "partial"),
        (["untested", "untested"], "untested"),
        (["confirmed", "refuted", "untested"], "refuted"),
        (["untested", "refuted"], "refuted"),
    ],
)
def test_a_claims_verdict_follows_from_its_checks(checks: list[str], claim: str) -> None:
    assert claims_module.combine(checks) == claim


@pytest.mark.slow
def test_a_claim_with_confirmed_and_untested_checks_is_partly_confirmed() -> None:
    """The tool run has no hardened pydantic-ai cell of the wrong_* scenarios: two checks are
    confirmed, two untested; the claim must not read "untested" over them."""
    claim = next(c for c in tool_run_report().claims if c.id == "pydantic-ai-retry-budget")
    assert sorted({k.verdict for k in claim.checks}) == ["confirmed", "untested"]
    assert claim.verdict == "partial"
    assert render_markdown.VERDICT_MARK[claim.verdict] == "partly confirmed"


def _cell_of(line: str) -> str:
    return line.split(":", 1)[0]


@pytest.mark.slow
def test_claim_lines_name_each_cell_once_whatever_its_reps() -> None:
    runs = pd.read_parquet(SMALL_RUN / "runs.parquet")
    assert runs["rep"].max() == 1, "the small run has 2 reps per cell"
    report = build(runs, json.loads((SMALL_RUN / "manifest.json").read_text()))
    written = {c.id: c for c in claims_module.load_claims().claims}
    for claim in report.claims:
        for check, source in zip(claim.checks, written[claim.id].checks, strict=True):
            lines = check.evidence + check.counter
            if source.expect is not None and check.verdict != "untested":
                assert len({_cell_of(line) for line in lines}) == len(lines) == check.cells, check.says
    budget = next(c for c in report.claims if c.id == "pydantic-ai-retry-budget").checks[0]
    assert budget.evidence[0].endswith("recovered, 2 call(s) (all 2 reps)")


def test_a_cell_whose_reps_disagree_is_counted_against_once_with_its_share() -> None:
    runs = pd.read_parquet(SMALL_RUN / "runs.parquet")
    cell = (runs.sdk == "pydantic-ai") & (runs.variant == "default") & (runs.scenario == "malformed_then_valid")
    first = runs.index[cell & (runs["mode"] == "native") & (runs.rep == 0)]
    runs.loc[first, ["outcome", "model_calls"]] = ["raised", 2]
    report = build(runs, json.loads((SMALL_RUN / "manifest.json").read_text()))
    check = next(c for c in report.claims if c.id == "pydantic-ai-retry-budget").checks[0]
    assert check.verdict == "refuted"
    assert check.counter == [
        "pydantic-ai/native/default/openai-chat x malformed_then_valid: raised, 2 call(s) (1 of 2 reps)"
    ]
    assert not any(_cell_of(line) == _cell_of(check.counter[0]) for line in check.evidence)


@pytest.mark.slow
def test_schema_1_runs_read_the_new_columns_as_not_measured() -> None:
    from bench.report.tools import SCHEMA2_COLUMNS

    old = tool_run_report(pd.read_parquet(TOOL_RUN / "runs.parquet").drop(columns=SCHEMA2_COLUMNS))
    assert old.tool_task_rows and old.tool_cells  # the cells are there, their tool columns unknown
    assert all(c.failed_runs == 0 and c.after_fatal is None for c in old.tool_cells)
    assert {r.layers for r in old.retry_layers} <= {"transport", "none"}
    claims = {c.id: c for c in old.claims}
    assert claims["tool-error-returned-with-call-id"].verdict == "untested"
    assert claims["retry-layers-separate"].checks[0].verdict == "confirmed", "output_retries is schema 1"


def test_a_claims_column_must_exist(tmp_path: Path) -> None:
    bad = tmp_path / "claims.yaml"
    bad.write_text(
        "version: 1\nclaims:\n  - id: x\n    sdk: a\n    claim: c\n    checks:\n"
        "      - says: s\n        select: {sdk: [a]}\n        expect: {columns: {tool_colour: [red]}}\n"
    )
    with pytest.raises(claims_module.ClaimsError, match="unknown column"):
        claims_module.load_claims(bad)


@pytest.mark.browser
def test_html_renders_in_headless_chromium(small_report: dict[str, str], tmp_path: Path) -> None:
    """Look at it: a screenshot of the page shows the coloured matrix (skipped without Chromium)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from PIL import Image

    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    page.write_text(small_report[".html"], encoding="utf-8")
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1600,4000",  # the page opens with the pick and the claims, the matrix under them
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with Image.open(shot) as image:
        colours = {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 20) or []}
    assert (0x2E, 0x7D, 0x32) in colours, "an `ok` cell (green) is on screen"
    assert (0xFF, 0xB7, 0x4D) in colours, "a `raised` cell (orange) is on screen"


# The claims on the full default matrix (the session's default_run, about 2.5 minutes).
MEASURED_VERDICTS = {
    "pydantic-ai-retry-budget": "confirmed",
    "pydantic-ai-stream-retries": "refuted",
    "openai-agents-no-retry": "refuted",
    "langchain-bare-schema-provider-strategy": "confirmed",
    "claude-agent-sdk-no-framework-retry": "refuted",
    "agentmaker-retries-once": "confirmed",
    "only-pydantic-ai-rejects-wrong-answers": "refuted",
    "tool-output-fewest-input-tokens": "refuted",
    "tool-error-returned-with-call-id": "refuted",
    "fatal-tool-errors-not-retried": "refuted",
    "retry-layers-separate": "partial",
}
FULL_SUITE_ONLY = {("retry-layers-separate", 2)}
CLAIMS_JUDGED_ELSEWHERE = {
    "agno-validated-object": "tests/adapters/agno/test_agno_adapter.py",
    "autogen-structured-message": "tests/adapters/autogen_agentchat/test_autogen_agentchat_adapter.py",
    "llama-index-structured-predict-returns-the-object": "tests/adapters/llama_index/test_llama_index_adapter.py",
    "smolagents-final-answer-checks-continue-the-run": "tests/adapters/smolagents/test_smolagents_claim.py",
    "mirascope-validate-retries-parse-errors": "tests/adapters/mirascope/test_mirascope_adapter.py",
}
"""Claims on SDKs the default run does not hold (not in BUILTIN_SDKS: an own environment, or
smolagents, not yet in the golden matrix), judged in their adapter's test on its own cells."""
"""Checks on scenarios of suite full only (http_500_persistent): untested on the default matrix."""
"""What the SDK versions in constraints.txt do. An SDK upgrade that flips a verdict fails here:
read the deciding cells in the report, then update this table (that is the product working)."""


@pytest.fixture(scope="module")
def default_report(default_run: dict) -> Report:
    return build(default_run["runs"], default_run["manifest"])


def test_every_claim_is_judged_by_a_test() -> None:
    """A claim on an SDK outside the default run names the test that judges it; no claim is judged
    by neither."""
    root = Path(__file__).resolve().parents[2]
    for claim in claims_module.load_claims().claims:
        if claim.sdk in (*BUILTIN_SDKS, "all"):
            assert claim.id in MEASURED_VERDICTS, claim.id
            continue
        test = CLAIMS_JUDGED_ELSEWHERE.get(claim.id)
        assert test is not None and claim.id in (root / test).read_text(encoding="utf-8"), claim.id


def test_claims_verdicts_on_the_default_matrix(default_report: Report) -> None:
    judged = [c for c in default_report.claims if c.id not in CLAIMS_JUDGED_ELSEWHERE]
    assert {c.id: c.verdict for c in judged} == MEASURED_VERDICTS
    for claim in judged:
        for i, check in enumerate(claim.checks):
            tested = check.verdict != "untested" and check.cells
            assert tested or (claim.id, i) in FULL_SUITE_ONLY, f"{claim.id}: {check.says}"


def test_every_verdict_is_traceable_to_cells(default_report: Report, default_run: dict) -> None:
    runs = default_run["runs"]
    names = {f"{r.sdk}/{r.mode}/{r.variant}/{r.protocol} x {r.scenario}" for r in runs.itertuples()}
    written = {c.id: c for c in claims_module.load_claims().claims}
    for claim in (c for c in default_report.claims if c.id not in CLAIMS_JUDGED_ELSEWHERE):
        for i, (check, source) in enumerate(zip(claim.checks, written[claim.id].checks, strict=True)):
            if (claim.id, i) in FULL_SUITE_ONLY:
                continue
            lines = check.counter if check.verdict == "refuted" else check.evidence
            assert lines, f"{claim.id}: {check.says} names no cell"
            if source.order is not None:
                assert all(line.split(":", 1)[0].split("/")[0] in set(runs["sdk"]) for line in lines)
                continue  # an ordering check names groups of cells: sdk/variant/protocol[/stream]/task
            for line in lines:
                cell = line.split(":", 1)[0].replace("/stream x", " x")
                assert cell in names, f"{claim.id}: {cell} is not a cell of the run"


def test_refuted_claims_say_what_was_measured(default_report: Report) -> None:
    by_id = {c.id: c for c in default_report.claims}
    claude = by_id["claude-agent-sdk-no-framework-retry"].checks[0]
    assert claude.verdict == "refuted"
    assert all(": recovered, 2 call(s)" in line for line in claude.counter), "the CLI re-asks once"
    stream = by_id["pydantic-ai-stream-retries"].checks[0]
    assert all("raised, 1 call(s), UnexpectedModelBehavior" in line for line in stream.counter)


def test_markdown_of_the_default_matrix_fits_a_job_summary(default_report: Report, default_run: dict) -> None:
    from bench.report.matrix import scenario_order

    text = render_markdown.render(default_report, scenario_order(default_run["runs"]))
    assert len(text.encode()) < render_markdown.MAX_BYTES and "_(report cut" not in text


OUTCOME_SETS = ("USER_FAILURE", "SUCCESS", "CALLS_SHOWN", "WHITE_TEXT")


def test_each_outcome_set_is_declared_once_in_the_vocabulary() -> None:
    """The outcome sets of bench.core.vocabulary are not spelled out again in the report, the view or
    the terminal matrix (a copy drifts: the heatmap numbered timeouts, the matrix did not), nor in
    the view's JavaScript, which reads them from its documents."""
    import ast

    from bench.core import vocabulary

    declared = {frozenset(getattr(vocabulary, name)): name for name in OUTCOME_SETS}
    rooms = [*(REPO / "bench" / "report").glob("*.py"), *(REPO / "bench" / "view").glob("*.py")]
    copies = []
    for path in [*rooms, REPO / "bench" / "report" / "terminal.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Tuple | ast.Set | ast.List) or len(node.elts) < 2:
                continue
            members = {e.attr for e in node.elts if isinstance(e, ast.Attribute) and ast.unparse(e.value) == "Outcome"}
            found = declared.get(frozenset(vocabulary.Outcome[m] for m in members))
            if found and len(members) == len(node.elts):
                copies.append(f"{path.relative_to(REPO)}:{node.lineno} {found}")
    script = (REPO / "bench" / "view" / "static" / "app.js").read_text(encoding="utf-8")
    outcome = "|".join(vocabulary.Outcome)
    copies += [f"app.js: {m.group(0)}" for m in re.finditer(rf'\[\s*"({outcome})"\s*,\s*"({outcome})"', script)]
    assert not copies


def _contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours."""

    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted([luminance(a), luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("dark_text", ["#212121", "#1f2328"])  # the HTML report's, the view's
def test_white_text_goes_on_exactly_the_colours_it_reads_best_on(dark_text: str) -> None:
    """WHITE_TEXT (the HTML report, the view, the heatmap's numbers) holds harness_error: on its
    #d500f9 white reads at 4.04:1 against 3.99:1 for #212121 (3.91:1 for the view's #1f2328)."""
    from bench.core.vocabulary import WHITE_TEXT, Outcome
    from bench.report.plots import COLOURS

    white = {o for o in Outcome if _contrast(COLOURS[o], "#ffffff") > _contrast(COLOURS[o], dark_text)}
    assert white == WHITE_TEXT


def test_the_call_count_shows_on_the_same_outcomes_everywhere() -> None:
    """The report's label, the terminal's token and the heatmap's number show a cell's model calls
    for exactly CALLS_SHOWN: the heatmap also numbered timeout and harness_error cells before."""
    from bench.core.vocabulary import CALLS_SHOWN, Outcome
    from bench.report.matrix import label
    from bench.report.plots import landing_heatmap
    from bench.report.terminal import token

    assert {o for o in Outcome if label(o, 7, "E").endswith("(7)")} == CALLS_SHOWN
    assert {o for o in Outcome if token({"outcome": o, "model_calls": 7}).endswith("7")} == CALLS_SHOWN
    cells = pd.DataFrame(
        [
            {
                "sdk": "s",
                "mode": "tool",
                "variant": "default",
                "scenario": o.value,
                "outcome": o,
                "model_calls": 7.0,
                "mixed": False,
            }
            for o in Outcome
        ]
    )
    figure = landing_heatmap(cells, [o.value for o in Outcome])
    numbered = {list(Outcome)[round(text.get_position()[0])] for text in figure.axes[0].texts}
    assert numbered == CALLS_SHOWN
