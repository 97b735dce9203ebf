"""The decision in one sentence (issue 45 point 5): `bench pick`, report.md, report.html, the
notebook's conclusion and `bench view` open with :func:`bench.pick.lead_sentence`, one wording: the
pick, the families that put it ahead of the next row, and a tie note when the top scores are within
the run's noise (tests/fixtures/small_run: three pydantic-ai rows at 2.44)."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.pick import lead_sentence, pick, tied_with_top
from bench.report.build import Report, build_from_run
from bench.view.data import Run, pick_lead
from tests.paths import FIXTURES, GOLDEN_DIR

SMALL_RUN = FIXTURES / "small_run"
runner = CliRunner()


@pytest.fixture(scope="module")
def report() -> Report:
    return build_from_run(SMALL_RUN)[0]


def test_the_sentence_names_the_pick_why_and_the_tie(report: Report) -> None:
    said = lead_sentence(pick(report))
    assert said.startswith("Pick pydantic-ai native: score 2.44 (lower is better), the lowest of 6 rows")
    assert "ahead of langchain native (2.60) on malformed (x2+ at 0.60 a cell against x1 at 1.00)" in said
    assert "tied within the run's noise with pydantic-ai prompted (2.44) and pydantic-ai tool (2.44)" in said
    assert said.endswith(".") and ". " not in said  # one sentence


def test_scores_apart_by_more_than_their_noise_are_not_tied(report: Report) -> None:
    """Tied: within twice the standard error of the difference, or equal to two decimals."""
    table = pick(report)
    top, second = table.rows[0], table.rows[3]  # pydantic-ai native 2.44, langchain native 2.60

    def with_scores(noise: float, score: float) -> list[str]:
        rows = [top.model_copy(update={"noise": noise}), second.model_copy(update={"score": score, "noise": noise})]
        return [r.mode for r in tied_with_top(table.model_copy(update={"rows": rows}))]

    assert with_scores(0.0, 2.60) == []
    assert with_scores(0.0, 2.443) == ["native"]  # shown alike: 2.44
    assert with_scores(0.05, 2.59) == []  # 0.15 apart, 2 x sqrt(2 x 0.05 ** 2) = 0.141 allowed
    assert with_scores(0.05, 2.58) == ["native"]
    assert "tied" not in lead_sentence(table.model_copy(update={"rows": [top, second]}))


def test_bench_pick_opens_with_the_sentence(report: Report) -> None:
    said = lead_sentence(pick(report))
    result = runner.invoke(app, ["pick", str(SMALL_RUN)])
    assert result.exit_code == 0, result.stderr
    first = result.stdout.split("\n\n", 1)[0]
    assert first == "\n".join(textwrap.wrap(said, 120, break_on_hyphens=False))
    markdown = runner.invoke(app, ["pick", str(SMALL_RUN), "--markdown"]).stdout.splitlines()
    assert markdown[:3] == ["## Which SDK and mode to pick", "", f"**{said}**"]


def test_report_md_and_the_view_open_with_the_same_sentence(report: Report) -> None:
    """report.md (its golden file, byte for byte in tests/report/test_build.py) says it under the
    title; the view's run page leads with the same words."""
    said = lead_sentence(pick(report))
    assert (GOLDEN_DIR / "report_small_run.md").read_text(encoding="utf-8").splitlines()[:3] == [
        "# misfit-bench report",
        "",
        f"**{said}**",
    ]
    assert pick_lead(Run(SMALL_RUN))["lead"] == said
