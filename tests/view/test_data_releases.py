"""`bench view` knows releases (issue 23, point 4): the release is a row dimension with a filter, a
run of two releases never votes over both in one cell, a changelog page shows the release x
scenario grid and each change's cells (opening as any cell does), and comparing two runs compares
each SDK release with the same release and says which. Driven in headless system Chromium as
tests/view/test_site.py is; the run of two releases goes through a release environment (cached by
bench.releases.envs, built from the package index on a cold cache).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.view import data
from bench.view.site import Site
from bench.view.testing import browser_page

SLOW_FIXTURES = ("runs",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

CELLS = ["--mode", "native", "--protocol", "openai-chat", "--variant", "default",
         "--scenario", "valid", "--scenario", "refusal_then_valid", "--scenario", "malformed_then_valid"]  # fmt: skip


def _run(root: Path, *args: str) -> Path:
    result = CliRunner().invoke(app, ["run", *args, *CELLS, "--out", str(root)])
    assert result.exit_code == 0, result.stderr
    return data.discover(root)[0][0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A baseline of the pinned pydantic-ai, then a run of pydantic-ai 1.0.18 and the pinned one
    (refusal_then_valid recovers on 1.0.18 and raises ContentFilterError on the pin)."""
    root = tmp_path_factory.mktemp("release-runs")
    baseline = _run(root / "baseline", "--sdk", "pydantic-ai")
    releases = _run(root / "releases", "--release", "pydantic-ai==1.0.18", "--release", "pydantic-ai@pinned")
    return baseline, releases


@pytest.fixture(scope="module")
def site(runs: tuple[Path, Path]) -> Site:
    return Site(list(runs))


@pytest.mark.slow
def test_a_run_of_two_releases_keeps_them_apart(site: Site, runs: tuple[Path, Path]) -> None:
    """Each release is a row of its own; no cell holds rows of two releases; the runs list names
    both releases (the pinned one by its version)."""
    run = site.runs[runs[1].name]
    matrix = site.document(f"run/{run.id}/matrix")
    assert matrix is not None and matrix["changelog"] is True
    releases = [(row["sdk"], row["release"]) for row in matrix["rows"]]
    assert releases == [("pydantic-ai", "1.0.18"), ("pydantic-ai", "2.68.0")]
    for _, rows in run.groups:
        assert rows["sdk_version"].nunique() == 1 and rows["environment"].fillna("pinned").nunique() == 1
    outcomes = {(matrix["rows"][c["row"]]["release"], c["scenario"]): c["outcome"] for c in matrix["cells"]}
    assert outcomes[("1.0.18", "refusal_then_valid")] == "recovered"
    assert outcomes[("2.68.0", "refusal_then_valid")] == "raised"
    listed = site.document("runs")
    assert listed is not None
    assert next(r for r in listed["runs"] if r["id"] == run.id)["releases"] == {"pydantic-ai": ["1.0.18", "2.68.0"]}


def test_comparing_two_runs_pairs_like_with_like(site: Site, runs: tuple[Path, Path]) -> None:
    """The baseline (pinned only) against the run of two releases: only pydantic-ai 2.68.0 is
    compared, with itself; 1.0.18 is named as found in one run only, never compared with 2.68.0."""
    baseline, releases = (site.runs[r.name] for r in runs)
    doc = data.compare(baseline, releases)
    assert doc["pairs"] == [{"sdk": "pydantic-ai", "release": "2.68.0", "cells": 3}]
    assert doc["pairs_only_before"] == []
    assert doc["pairs_only_after"] == [{"sdk": "pydantic-ai", "release": "1.0.18", "cells": 3}]
    assert doc["compared"] == 3 and doc["only_after"] == 3
    assert all(change["release"] == "2.68.0" for change in doc["changed"])


def test_the_changelog_document_links_each_change_to_its_cells(site: Site, runs: tuple[Path, Path]) -> None:
    run = site.runs[runs[1].name]
    doc = site.document(f"run/{run.id}/changelog")
    assert doc is not None and [s["sdk"] for s in doc["sdks"]] == ["pydantic-ai"]
    sdk = doc["sdks"][0]
    assert sdk["releases"] == ["1.0.18", "2.68.0"]
    (step,) = sdk["steps"]
    group = next(g for g in step["groups"] if g["scenario"] == "refusal_then_valid")
    assert group["line"].startswith("`refusal_then_valid`: recovered (2 calls) -> raises ContentFilterError (1 call)")
    (cell,) = group["cells"]
    assert run.groups[cell["before"]][0][:2] == ("pydantic-ai", "1.0.18")
    assert run.groups[cell["after"]][0][:2] == ("pydantic-ai", "2.68.0")
    assert run.groups[cell["after"]][0][-1] == "refusal_then_valid"
    assert f"run/{run.id}/changelog" in set(site.paths())
    baseline = site.document(f"run/{runs[0].name}/changelog")
    assert baseline is not None and baseline["sdks"] == []  # one release: nothing to compare
    assert f"run/{runs[0].name}/changelog" not in set(site.paths())


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[object]:
    with browser_page(site, 1500, 1000) as page:
        yield page


@pytest.mark.slow
def test_the_release_filter(page, runs: tuple[Path, Path]) -> None:
    from playwright.sync_api import expect

    page.goto(page.base_url + f"#/run/{runs[1].name}")
    page.locator("#matrix tbody tr").first.wait_for()
    rows = page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.release)")
    assert rows == ["1.0.18", "2.68.0"]
    page.locator('fieldset[data-facet="release"] button[data-value="1.0.18"]').click()
    page.wait_for_url(re.compile(r"release=1\.0\.18"))
    expect(page.locator('#matrix tbody tr[data-release="2.68.0"]')).to_have_count(0)
    assert page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.release)") == ["1.0.18"]


def test_the_changelog_page_and_a_change_drilled_down(page, runs: tuple[Path, Path]) -> None:
    """From the matrix to the changelog page: the grid has a column per release and a row per
    scenario; a change's 'after' opens that cell's reps and attempts in the panel."""
    page.goto(page.base_url + f"#/run/{runs[1].name}")
    page.locator("#changelog-link").click()
    grid = page.locator('table[data-grid="pydantic-ai"]')
    grid.wait_for()
    assert grid.locator("thead th").all_inner_texts() == ["scenario", "family", "1.0.18", "2.68.0"]
    row = grid.locator('tr[data-scenario="refusal_then_valid"] td.cell')
    assert row.all_inner_texts() == ["1 r2", "1 x1A"]
    group = page.locator('section.step details.group[data-scenario="refusal_then_valid"]')
    group.locator("summary").click()
    assert "recovered (2 calls) -> raises ContentFilterError (1 call), 1 of 1 cell" in group.inner_text()
    group.locator("td.cell a").nth(1).click()
    panel = page.locator("#panel")
    panel.locator(".rep").first.wait_for()
    assert panel.locator("h2").inner_text() == "pydantic-ai / 2.68.0 / native / default / openai-chat"
    assert "ContentFilterError" in panel.locator(".exc").first.inner_text()
    assert page.locator('table[data-grid="pydantic-ai"]').count() == 1  # the page stays under the panel


def test_the_comparison_says_which_pairs_it_compared(page, runs: tuple[Path, Path]) -> None:
    baseline, releases = runs
    page.goto(page.base_url + f"#/compare/{baseline.name}/{releases.name}")
    page.locator("#pairs").wait_for()
    assert page.locator("#pairs-compared").inner_text() == "pydantic-ai 2.68.0 (3 cells)"
    assert "after pydantic-ai 1.0.18 (3 cells)" in page.locator("#pairs-unmatched").inner_text()
