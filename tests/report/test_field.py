"""The "Reported in the field" section and docs/field.md, from the committed field run
(results/field, ``bench run --suite field``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.report import field
from bench.results.store import read_table
from bench.scenarios.files import default_scenarios

ROOT = Path(__file__).resolve().parents[2]
FIELD_RUN = ROOT / "results" / "field"
SLOW_FIXTURES = ("field_report",)
"""Built once for this module's tests: their users are ``slow`` (tests/conftest.py)."""


def test_every_field_scenario_has_a_row_with_every_sdk() -> None:
    runs = read_table(FIELD_RUN, "runs").to_pandas()
    rows = field.field_table(runs)
    catalogue = [s.name for s in default_scenarios() if s.suite == "field"]
    assert [row["scenario"] for row in rows] == catalogue
    assert len(catalogue) >= 20
    outcomes = {"ok", "recovered", "raised", "fallback", "wrong", "empty", "runaway", "timeout", "unsupported"}
    for row in rows:
        assert set(row["sdks"]) == set(runs["sdk"])
        for sdk, text in row["sdks"].items():
            assert text.split()[0] in outcomes, row
            ran = sum(len(ids) for ids in row["cells"][sdk].values())
            assert text == "unsupported" or text.split()[1].rstrip(":").endswith(f"/{ran}"), (text, ran)
    assert "harness_error" not in set(runs["outcome"])


def test_a_verdict_says_still_there_only_for_the_reported_failure() -> None:
    runs = read_table(FIELD_RUN, "runs").to_pandas()
    rows = {row["scenario"]: row for row in field.field_table(runs)}
    scenarios = {s.name: s for s in default_scenarios()}
    for name, row in rows.items():
        source = scenarios[name].source
        assert source is not None
        for sdk, text in row["sdks"].items():
            judged = source.failure and (source.sdk not in row["sdks"] or sdk == source.sdk)
            marks = re.search(r": ((still there|partly) \(\d+/\d+\)|gone)$", text) is not None
            assert marks == bool(judged) and not (judged and text == "unsupported"), (name, sdk, text)


def test_each_report_is_run_at_its_own_release_or_says_why_not() -> None:
    runs = read_table(FIELD_RUN, "runs").to_pandas()
    rows = {row["scenario"]: row for row in field.field_table(runs)}
    environments = set(runs["environment"].dropna())
    for scenario in default_scenarios():
        source = scenario.source
        if source is None:
            continue
        if source.version is None:
            assert rows[scenario.name]["release"] == f"not run: {source.not_run}"
        else:
            assert f"{source.sdk}=={source.version}" in environments, (scenario.name, source.version)
            assert not source.failure or rows[scenario.name]["release"].startswith(f"{source.version}: ")


def test_verdict_names_the_majority_and_its_exception() -> None:
    runs = read_table(FIELD_RUN, "runs").to_pandas()
    cells = runs[(runs["scenario"] == "field_content_filter_empty") & (runs["sdk"] == "pydantic-ai")]
    cells = cells[cells["environment"].fillna("pinned") == "pinned"] if "environment" in cells else cells
    text = field.verdict(cells)
    ran = cells[cells["outcome"] != "unsupported"]
    outcome, share = text.split()[:2]
    assert share == f"{(ran['outcome'] == outcome).sum()}/{len(ran)}"
    assert outcome == "raised" and text.endswith("ContentFilterError"), "pydantic-ai raises its own error (PR #3634)"


@pytest.fixture(scope="module")
def field_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bench report`` of the field run, once for the module (seconds to a minute, by load)."""
    out = tmp_path_factory.mktemp("field-report")
    result = CliRunner().invoke(app, ["report", str(FIELD_RUN), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_of_the_field_run_has_the_section(field_report: Path) -> None:
    markdown = (field_report / "report.md").read_text()
    assert "## Reported in the field" in markdown
    assert "[pydantic/pydantic-ai#5221](https://github.com/pydantic/pydantic-ai/issues/5221)" in markdown


def test_docs_field_md_is_current(tmp_path: Path) -> None:
    fresh = field.write_doc(FIELD_RUN, tmp_path / "field.md").read_text()
    assert (ROOT / "docs" / "field.md").read_text() == fresh, "regenerate: make field-doc"


def test_the_html_report_lists_the_cells_behind_each_verdict(field_report: Path) -> None:
    page = (field_report / "report.html").read_text()
    runs = read_table(FIELD_RUN, "runs").to_pandas()
    pinned = runs[runs["environment"].fillna("pinned") == "pinned"]
    one = pinned[(pinned["scenario"] == "field_wrapped_output") & (pinned["outcome"] != "unsupported")].iloc[0]
    assert 'id="field">Reported in the field</h2>' in page and str(one["cell_id"]) in page
