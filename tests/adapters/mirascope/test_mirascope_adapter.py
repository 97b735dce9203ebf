"""Mirascope through ``bench run``'s own path: its cells run in the worker of its own environment
(adapters/mirascope/environment.txt), against the local provider over loopback.

One small run for the whole module (one worker start, 27 cells x 5 scenarios). The expectations
are read from mirascope 2.8.2's source (adapters/mirascope/research.md; paths under the
environment's site-packages/mirascope/llm): ``response.parse()`` wraps every JSON or validation
failure in ``llm.ParseError`` and never retries (responses/root_response.py:168-185);
``response.validate(max_retries=n)`` resumes the conversation with the error's retry message n
times (responses/response.py:244-284); JSON is cut out of prose around it first
(responses/_utils.py:18-95); Anthropic's strict mode goes through the official client's beta
``messages.parse``, which validates the text against the type inside the call, and a pydantic
``ValidationError`` is no provider error, so it escapes the call as it is
(providers/anthropic/beta_provider.py:74, providers/base/base_provider.py:89-126)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.report.claims import evaluate, load_claims
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite
from bench.sdk import registry

pytestmark = pytest.mark.serial  # builds (or reuses) the environment, starts its workers

SCENARIOS = frozenset(
    {
        "malformed_then_valid",
        "wrong_then_valid",
        "schema_violation_persistent",
        "malformed_fenced_prose_persistent",
        "tool_bad_args_then_ok",
    }
)
VARIANTS = frozenset({"default", "hardened", "stream"})
SLOW_FIXTURES = ("mirascope_runs",)
PARSE_ERROR = "mirascope.llm.exceptions.ParseError"
VALIDATION = "pydantic_core._pydantic_core.ValidationError"


@pytest.fixture(scope="module", autouse=True)
def registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The ``mirascope`` entry point, as pyproject.toml declares it, for a venv installed before
    it existed: a distribution folder on sys.path and PYTHONPATH (as tests/plugin does)."""
    if "mirascope" in registry.registrations():
        yield
        return
    folder = tmp_path_factory.mktemp("mirascope-entry-point")
    info = folder / "misfit_bench_mirascope_entry_point-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: misfit-bench-mirascope-entry-point\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text("[misfit_bench.adapters]\nmirascope = adapters.mirascope:PLUGIN\n")
    saved = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), saved]))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture(scope="module")
def mirascope_runs(tmp_path_factory: pytest.TempPathFactory, registered: None) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("mirascope")
    filters = Filters(scenarios=SCENARIOS, variants=VARIANTS)
    run_suite(SuiteRequest(sdks=("mirascope",), filters=filters, results_root=root))
    directory = latest_run(root)
    assert directory is not None
    loaded = load_run(directory)
    runs = loaded["runs"]
    ran = runs[runs.outcome != "unsupported"].copy()
    ran.attrs["manifest"] = loaded["manifest"]
    return ran


def _cells(runs: pd.DataFrame, scenario: str, **where: object) -> pd.DataFrame:
    rows = runs[runs.scenario == scenario]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert not rows.empty, (scenario, where)
    return rows


def _anthropic_strict(rows: pd.DataFrame) -> pd.Series:
    return (rows.protocol == "anthropic-messages") & (rows["mode"] == "native") & ~rows.stream


def test_every_formatting_mode_runs_on_every_protocol() -> None:
    """tool, strict and json are served on Chat Completions, Responses and Anthropic alike
    (completions encode.py:411-431, responses encode.py:400-428, anthropic/provider.py:46-74), so
    the table has no unsupported cell; the bare type (variant auto) is Mirascope's own choice."""
    adapter = registry.load("mirascope")
    cells = adapter.cells()
    assert len(cells) == 30 and all(cell.mode_support is ModeSupport.BUILTIN for cell in cells)
    declared = {(cell.mode, found.group(1)) for cell in cells if (found := re.search(r"mode='(\w+)'", cell.note))}
    assert declared == {(Mode.TOOL, "tool"), (Mode.NATIVE, "strict"), (Mode.PROMPTED, "json")}
    assert {cell.protocol for cell in cells if cell.variant == Variant.AUTO} == set(Protocol)


def test_the_cells_ran_in_mirascopes_own_environment_not_in_this_process(mirascope_runs: pd.DataFrame) -> None:
    assert set(mirascope_runs.sdk_version) == {"2.8.2"}
    assert set(mirascope_runs.environment) == {"mirascope==2.8.2"}
    assert mirascope_runs.attrs["manifest"]["sdk_versions"] == {"mirascope": "2.8.2"}
    assert "mirascope" not in sys.modules  # the parent planned the cells without the SDK
    assert len(mirascope_runs) == 27 * len(SCENARIOS)


