"""`bench view` answers first (issue 45 point 5): a run's page opens with the run's pick (bench.pick's
table, as `bench pick RUN` ranks it) before the matrix; no page shows a stray ``null``; release chips
are in version order (0.6.9 before 0.14.8); the runs table fits a 1,280 px screen; and the changelog
page marks each change worse, better or neutral, the worse first, and says what ``N other`` stands
for (issue 46 point 4). On the committed runs: the baseline (every SDK, one release each) and the
openai-agents history (four releases)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.pick import pick
from bench.report import changelog
from bench.report.build import build_from_run
from bench.view.site import Site
from bench.view.testing import browser_page
from tests.paths import REPO

BASELINE = REPO / "results" / "baseline"
HISTORY = REPO / "results" / "releases" / "openai-agents"
SLOW_FIXTURES = ("site",)
"""The matrices and picks of two default runs: seconds (tests/conftest.py marks their users slow)."""


@pytest.fixture(scope="module")
def site() -> Site:
    return Site([BASELINE, HISTORY])


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[object]:
    with browser_page(site, 1280, 900) as page:
        yield page


def test_the_matrix_document_holds_the_runs_pick(site: Site) -> None:
    """The pick in the document is bench.pick's own table of the run (default weights here), and
    its sentence names the top row."""
    doc = site.document(f"run/{BASELINE.name}/matrix")
    assert doc is not None
    expected = pick(build_from_run(BASELINE)[0])
    assert [(r["sdk"], r["mode"], r["score"]) for r in doc["pick"]["rows"]] == [
        (r.sdk, r.mode, r.score) for r in expected.rows
    ]
    top = expected.rows[0]
    assert doc["pick"]["lead"].startswith(f"Pick {top.sdk} {top.mode}: score {top.score:.2f}")


def test_the_changelog_document_marks_each_group(site: Site) -> None:
    doc = site.document(f"run/{HISTORY.name}/changelog")
    assert doc is not None
    (sdk,) = doc["sdks"]
    for step in sdk["steps"]:
        marks = [g["direction"] for g in step["groups"]]
        assert marks == sorted(marks, key=lambda d: changelog.DIRECTIONS.index(changelog.Direction(d)))
        assert sum(step["directions"].values()) == step["changed"]
    issue = next(s for s in sdk["steps"] if (s["before"], s["after"]) == ("0.6.9", "0.14.8"))
    assert {g["direction"] for g in issue["groups"]} == {"worse"}  # raises ModelBehaviorError -> empty
    others = [g for g in sdk["grid"] if g["text"].endswith(" other")]
    assert others and all(g["others"] for g in others)


@pytest.mark.browser
def test_the_run_page_leads_with_the_pick_and_shows_no_null(page, site: Site) -> None:
    from playwright.sync_api import expect

    for run in (BASELINE, HISTORY):
        page.goto(page.base_url + f"#/run/{run.name}")
        lead = site.document(f"run/{run.name}/matrix")["pick"]["lead"]  # type: ignore[index]
        expect(page.locator("#pick .lead")).to_have_text(lead, timeout=120_000)  # this run's page, not the last
        before = page.evaluate(
            "document.getElementById('pick').compareDocumentPosition(document.getElementById('matrix'))"
            " & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        assert before, "the pick comes before the matrix"
        assert "null" not in page.locator("#app").inner_text().split(), run.name


@pytest.mark.browser
def test_release_chips_are_in_version_order(page) -> None:
    page.goto(page.base_url + f"#/run/{HISTORY.name}")
    page.locator("#matrix").wait_for(timeout=120_000)
    chips = page.locator('fieldset[data-facet="release"] button').all_inner_texts()
    assert chips == ["0.2.11", "0.6.9", "0.14.8", "0.24.0"]


@pytest.mark.browser
def test_the_runs_table_fits_1280_px(page) -> None:
    page.goto(page.base_url + "#/")
    page.locator("#runs tbody tr").first.wait_for()
    right = page.locator("#runs").evaluate("table => table.getBoundingClientRect().right")
    assert right <= 1280 and page.evaluate("document.documentElement.scrollWidth") <= 1280


@pytest.mark.browser
def test_the_changelog_page_marks_changes_worse_first_with_no_null(page) -> None:
    page.goto(page.base_url + f"#/run/{HISTORY.name}/changelog")
    page.locator("section.step").first.wait_for(timeout=120_000)
    assert "null" not in page.locator("#app").inner_text().split()
    step = page.locator('section.step[data-before="0.6.9"][data-after="0.14.8"]')
    assert "(2 worse)" in step.locator("p").first.inner_text()
    marks = step.locator("details.group .mark").all_inner_texts()
    assert marks == ["worse", "worse"]
    for section in page.locator("section.step").all():
        shown = section.locator("details.group").evaluate_all("groups => groups.map(g => g.dataset.direction)")
        assert shown == sorted(shown, key=lambda d: changelog.DIRECTIONS.index(changelog.Direction(d)))
    other = page.locator("table.changelog td.cell .others").first
    assert other.inner_text().startswith("other: ")


def test_weights_that_do_not_parse_are_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pick is ranked under ./pyproject.toml's [tool.bench.pick], as `bench pick` reads it: a
    weight that is no number is one line naming the file and field, exit 2."""
    from typer.testing import CliRunner

    from bench.cli import app

    (tmp_path / "pyproject.toml").write_text('[tool.bench.pick]\nwrong = "x"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["view", str(BASELINE), "--export", str(tmp_path / "out")])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "pyproject.toml: [tool.bench.pick] wrong" in result.stderr
