"""The field suite: its scenarios run only when asked for (`--suite field`), never in the default
or full suites, whose matrices therefore do not change with the catalogue."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from bench.cli import app
from bench.run.suite import SuiteRequest, select_scenarios
from bench.scenarios.files import default_scenarios


def test_each_suite_holds_its_own_scenarios() -> None:
    every = default_scenarios()
    field = {s.name for s in every if s.suite == "field"}
    assert len(field) >= 20
    chosen = {
        suite: {s.name for s in select_scenarios(SuiteRequest(suite=suite))} for suite in ("default", "full", "field")
    }
    assert chosen["field"] == field
    assert not chosen["default"] & field and not chosen["full"] & field
    assert chosen["default"] < chosen["full"]


def test_a_field_scenario_asked_for_in_the_default_suite_says_which_suite(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--scenario", "field_wrapped_output", "--out", str(tmp_path), "--dry-run"])
    assert result.exit_code == 2
    assert "suite 'field'" in result.output and "--suite field" in result.output


def test_an_unknown_suite_names_the_three(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--suite", "feild", "--out", str(tmp_path), "--dry-run"])
    assert result.exit_code == 2 and "'default', 'full' or 'field'" in result.output