def test_parse_raises_parse_error_after_one_call_and_never_retries(mirascope_runs: pd.DataFrame) -> None:
    """Default and stream: one call, ``llm.ParseError`` (root_response.py:181-185), but on
    Anthropic's strict mode, where the beta parse's ValidationError leaves the call first."""
    rows = _cells(mirascope_runs, "malformed_then_valid")
    rows = rows[rows.variant != "hardened"]
    assert set(rows.model_calls) == {1} and set(rows.outcome) == {"raised"}
    strict = _anthropic_strict(rows)
    assert set(rows[strict].exception_type) == {VALIDATION}
    streamed_anthropic_tool = (rows.protocol == "anthropic-messages") & (rows["mode"] == "tool") & rows.stream
    # the stream decoder json.loads the tool input at the block's end (anthropic/_utils/decode.py:282-286)
    assert set(rows[streamed_anthropic_tool].exception_type) == {"json.decoder.JSONDecodeError"}
    assert set(rows[~strict & ~streamed_anthropic_tool].exception_type) == {PARSE_ERROR}


def test_validate_resumes_with_the_error_but_anthropic_strict_raises_first(mirascope_runs: pd.DataFrame) -> None:
    """``validate(max_retries=2)``: a malformed or validator-rejected answer is resumed once; a
    persistent violation raises ParseError after three calls. Anthropic strict never reaches it."""
    hardened = mirascope_runs[mirascope_runs.variant == "hardened"]
    for scenario in ("malformed_then_valid", "wrong_then_valid"):
        rows = _cells(hardened, scenario)
        strict = _anthropic_strict(rows)
        assert set(rows[~strict].outcome) == {"recovered"} and set(rows[~strict].model_calls) == {2}, scenario
        assert set(rows[strict].exception_type) == {VALIDATION} and set(rows[strict].model_calls) == {1}
    persistent = _cells(hardened, "schema_violation_persistent")
    strict = _anthropic_strict(persistent)
    assert set(persistent[~strict].exception_type) == {PARSE_ERROR} and set(persistent[~strict].model_calls) == {3}


def test_a_wrong_answer_is_returned_unless_the_hardened_validator_rejects_it(mirascope_runs: pd.DataFrame) -> None:
    rows = _cells(mirascope_runs, "wrong_then_valid")
    plain = rows[rows.variant != "hardened"]
    assert set(plain.outcome) == {"wrong"} and set(plain.model_calls) == {1}


def test_json_is_cut_out_of_the_prose_around_it(mirascope_runs: pd.DataFrame) -> None:
    """``extract_serialized_json`` starts at a ```json fence or the first brace (responses/_utils.py:18-44):
    a fenced answer in prose parses in one call on the OpenAI protocols; Anthropic strict's beta
    parse validates the whole text and raises."""
    rows = _cells(mirascope_runs, "malformed_fenced_prose_persistent")
    openai = rows[rows.protocol != "anthropic-messages"]
    assert set(openai.outcome) == {"ok"} and set(openai.model_calls) == {1}
    strict = rows[_anthropic_strict(rows)]
    assert set(strict.exception_type) == {VALIDATION}


def test_the_tool_loop_hands_a_bad_call_back_to_the_model(mirascope_runs: pd.DataFrame) -> None:
    """The documented loop (``while response.tool_calls: response.resume(response.execute_tools())``):
    a tool's error goes back as its output, paired with its call id, and the run goes on."""
    rows = _cells(mirascope_runs, "tool_bad_args_then_ok")
    assert set(rows.outcome) == {"recovered"} and set(rows.model_calls) == {3}
    assert set(rows.tool_retries) == {1} and set(rows.tool_error_to_model) == {True}


def test_the_published_validate_claim_is_refuted_by_anthropic_strict(mirascope_runs: pd.DataFrame) -> None:
    """claims.yaml's mirascope-validate-retries-parse-errors, judged here (the default run the
    report's claims test judges holds the built-in SDKs only: tests/report/test_build.py)."""
    (claim,) = [
        c for c in evaluate(load_claims(), mirascope_runs) if c["id"] == "mirascope-validate-retries-parse-errors"
    ]
    assert [check["verdict"] for check in claim["checks"]] == ["refuted", "refuted"]
    assert claim["verdict"] == "refuted"
    for check in claim["checks"]:  # the contradicting cells: Anthropic strict, and only it
        assert check["counter"] and all("/native/hardened/anthropic-messages" in line for line in check["counter"])


def test_the_environment_lock_is_what_the_cells_ran() -> None:
    from adapters.mirascope.adapter import MirascopeAdapter
    from bench.sdk.environment import lock_of, pins

    lock = lock_of(MirascopeAdapter())
    assert lock == Path(__file__).resolve().parents[3] / "adapters" / "mirascope" / "environment.txt"
    assert pins(lock)["mirascope"] == "2.8.2"
