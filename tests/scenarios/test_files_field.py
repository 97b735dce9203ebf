"""scenarios/field.yaml: every scenario is a reported failure with its source, and a source is
validated like every field a user writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.core.vocabulary import Outcome
from bench.scenarios.files import ScenarioError, default_scenarios, load_file

FIELD = [s for s in default_scenarios() if s.suite == "field"]


def test_the_catalogue_holds_twenty_reports_each_with_its_source() -> None:
    reports = {(s.source.tracker, s.source.number) for s in FIELD if s.source is not None}
    assert len(FIELD) >= 20 and len(reports) >= 20
    for scenario in FIELD:
        source = scenario.source
        assert source is not None and source.symptom and source.release and source.sdk
        assert source.url == f"https://github.com/{source.tracker}/issues/{source.number}"
        assert all(entry.split(":", 1)[0] in {str(o) for o in Outcome} for entry in source.failure)
        assert (source.version is None) != (source.not_run is None), "the reported release: measured, or why not"
    assert all(s.source is None for s in default_scenarios() if s.suite != "field")


def test_reproduced_by_matches_an_outcome_or_an_outcome_with_its_exception() -> None:
    source = next(s.source for s in FIELD if s.name == "field_thinking_only_then_valid")
    assert source is not None and source.failure == ["raised:UnexpectedModelBehavior"]
    assert source.reproduced_by("raised", "pydantic_ai.exceptions.UnexpectedModelBehavior")
    assert not source.reproduced_by("raised", "pydantic_ai.exceptions.ContentFilterError")
    assert not source.reproduced_by("recovered", None)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{tracker: o/r, number: 1, sdk: s, release: '1', symptom: x, failure: [crashed]}",
         "field source.failure: Value error, unknown outcome 'crashed'"),
        ("{tracker: not a repo, number: 1, sdk: s, release: '1', symptom: x}", "field source.tracker"),
        ("{tracker: o/r, number: 0, sdk: s, release: '1', symptom: x}", "field source.number"),
        ("{tracker: o/r, number: 1, sdk: s, release: '1', symptom: x, modes: [json]}", "field source.modes[0]"),
        ("{tracker: o/r, number: 1, sdk: s, release: '1', symptom: x, version: '1.0', not_run: too old}",
         "field source: Value error, give version (the reported release, measured) or not_run"),
    ],
)  # fmt: skip
def test_a_bad_source_names_its_field(tmp_path: Path, source: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"version: 1\nscenarios:\n  - name: a\n    task: person\n    suite: field\n    script: [empty]\n"
                    f"    source: {source}\n")  # fmt: skip
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert f"{path}: entry 'a' (scenarios[0]), {message}".replace("Value error, ", "") in str(caught.value)


def test_a_behaviour_without_a_field_refuses_a_value(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("version: 1\nscenarios:\n  - {name: a, task: person, script: [{empty: 1}]}\n")
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert (
        str(caught.value)
        == f"{path}: entry 'a' (scenarios[0]), field script[0]: 'empty' takes no value; write it as the bare name empty"
    )
