"""Property-based tests with a fixed budget: whatever bytes or documents arrive, the places
that parse them answer with their own clear error and never crash."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from bench.results.store import ResultsError, read_table
from bench.scenarios.behaviours import SHORT_FIELD, parse_behaviour
from bench.scenarios.files import ScenarioError, load_file
from tests.protocol_clients import anthropic_kwargs, chat_kwargs, responses_kwargs

BUDGET = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, width=32) | st.text(max_size=12)
KEYS = st.sampled_from(
    ["version", "scenarios", "name", "task", "script", "then", "stochastic", "rates", "seed", "kind",
     "variant", "status", "delay_s", "where", "suite", "fault", "person", *SHORT_FIELD]
) | st.text(max_size=8)  # fmt: skip
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5), max_leaves=25
)


def _scenario_like() -> st.SearchStrategy[Any]:
    """Documents close to real scenario files, so validation goes deep, plus pure noise."""
    entry = st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=10), "task": st.sampled_from(["person", "ticket_triage", "nope", 3])},
        optional={
            "script": st.lists(JSONISH | st.sampled_from(list(SHORT_FIELD)), max_size=4),
            "then": JSONISH,
            "stochastic": JSONISH,
        },
    )
    document = st.fixed_dictionaries(
        {"version": st.sampled_from([1, 2, "1", None])}, optional={"scenarios": st.lists(entry, max_size=3) | JSONISH}
    )
    return document | JSONISH


@pytest.mark.slow
@BUDGET
@given(document=_scenario_like())
def test_scenario_loader_only_raises_its_own_error(tmp_path_factory: pytest.TempPathFactory, document: Any) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "doc.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    try:
        load_file(path)
    except ScenarioError as error:
        assert str(error).startswith(str(path)) and "Traceback" not in str(error)


@BUDGET
@given(text=st.text(max_size=300))
def test_scenario_loader_survives_any_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "doc.yaml"
    path.write_text(text)
    with contextlib.suppress(ScenarioError):
        load_file(path)


@BUDGET
@given(raw=JSONISH)
def test_behaviour_parser_only_raises_validation_errors(raw: Any) -> None:
    with contextlib.suppress(ValidationError):
        parse_behaviour(raw)


VALID = {
    "/v1/chat/completions": chat_kwargs(Mode.NATIVE),
    "/v1/responses": responses_kwargs(Mode.NATIVE),
    "/v1/messages": anthropic_kwargs(Mode.NATIVE),
}


@pytest.fixture(scope="module")
def fuzz_run(provider: LocalProvider) -> Any:
    with provider.open_script("person", ["valid"]) as run:
        yield run


def _post(run: Any, path: str, content: bytes) -> httpx.Response:
    return httpx.post(f"{run.endpoint.root}{path}", content=content, timeout=10)


@pytest.mark.slow
@BUDGET
@given(path=st.sampled_from(sorted(VALID)), content=st.binary(max_size=400))
def test_provider_answers_random_bytes_with_a_protocol_error(fuzz_run: Any, path: str, content: bytes) -> None:
    response = _post(fuzz_run, path, content)
    assert response.status_code in (200, 400), response.text
    body = response.json()
    assert "error" in body or "choices" in body or "output" in body or "content" in body


@pytest.mark.slow
@BUDGET
@given(path=st.sampled_from(sorted(VALID)), data=st.data())
def test_provider_answers_truncated_or_mutated_requests(fuzz_run: Any, path: str, data: st.DataObject) -> None:
    valid = json.dumps(VALID[path]).encode()
    cut = data.draw(st.integers(0, len(valid) - 1))
    assert _post(fuzz_run, path, valid[:cut]).status_code == 400
    mutated = dict(VALID[path])
    key = data.draw(
        st.sampled_from(
            ["tools", "tool_choice", "response_format", "text", "output_config", "stream", "messages", "input"]
        )
    )
    mutated[key] = data.draw(JSONISH)
    response = _post(fuzz_run, path, json.dumps(mutated).encode())
    assert response.status_code in (200, 400), response.text


@BUDGET
@given(content=st.binary(max_size=2000))
def test_results_reader_only_raises_its_own_error(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    directory = tmp_path_factory.mktemp("run")
    (directory / "runs.parquet").write_bytes(content)
    with pytest.raises(ResultsError):
        read_table(directory, "runs")


def test_results_reader_rejects_a_truncated_real_file(tmp_path: Path, provider: LocalProvider) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.results import columns

    whole = tmp_path / "whole.parquet"
    pq.write_table(columns.RUNS.empty_table(), whole)
    data = whole.read_bytes()
    for cut in range(0, len(data), max(1, len(data) // 40)):
        directory = tmp_path / f"cut{cut}"
        directory.mkdir()
        (directory / "runs.parquet").write_bytes(data[:cut])
        with pytest.raises(ResultsError):
            read_table(directory, "runs")
    assert isinstance(pq.read_table(whole), pa.Table)
