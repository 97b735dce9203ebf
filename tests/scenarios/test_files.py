"""Scenario files: the shipped library is valid and complete, short forms mean their long
forms, the committed JSON Schema is current, and a bad file gets one line per problem naming
file, entry and field, with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.core.vocabulary import BehaviourKind
from bench.scenarios.behaviours import SHORT_FIELD, parse_behaviour
from bench.scenarios.files import SCENARIO_DIR, SCHEMA_FILE, ScenarioError, default_scenarios, json_schema, load_file

runner = CliRunner()


def test_committed_json_schema_is_current() -> None:
    committed = json.loads((SCENARIO_DIR / SCHEMA_FILE).read_text())
    assert committed == json_schema(), "run 'bench scenarios schema' and commit the result"


def test_library_covers_every_behaviour_as_recovery_and_as_persistent_fault() -> None:
    scenarios = default_scenarios()
    recovered: set[str] = set()
    persistent: set[str] = set()
    for scenario in scenarios:
        if scenario.script is None:
            continue  # stochastic sweeps
        faults = {step.kind for step in scenario.script if step.kind != BehaviourKind.VALID}
        if not faults:
            continue
        ends_valid = scenario.script[-1].kind == BehaviourKind.VALID
        (recovered if ends_valid else persistent).update(faults)
    expected = {kind for kind in BehaviourKind if kind != BehaviourKind.VALID}
    assert expected <= recovered, f"no [fault, valid] scenario for {expected - recovered}"
    assert expected <= persistent, f"no persistent scenario for {expected - persistent}"
    assert {s.task for s in scenarios} == {"person", "expense_report", "ticket_triage", "order_lookup"}


def test_tool_plan_needs_a_task_with_a_tool(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\nscenarios:\n  - name: x\n    task: person\n    script: [valid]\n    tool: {upstream: [timeout]}\n"
    )
    with pytest.raises(ScenarioError, match=r"bad.yaml: entry 'x' \(scenarios\[0\]\): 'tool' needs a task with a tool"):
        load_file(path)


def test_tool_plan_names_the_bad_upstream_step(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\nscenarios:\n  - name: x\n    task: order_lookup\n    script: [valid]\n"
        "    tool: {upstream: [tiemout]}\n"
    )
    with pytest.raises(ScenarioError, match=r"field tool.upstream\[0\]"):
        load_file(path)


@pytest.mark.parametrize(
    ("short", "long"),
    [
        ("malformed", {"kind": "malformed"}),
        ({"malformed": "single_quotes"}, {"kind": "malformed", "variant": "single_quotes"}),
        ({"http_error": 429}, {"kind": "http_error", "status": 429}),
        (
            {"http_error": {"status": 503, "should_retry": False}},
            {"kind": "http_error", "status": 503, "should_retry": False},
        ),
        ({"slow": 2.5}, {"kind": "slow", "delay_s": 2.5}),
        ({"valid": {"name": "x"}}, {"kind": "valid", "value": {"name": "x"}}),
        ({"truncated": 0.25}, {"kind": "truncated", "fraction": 0.25}),
        (
            {"parallel": [{"tool_call": {"order_id": "A"}}, {"malformed": "unterminated"}]},
            {
                "kind": "parallel",
                "calls": [
                    {"kind": "tool_call", "arguments": {"order_id": "A"}},
                    {"kind": "malformed", "variant": "unterminated"},
                ],
            },
        ),
    ],
)
def test_short_forms_resolve_to_long_forms(short: object, long: dict) -> None:
    assert parse_behaviour(short) == parse_behaviour(long)


def test_every_behaviour_has_a_short_form() -> None:
    assert set(SHORT_FIELD) == {str(kind) for kind in BehaviourKind}


BAD_FILES = {
    "unknown_key.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    script: [valid]\n    colour: red\n",
        "entry 'a' (scenarios[0]), field colour: Extra inputs are not permitted",
    ),
    "typo_behaviour.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    script: [valid]\n"
        "  - name: b\n    task: person\n    script: [valid, malfomred]\n",
        "entry 'b' (scenarios[1]), field script[1]: unknown behaviour 'malfomred'; did you mean 'malformed'?",
    ),
    "bad_variant.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    script: [{schema_violation: too_big}]\n",
        "entry 'a' (scenarios[0]), field script[0].variant: Input should be 'missing_field'",
    ),
    "unknown_task.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: invoice\n    script: [valid]\n",
        "field task: unknown task 'invoice'; known tasks: expense_report, order_lookup, person, ticket_triage",
    ),
    "no_script.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n",
        "entry 'a' (scenarios[0]): give exactly one of 'script'",
    ),
    "wrong_version.yaml": ("version: 2\nscenarios: []\n", "field version: Input should be 1"),
    "not_yaml.yaml": ("version: 1\nscenarios: [\n", "invalid YAML"),
    "a_list.yaml": ("- valid\n", "expected a mapping with 'version' and 'scenarios', got list"),
    "duplicate.yaml": (
        "version: 1\nscenarios:\n  - {name: a, task: person, script: [valid]}\n"
        "  - {name: a, task: person, script: [valid]}\n",
        "scenario name 'a' is used twice",
    ),
    "parallel_one_call.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: order_lookup\n    script: [{parallel: [valid]}]\n",
        "entry 'a' (scenarios[0]), field script[0].calls: List should have at least 2 items",
    ),
    "field_without_source.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    suite: field\n    script: [empty]\n",
        "entry 'a' (scenarios[0]): a 'field' scenario needs its 'source', and only a 'field' scenario has one",
    ),
    "source_extra_key.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    suite: field\n    script: [empty]\n"
        "    source: {tracker: o/r, number: 1, sdk: s, release: '1', symptom: x, url: y}\n",
        "entry 'a' (scenarios[0]), field source.url: Extra inputs are not permitted",
    ),
    "parallel_refusal.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: order_lookup\n"
        "    script: [{parallel: [{tool_call: {order_id: ORD-1042}}, refusal]}]\n",
        "entry 'a' (scenarios[0]), field script[0].calls[1]: 'refusal' cannot be one call of a turn; "
        "a turn's calls are tool_call, valid, wrong, malformed, schema_violation",
    ),
    "parallel_typo.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: order_lookup\n"
        "    script: [{parallel: [{tool_cal: {order_id: ORD-1042}}, valid]}]\n",
        "field script[0].calls[0]: unknown behaviour 'tool_cal'; did you mean 'tool_call'?",
    ),
    "parallel_extra_key.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: order_lookup\n"
        "    script: [{parallel: [{kind: tool_call, arguments: {}, colour: red}, valid]}]\n",
        "field script[0].calls[0].colour: Extra inputs are not permitted",
    ),
    "parallel_rate.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: order_lookup\n    stochastic: {rates: {parallel: 0.5}}\n",
        "field stochastic: 'parallel' needs its calls, which a rate cannot give; script that turn instead",
    ),
    "bad_rate.yaml": (
        "version: 1\nscenarios:\n  - name: a\n    task: person\n    stochastic: {rates: {malformed: 1.5}}\n",
        "field stochastic.rates.malformed: Input should be less than or equal to 1",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_error_names_file_entry_and_field(tmp_path: Path, name: str) -> None:
    text, expected = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert len(message.splitlines()) == 1, message
    assert expected.replace("Value error, ", "") in message
    assert "Traceback" not in message


def test_cli_validate_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("version: 1\nscenarios:\n  - name: a\n    task: persn\n    script: [valdi]\n    extra: 1\n")
    result = runner.invoke(app, ["scenarios", "validate", str(path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3 and all(str(path) in line for line in lines)
    assert "Traceback" not in result.output


def test_cli_validate_and_list_the_library() -> None:
    result = runner.invoke(app, ["scenarios", "validate", str(SCENARIO_DIR)])
    assert result.exit_code == 0 and result.stdout.startswith("ok: ")
    listed = runner.invoke(app, ["scenarios", "list", "--json"])
    names = [row["name"] for row in json.loads(listed.stdout)]
    assert names == [s.name for s in default_scenarios()]


def test_cli_validate_missing_path_is_an_input_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scenarios", "validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "no such file" in result.stderr
