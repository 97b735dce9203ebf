"""bench.pick.explain on a finished run (tests/fixtures/small_run): each score taken apart adds up
to the score, where each row's cells landed adds up to one, and the conclusion names the pick."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.pick import Weights, lead_sentence, pick
from bench.pick.explain import conclusion, landed, landed_figure, row_name, score_figure, score_parts
from bench.report.build import Report, build_from_run

SMALL_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "small_run"


@pytest.fixture(scope="module")
def report() -> Report:
    return build_from_run(SMALL_RUN)[0]


@pytest.mark.parametrize("weights", [Weights(), Weights(wrong=0, empty=0, raised=100, extra_call=1, extra_ktokens=1)])
def test_the_parts_of_each_score_add_up_to_it(report: Report, weights: Weights) -> None:
    table = pick(report, weights, "all")
    parts = score_parts(table, report)
    assert list(parts.index) == [row_name(r) for r in table.rows]
    for row in table.rows:
        assert parts.loc[row_name(row)].sum() == pytest.approx(row.score, abs=1e-3)


def test_where_the_cells_landed_adds_up_to_one(report: Report) -> None:
    shares = landed(pick(report), report)
    assert shares.sum(axis=1).round(3).eq(1).all()
    assert landed_figure(shares).axes and score_figure(score_parts(pick(report), report)).axes


def test_the_conclusion_names_the_pick_and_what_the_run_leaves_out(report: Report) -> None:
    table = pick(report)
    parts = score_parts(table, report)
    said = conclusion(table, parts, ["SDKs not in the run: agentmaker"])
    assert said.startswith(f"**{lead_sentence(table)}**\n\nOver {table.rows[0].cells} measured cells.")
    assert "**The run does not cover the whole question**: SDKs not in the run: agentmaker." in said
    assert f"Last: {row_name(table.rows[-1])}" in said
    assert "The run covers everything the question asks." in conclusion(table, parts, [])
