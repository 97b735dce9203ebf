"""`bench pick`: the decision table of a finished run (tests/fixtures/small_run), ranked under the
user's weights, through typer's CliRunner; the reports open with it and the claims' sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.pick import PickInputError, Weights, parse_weights, pick, render_terminal, resolve_weights
from bench.report.build import Report, build_from_run
from bench.report.claims import CLAIMS_FILE, load_claims

REPO = Path(__file__).resolve().parents[2]
SMALL_RUN = REPO / "tests" / "fixtures" / "small_run"
runner = CliRunner()


@pytest.fixture(scope="module")
def report() -> Report:
    return build_from_run(SMALL_RUN)[0]


def _order(report: Report, weights: Weights, variants: str = "all") -> list[str]:
    return ["/".join((r.sdk, r.mode, r.variant)) for r in pick(report, weights, variants).rows]  # type: ignore[arg-type]


def test_the_ranking_changes_when_the_weights_do(report: Report) -> None:
    """The defaults (wrong answers dear): langchain tool, which runs away and hands on the wrong
    answer, ranks last; raises dear and wrong answers free: it never raises here, so it climbs
    past every row that raises (langchain's hardened ones among them)."""
    wrong_dear = _order(report, Weights())
    raise_dear = _order(report, Weights(wrong=0, empty=0, raised=100))
    assert wrong_dear != raise_dear
    assert wrong_dear[-1] == "langchain/tool/default"
    assert raise_dear.index("langchain/tool/default") < raise_dear.index("langchain/native/hardened")
    assert wrong_dear.index("langchain/tool/default") > wrong_dear.index("langchain/native/hardened")


def test_a_score_is_the_mean_penalty_of_the_measured_cells(report: Report) -> None:
    table = pick(report, Weights(wrong=1, empty=0, runaway=0, timeout=0, raised=0, extra_call=0))
    by_key = {(r.sdk, r.mode): r for r in table.rows}
    row = by_key[("langchain", "tool")]
    assert row.handed == ["wrong_then_valid"] and row.cells == 5
    assert row.score == pytest.approx(1 / 5)  # one WRONG cell of five measured
    assert row.families["malformed"].token.startswith("L12")


BASELINE = Path(__file__).resolve().parents[2] / "results" / "baseline"


def test_the_pick_says_which_language_each_row_needs_and_fits_120_columns_with_every_variant() -> None:
    """Python and TypeScript SDKs ranked together, each row saying which language it needs; with
    every variant of a dozen SDKs the cost columns give way, said in one line."""
    result = runner.invoke(app, ["pick", str(BASELINE), "--variants", "all"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 120
    header = next(line for line in lines if line.split()[:1] == ["#"])
    after = lines[lines.index(header) + 1 :]
    rows = [line.split() for line in after[: after.index("")] if line.split()[0].isdigit()]
    language = {row[1]: row[2] for row in rows}
    assert language["ai"] == "ts" and language["pydantic-ai"] == "py" and set(language.values()) == {"py", "ts"}
    assert "+tokens" not in header and "(+calls and +tokens left out to fit 120 columns" in result.stdout
    as_json = json.loads(runner.invoke(app, ["pick", str(BASELINE), "--json"]).stdout)
    assert {row["sdk"]: row["language"] for row in as_json["rows"]}["openai-agents-js"] == "typescript"


def test_default_variants_only_unless_asked(report: Report) -> None:
    assert {r.variant for r in pick(report).rows} == {"default"}
    assert {r.variant for r in pick(report, variants="all").rows} == {"default", "hardened", "auto"}


def test_pick_cli_prints_the_table_within_120_columns_and_the_next_step() -> None:
    result = runner.invoke(app, ["pick", str(SMALL_RUN), "--variants", "all"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 120
    assert lines[0].startswith("Pick ")  # the decision first (test_render.py)
    header = next(line for line in lines if line.split()[:1] == ["#"])
    assert header.split()[:6] == ["#", "sdk", "lang", "mode", "variant", "score"]
    assert "What the ranking cannot see:" in result.stdout and "Semantic wrongness" in result.stdout
    shown = str(SMALL_RUN.relative_to(Path.cwd())) if SMALL_RUN.is_relative_to(Path.cwd()) else str(SMALL_RUN)
    assert f"bench report {shown}" in result.stdout and f"bench view {shown}" in result.stdout


def test_pick_cli_weights_json_and_markdown() -> None:
    args = ["pick", str(SMALL_RUN), "--json", "--weight", "wrong=0,empty=0", "--weight", "raised=100"]
    dear = runner.invoke(app, args)
    assert dear.exit_code == 0, dear.stderr
    data = json.loads(dear.stdout)
    assert data["weights"]["raised"] == 100 and data["weights"]["wrong"] == 0
    assert data["rows"][0]["sdk"] == "langchain" and data["rows"][0]["mode"] == "tool"  # default variants
    assert "bench report" in dear.stderr  # the next step stays off stdout
    markdown = runner.invoke(app, ["pick", str(SMALL_RUN), "--markdown"])
    assert markdown.exit_code == 0 and markdown.stdout.startswith("## Which SDK and mode to pick")


def test_pyproject_weights_are_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.bench.pick]\nwrong = 0\nraised = 7\n", encoding="utf-8")
    weights = resolve_weights(tmp_path, ["raised=3"])
    assert (weights.wrong, weights.raised, weights.empty) == (0, 3, 10)  # --weight has the last word
    (tmp_path / "pyproject.toml").write_text("[tool.bench.pick]\nwrnog = 1\n", encoding="utf-8")
    with pytest.raises(PickInputError, match=r"\[tool.bench.pick\] wrnog: Extra inputs are not permitted"):
        resolve_weights(tmp_path, [])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--weight", "wrong"], "expected KEY=NUMBER"),
        (["--weight", "worng=1"], "expected KEY=NUMBER with KEY one of wrong, empty"),
        (["--weight", "wrong=-1"], "a weight is a finite number >= 0"),
        (["--weight", "wrong=nan"], "a weight is a finite number >= 0"),
        (["--variants", "some"], "expected default or all"),
        (["--json", "--markdown"], "at most one of"),
        (["--type", "myapp.models:Ticket"], "give a run"),
        (["--reps", "2"], "shape a --type run"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["pick", str(SMALL_RUN), *args])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and says in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_run_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["pick", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_parse_weights_takes_repeated_and_comma_separated() -> None:
    assert parse_weights(["wrong=1,empty=2", "extra_call=0.5"]) == {"wrong": 1, "empty": 2, "extra_call": 0.5}


def test_terminal_table_of_an_empty_pick_is_not_an_error(report: Report) -> None:
    table = pick(report).model_copy(update={"rows": [], "families": []})
    assert "What the ranking cannot see" in render_terminal(table)


@pytest.mark.slow
def test_report_md_first_screen_holds_the_pick_table_and_the_claims_sentences(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(SMALL_RUN), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    first = (tmp_path / "report.md").read_text(encoding="utf-8").splitlines()[:60]
    text = "\n".join(first)
    assert "## Which SDK and mode to pick" in text
    assert any(line.startswith("| 1 | ") for line in first)
    absent = next(line for line in first if line.startswith("Not checked by this run (its SDK is not in it): "))
    sdks = set(pd.read_parquet(SMALL_RUN / "runs.parquet")["sdk"])
    for claim in load_claims(CLAIMS_FILE).claims:
        if claim.sdk == "all" or claim.sdk in sdks:  # a row, in its own words
            assert f"[{claim.id}](report.html#{claim.id})" in text
            assert claim.claim in text, claim.id
        else:  # named in the one line of claims on SDKs the run does not hold
            assert claim.id in absent, claim.id
    assert "Shared by every SDK" in (tmp_path / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.index('id="pick"') < html.index('id="claims"') < html.index('id="matrix"')
    assert "bench view" in result.stdout and "bench pick" in result.stdout


def test_the_glyph_is_the_worst_outcome_any_row_reached_by_the_scores_weights(report: Report) -> None:
    """A cell whose rows split raised / EMPTY (one protocol hands the empty answer on) shows ``E``
    under the default weights (EMPTY pays 10, raised 1), though the vote ties it to raised; with
    raised dearer than EMPTY it shows ``x``: the glyph ranks as the score charges."""
    cell = next(c for c in report.matrix if (c.sdk, c.mode, c.variant, c.scenario) == (
        "pydantic-ai", "native", "default", "malformed_persistent"))  # fmt: skip
    assert cell.outcomes == {"raised": 2}
    split = cell.model_copy(
        update={"outcomes": {"raised": 1, "empty": 1}, "outcome_calls": {"raised": 2.0, "empty": 1.0}, "mixed": True}
    )
    matrix = [split if c is cell else c for c in report.matrix]
    changed = report.model_copy(update={"matrix": matrix})
    row = next(r for r in pick(changed).rows if (r.sdk, r.mode) == ("pydantic-ai", "native"))
    assert row.families["malformed"].outcome == "empty"
    assert row.families["malformed"].token == "E1*+"
    assert row.families["malformed"].label == "EMPTY (1) in 1 of 2 rows of malformed_persistent"
    assert "malformed_persistent" in row.handed
    dear = next(r for r in pick(changed, Weights(raised=20)).rows if (r.sdk, r.mode) == ("pydantic-ai", "native"))
    assert dear.families["malformed"].token == "x2*+"


def test_no_glyph_of_the_default_run_hides_an_answer_handed_to_the_user(default_run: dict) -> None:
    """On every cell of the default matrix: wherever any row of a family (any protocol, stream or
    rep) handed a WRONG or EMPTY answer on, the family's glyph is W or E (issue 45 point 3:
    openai-agents tool, ``trunc``, showed ``x1*`` while Chat Completions' ``truncated_persistent``
    hands EMPTY to the user); and every glyph is the worst outcome its rows reached by the weights."""
    from bench.core.vocabulary import USER_FAILURE
    from bench.pick.table import NOT_SCORED, severity
    from bench.report.build import build
    from bench.report.matrix import is_sweep

    runs = default_run["runs"]
    report = build(runs, default_run["manifest"])
    table = pick(report, variants="all")
    runs = runs[~is_sweep(runs) & ~runs["outcome"].isin(list(NOT_SCORED))]
    runs = runs.assign(family=runs["scenario"].map(report.families))
    reached = runs.groupby(["sdk", "mode", "variant", "family"])["outcome"].agg(set).to_dict()
    checked = 0
    for row in table.rows:
        for family, result in row.families.items():
            outcomes = reached[(row.sdk, row.mode, row.variant, family)]
            assert severity(result.outcome, table.weights) == max(severity(o, table.weights) for o in outcomes)
            if outcomes & USER_FAILURE:
                assert result.outcome in USER_FAILURE and result.token[0] in "WE", (row.sdk, row.mode, family)
                checked += 1
    assert checked >= len(table.rows)  # the wrong family hands its answer on in every row, at least
    chat = runs[
        (runs["sdk"] == "openai-agents") & (runs["mode"] == "tool") & (runs["variant"] == "default")
        & (runs["scenario"] == "truncated_persistent") & (runs["protocol"] == "openai-chat")
    ]  # fmt: skip
    assert set(chat["outcome"]) == {"empty"}
    agents = next(r for r in table.rows if (r.sdk, r.mode, r.variant) == ("openai-agents", "tool", "default"))
    assert agents.families["truncated"].token.startswith("E1*")
    assert "truncated_persistent" in agents.handed
