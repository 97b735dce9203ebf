"""`bench report`: the markdown of a fixed small run equals a committed reference, the JSON
validates, the HTML is self-contained (and, where Chromium is installed, renders the matrix),
and the published claims get the verdicts measured on the full default matrix.

Regenerate the reference deliberately after a change to the report or the claims file:
    bench report tests/fixtures/small_run --out /tmp/x --markdown > tests/golden/report_small_run.md
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from bench.report import claims as claims_module
from bench.report import render_markdown
from bench.report.build import Report, build
from bench.report.cli import report_command
from bench.report.sweep import wilson
from bench.results import point_latest

REPO = Path(__file__).resolve().parent.parent
SMALL_RUN = REPO / "tests" / "fixtures" / "small_run"
GOLDEN = REPO / "tests" / "golden" / "report_small_run.md"

app = typer.Typer()
app.command("report")(report_command)


@app.callback()
def _group() -> None:
    """A group, so that `report` is a subcommand as in bench.cli."""


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
            "--window-size=1600,1200",
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
}
"""What the SDK versions in constraints.txt do. An SDK upgrade that flips a verdict fails here:
read the deciding cells in the report, then update this table (that is the product working)."""


@pytest.fixture(scope="module")
def default_report(default_run: dict) -> Report:
    return build(default_run["runs"], default_run["manifest"])


def test_claims_verdicts_on_the_default_matrix(default_report: Report) -> None:
    assert {c.id: c.verdict for c in default_report.claims} == MEASURED_VERDICTS
    assert all(check.verdict != "untested" and check.cells for c in default_report.claims for check in c.checks)


def test_every_verdict_is_traceable_to_cells(default_report: Report, default_run: dict) -> None:
    runs = default_run["runs"]
    names = {f"{r.sdk}/{r.mode}/{r.variant}/{r.protocol} x {r.scenario}" for r in runs.itertuples()}
    written = {c.id: c for c in claims_module.load_claims().claims}
    for claim in default_report.claims:
        for check, source in zip(claim.checks, written[claim.id].checks, strict=True):
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
