"""The Vercel AI SDK adapter (adapters/ai) against the real local provider over loopback.

Each test drives the real SDK (ai 7 generateObject, streamObject, generateText with Output.object,
over @ai-sdk/openai chat and responses and @ai-sdk/anthropic) in the Node worker, through the
runner's own path (``drive``), and asserts what the SDK source predicts (adapters/ai/research.md).
The cells of one test share a run's worker pool (``clients.sharing``), as a run's cells do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from adapters.ai.adapter import GENERATE_TEXT, HARDENED_MAX_RETRIES, AiAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.node import setup
from bench.provider import LocalProvider
from bench.scenarios.tasks import get_task
from bench.sdk import clients
from bench.sdk.adapter import Adapter, Cell
from tests.cell_runner import CellRun, CellRunner

pytestmark = pytest.mark.skipif(setup.unavailable() is not None, reason=str(setup.unavailable()))

ADAPTER = AiAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
NO_WAIT_500 = {"http_error": {"status": 500, "retry_after_s": 0}}
"""A retryable 500 whose retry-after-ms of 0 the SDK honours (ai index.js:2406-2424): no backoff."""


class AiCells(CellRunner):
    """The tests' runner, on this adapter (the entry point takes effect at the next pip install)."""

    def adapter(self, cell: Cell) -> Adapter:
        return ADAPTER


def run_all(provider: LocalProvider, script: list[Any], cells: list[Cell] = SUPPORTED) -> list[CellRun]:
    async def main() -> list[CellRun]:
        runner = AiCells(provider)
        async with clients.sharing():
            return [await runner(cell, script) for cell in cells]

    return asyncio.run(main())


def test_cells_cover_every_mode_protocol_variant() -> None:
    cells = ADAPTER.cells()
    assert len(cells) == 3 * 3 * 4
    assert all(cell.note for cell in cells)
    assert {(c.mode, c.protocol) for c in SUPPORTED} == {
        (Mode.NATIVE, Protocol.CHAT),
        (Mode.NATIVE, Protocol.RESPONSES),
        (Mode.NATIVE, Protocol.ANTHROPIC),
        (Mode.TOOL, Protocol.ANTHROPIC),
    }
    assert {c.variant for c in SUPPORTED} == {Variant.DEFAULT, Variant.HARDENED, Variant.STREAM, GENERATE_TEXT}
    assert all(c.stream == (c.variant == Variant.STREAM) for c in cells)
    assert ADAPTER.installed_version() == setup.locked()["ai"]


def outcomes(runs: list[CellRun], what: Callable[[CellRun], Any]) -> dict[str, Any]:
    return {f"{r.cell.mode}-{r.cell.protocol}-{r.cell.variant}": what(r) for r in runs}


def exception_of(run: CellRun) -> str | None:
    error = run.result.exception
    return None if error is None else getattr(error, "remote_type", type(error).__name__)


@pytest.mark.slow
def test_a_valid_answer_is_the_object_in_one_call_with_the_usage_reported(provider: LocalProvider) -> None:
    runs = run_all(provider, ["valid"])
    assert outcomes(runs, lambda r: (get_task("person").judge(r.result.output), len(r.calls))) == outcomes(
        runs, lambda r: ((True, True), 1)
    )
    assert all(r.result.usage is not None and r.result.usage.input_tokens for r in runs)
    detected = outcomes(runs, lambda r: r.calls[0].detected_mode)
    assert detected == outcomes(runs, lambda r: str(r.cell.mode))  # the provider saw the mode the note claims


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("malformed", None),
        ("schema_violation", "No object generated: response did not match schema."),
        ("truncated", None),
    ],
)
def test_an_answer_that_does_not_parse_or_validate_raises_no_object_generated_after_one_call(
    provider: LocalProvider, fault: str, message: str | None
) -> None:
    """The claim of the SDK's docs: NoObjectGeneratedError when the answer does not parse or does
    not validate; the parse comes after ``retry(...)``, so nothing is retried (research.md)."""
    runs = run_all(provider, [fault])
    assert outcomes(runs, lambda r: (exception_of(r), len(r.calls))) == outcomes(
        runs, lambda r: ("ai.NoObjectGeneratedError", 1)
    )
    if message is not None:
        assert {str(r.result.exception) for r in runs} == {message}
    assert all(r.result.output is None for r in runs)


@pytest.mark.slow
def test_a_wrong_answer_is_handed_on(provider: LocalProvider) -> None:
    runs = run_all(provider, ["wrong"])
    assert outcomes(runs, lambda r: (get_task("person").judge(r.result.output), len(r.calls))) == outcomes(
        runs, lambda r: ((True, False), 1)
    )


@pytest.mark.slow
def test_a_500_is_retried_max_retries_times_then_retry_error(provider: LocalProvider) -> None:
    recovered = run_all(provider, [NO_WAIT_500, "valid"])
    assert outcomes(recovered, lambda r: (exception_of(r), len(r.calls))) == outcomes(recovered, lambda r: (None, 2))
    exhausted = run_all(provider, [NO_WAIT_500])
    budget = outcomes(exhausted, lambda r: 1 + (HARDENED_MAX_RETRIES if r.cell.variant == Variant.HARDENED else 2))
    assert outcomes(exhausted, lambda r: len(r.calls)) == budget
    assert {exception_of(r) for r in exhausted} == {"ai.RetryError"}


@pytest.mark.slow
def test_a_refusal_raises_and_generate_text_on_anthropic_raises_no_output_generated(provider: LocalProvider) -> None:
    runs = run_all(provider, ["refusal"])
    expected = outcomes(
        runs,
        lambda r: (
            "ai.NoOutputGeneratedError"
            if (r.cell.protocol, r.cell.variant) == (Protocol.ANTHROPIC, GENERATE_TEXT)
            else "ai.NoObjectGeneratedError"
        ),
    )
    assert outcomes(runs, exception_of) == expected
    assert all(len(r.calls) == 1 for r in runs)
    # generateText returned before `output` threw: its usage is what the caller holds
    assert outcomes(runs, lambda r: r.result.usage is not None) == outcomes(runs, lambda r: True)
