"""Every number in a scenario is finite and in its stated range, in a scenario file and in a
``POST /runs`` body alike (issue 26, point 5): a NaN ``retry_after_s`` once passed both, failed
every attempt on the provider (status 499) and the cell counted as ``recovered``, exit 0."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from bench.cli import app
from bench.provider import LocalProvider
from bench.scenarios.behaviours import MAX_SCRIPT_STEPS, MAX_TURN_CALLS
from bench.scenarios.files import SCENARIO_DIR

NAN, INF = math.nan, math.inf
BAD = {"nan": NAN, "inf": INF, "minus-1": -1, "huge": 1e300}

FAMILIES: dict[str, tuple[str, Any, str]] = {
    # family: (task, the scenario's source with X for the number, the field the error names)
    "retry_after_s": (
        "person",
        {"script": [{"http_error": {"status": 429, "retry_after_s": "X"}}]},
        "script[0].retry_after_s",
    ),
    "delay_s": ("person", {"script": [{"slow": {"delay_s": "X", "where": "mid_stream"}}]}, "script[0].delay_s"),
    "then-delay_s": ("person", {"script": ["valid"], "then": {"slow": "X"}}, "then.delay_s"),
    "slow-answer-fraction": (
        "person",
        {"script": [{"slow": {"answer": {"truncated": "X"}}}]},
        "script[0].answer.fraction",
    ),
    "fraction": ("person", {"script": [{"truncated": "X"}]}, "script[0].fraction"),
    "status": ("person", {"script": ["valid", {"http_error": {"status": "X"}}]}, "script[1].status"),
    "rate": ("person", {"stochastic": {"rates": {"malformed": "X"}}}, "stochastic.rates.malformed"),
    "seed": ("person", {"stochastic": {"rates": {"malformed": 0.1}, "seed": "X"}}, "stochastic.seed"),
}
HUGE = {"status": 10**6, "seed": 2**64}
"""The huge value of an integer field (1e300 is huge for the others)."""
CASES = [(family, bad) for family in FAMILIES for bad in BAD]

PAYLOADS: dict[str, tuple[str, Any, str]] = {
    "value": (
        "person",
        {"script": [{"valid": {"name": "Ada", "age": "X", "email": "ada@example.com"}}]},
        "script[0].value",
    ),
    "nested-value": ("person", {"script": [{"wrong": {"name": "Ada", "tags": [{"w": "X"}]}}]}, "script[0].value"),
    "arguments": ("order_lookup", {"script": [{"tool_call": {"order_id": "X"}}]}, "script[0].arguments"),
    "turn-arguments": (
        "order_lookup",
        {"script": [{"parallel": [{"tool_call": {"order_id": "X"}}, "valid"]}]},
        "script[0].calls[0].arguments",
    ),
}
"""A ``valid`` object or a tool call's arguments is sent as JSON as written: any finite number
(an out-of-range age is the point of some), no NaN or infinity (JSON has none)."""


def filled(source: Any, number: float) -> Any:
    if source == "X":
        return number
    if isinstance(source, dict):
        return {key: filled(value, number) for key, value in source.items()}
    if isinstance(source, list):
        return [filled(value, number) for value in source]
    return source


def validate(tmp_path: Path, task: str, source: dict[str, Any], **extra: Any) -> tuple[int, str, Path]:
    """``bench scenarios validate`` on a file holding one scenario ``odd``: (exit code, stderr, file)."""
    path = tmp_path / "numbers.yaml"
    entry = {"name": "odd", "task": task, **source, **extra}
    path.write_text(yaml.safe_dump({"version": 1, "scenarios": [entry]}))
    result = CliRunner().invoke(app, ["scenarios", "validate", str(path)])
    return result.exit_code, result.stderr, path


def assert_one_line_naming(code: int, stderr: str, path: Path, field: str) -> None:
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"error: {path}: entry 'odd' (scenarios[0]), field {field}: "), stderr


@pytest.fixture(scope="module")
def served() -> Iterator[LocalProvider]:
    with LocalProvider() as provider:
        yield provider


def post(provider: LocalProvider, body: dict[str, Any]) -> httpx.Response:
    """``POST /runs`` with ``body`` as Python's JSON writes it (NaN and Infinity included, which
    Python's JSON reader, the provider's, accepts)."""
    return httpx.post(f"{provider.base_url}/runs", content=json.dumps(body).encode(), timeout=30)


def assert_refused_naming(response: httpx.Response, field: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error", error
    assert error["message"].startswith(f"field {field}: ") and "\n" not in error["message"], error


@pytest.mark.parametrize(("family", "bad"), CASES, ids=[f"{family}-{bad}" for family, bad in CASES])
def test_a_number_out_of_range_is_one_line_from_validate(tmp_path: Path, family: str, bad: str) -> None:
    task, source, field = FAMILIES[family]
    number = HUGE.get(family, BAD[bad]) if bad == "huge" else BAD[bad]
    code, stderr, path = validate(tmp_path, task, filled(source, number))
    assert_one_line_naming(code, stderr, path, field)


@pytest.mark.parametrize(("family", "bad"), CASES, ids=[f"{family}-{bad}" for family, bad in CASES])
def test_a_number_out_of_range_is_a_400_from_post_runs(served: LocalProvider, family: str, bad: str) -> None:
    task, source, field = FAMILIES[family]
    number = HUGE.get(family, BAD[bad]) if bad == "huge" else BAD[bad]
    before = set(served.app.runs)
    assert_refused_naming(post(served, {"task": task, **filled(source, number)}), field)
    assert set(served.app.runs) == before


@pytest.mark.parametrize("number", [NAN, INF, -INF], ids=["nan", "inf", "minus-inf"])
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_payload_holds_no_nan_or_infinity(tmp_path: Path, served: LocalProvider, payload: str, number: float) -> None:
    task, source, field = PAYLOADS[payload]
    code, stderr, path = validate(tmp_path, task, filled(source, number))
    assert_one_line_naming(code, stderr, path, field)
    assert "is not a JSON number" in stderr
    assert_refused_naming(post(served, {"task": task, **filled(source, number)}), field)


@pytest.mark.parametrize("number", [-1, 1e300, 10**30], ids=["minus-1", "huge-float", "huge-int"])
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_payload_may_hold_any_finite_number(
    tmp_path: Path, served: LocalProvider, payload: str, number: float
) -> None:
    task, source, _ = PAYLOADS[payload]
    code, stderr, _path = validate(tmp_path, task, filled(source, number))
    assert code == 0, stderr
    response = post(served, {"task": task, **filled(source, number)})
    assert response.status_code == 201, response.text
    served.close_run(response.json()["run_id"])


@pytest.mark.parametrize("where", ["script", "turns", "calls", "upstream"])
def test_counts_are_bounded(tmp_path: Path, served: LocalProvider, where: str) -> None:
    """A script's steps, a turn's calls and a tool plan's upstream steps are bounded; over the
    bound is one line naming the field (a posted script too long is a 413: test_serve_limits)."""
    if where == "script":
        task, source, field = "person", {"script": ["valid"] * (MAX_SCRIPT_STEPS + 1)}, "script"
        expected = (
            f"the script has {MAX_SCRIPT_STEPS + 1:,} steps (a parallel turn's calls counted one each); "
            f"a script may have at most {MAX_SCRIPT_STEPS:,}"
        )
    elif where == "turns":  # 63 turns of 16 calls: 1,008 steps
        turn = {"parallel": ["tool_call"] * MAX_TURN_CALLS}
        task, source, field = "order_lookup", {"script": [turn] * (MAX_SCRIPT_STEPS // MAX_TURN_CALLS + 1)}, "script"
        expected = "the script has 1,008 steps (a parallel turn's calls counted one each)"
    elif where == "calls":
        task, source, field = (
            "order_lookup",
            {"script": [{"parallel": ["tool_call"] * (MAX_TURN_CALLS + 1)}]},
            "script[0].calls",
        )
        expected = f"List should have at most {MAX_TURN_CALLS} items"
    else:
        task, source, field = (
            "order_lookup",
            {"script": ["valid"], "tool": {"upstream": ["ok"] * (MAX_SCRIPT_STEPS + 1)}},
            "tool",
        )
        expected = f"a tool plan may have at most {MAX_SCRIPT_STEPS:,}"
    code, stderr, path = validate(tmp_path, task, source)
    assert_one_line_naming(code, stderr, path, field)
    assert expected in stderr
    if where == "calls":
        assert_refused_naming(post(served, {"task": task, **source}), field)


def test_the_library_is_within_every_bound() -> None:
    result = CliRunner().invoke(app, ["scenarios", "validate", str(SCENARIO_DIR)])
    assert result.exit_code == 0, result.stderr
