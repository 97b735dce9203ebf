"""report.html's matrix of the committed default run (results/baseline: 41 scenarios, 45 rows)
fits a 1,400 px screen in Chromium without wrapping a cell, and each cell's full text is on hover."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.view.testing import chromium_path, launch

BASELINE = Path(__file__).resolve().parents[2] / "results" / "baseline"

MEASURE = """() => {
  const table = document.querySelector('table.matrix');
  const cells = [...table.querySelectorAll('tbody td')];
  const line = Math.min(...cells.map(td => td.getBoundingClientRect().height));
  const wrapped = cells.filter(td =>
    td.getBoundingClientRect().height > 1.5 * line || td.scrollWidth > td.clientWidth + 1);
  return {right: table.getBoundingClientRect().right, viewport: window.innerWidth, cells: cells.length,
          wrapped: wrapped.length, titled: cells.filter(td => (td.title || '').includes(':')).length,
          columns: table.querySelectorAll('thead th.scn').length};
}"""


@pytest.mark.slow
def test_the_default_runs_matrix_fits_1400_px_without_a_wrapped_cell(tmp_path: Path) -> None:
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    result = CliRunner().invoke(app, ["report", str(BASELINE), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto((tmp_path / "report.html").as_uri())
        seen = page.evaluate(MEASURE)
        browser.close()
    assert seen["columns"] == 41
    assert seen["wrapped"] == 0, seen
    assert seen["right"] <= seen["viewport"], seen
    assert seen["titled"] > 0.9 * seen["cells"]  # "scenario: label; counts" on hover (empty cells have none)
