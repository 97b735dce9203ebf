"""The landing matrix ``bench run`` prints: the default view of the committed baseline (the whole
default run, five SDKs, 36 scenarios) fits a 120-column terminal, names every scenario under its
fault family, and says what the report says about each cell."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.report.matrix import fault_family, summarise_cell
from bench.report.terminal import WIDTH, compact_lines, landing_matrix_wide, landing_view, plain, token
from bench.results.store import read_table
from tests.paths import REPO

SLOW_FIXTURES = ("runs",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

BASELINE = REPO / "results" / "baseline"


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return read_table(BASELINE, "runs").to_pandas()


@pytest.fixture(scope="module")
def view(runs: pd.DataFrame) -> str:
    return landing_view(runs, WIDTH)


@pytest.mark.slow
def _tables(view: str) -> list[list[str]]:
    """The view's tables (SDKs that do not fit one 120-column table go in the next), legend left out."""
    *tables, _legend = view.split("\n\n")
    return [table.splitlines() for table in tables]


def test_the_default_run_fits_120_columns(runs: pd.DataFrame, view: str) -> None:
    text = view
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    for scenario in set(runs["scenario"]):
        assert any(line.strip().split(" ")[0] == scenario for line in lines), scenario
    headers = " ".join(table[0] for table in _tables(view))
    for sdk in set(runs["sdk"]):
        assert sdk in headers.split(), sdk
    assert "WRONG / EMPTY answer handed to the user" in text


def test_scenarios_are_grouped_by_fault_family(runs: pd.DataFrame, view: str) -> None:
    family = None
    seen: dict[str, str] = {}
    for line in _tables(view)[0][2:]:
        if line and not line.startswith(" "):
            family = line
        elif line.startswith("  "):
            seen[line.split()[0]] = family or ""
    fault_of = dict(zip(runs["scenario"], runs["fault"], strict=True))
    assert {s: fault_family(fault_of[s]) for s in seen} == seen
    assert list(dict.fromkeys(seen.values()))[:2] == ["control", "malformed"]


def test_a_cell_reads_as_the_report_votes(runs: pd.DataFrame, view: str) -> None:
    """langchain's tool mode on malformed_persistent: the majority over variants is a runaway at
    the call cap, with variants disagreeing (the report's vote, not a second one)."""
    group = runs[(runs["sdk"] == "langchain") & (runs["mode"] == "tool") & (runs["scenario"] == "malformed_persistent")]
    expected = token(summarise_cell(group))
    assert expected.startswith("L12")
    table = next(table for table in _tables(view) if "langchain" in table[0].split())
    row = next(line for line in table if line.strip().startswith("malformed_persistent"))
    start = table[0].index("langchain")
    assert row[start:].split()[0] == expected


@pytest.mark.slow
def test_names_are_shortened_rather_than_overflowing(runs: pd.DataFrame) -> None:
    narrow = plain(compact_lines(runs, 100))
    assert max(len(line) for line in narrow.splitlines()[:-6]) <= 100
    assert "~" in narrow


@pytest.mark.slow
def test_the_wide_view_keeps_one_column_per_scenario(runs: pd.DataFrame) -> None:
    wide = landing_matrix_wide(runs)
    assert len(wide.splitlines()[0]) > 400
    assert "http_429_no_retry_after_then_valid" in wide.splitlines()[0]
