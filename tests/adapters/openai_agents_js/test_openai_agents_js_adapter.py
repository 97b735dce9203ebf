"""The OpenAI Agents SDK for TypeScript adapter (adapters/openai_agents_js) against the real local
provider over loopback: an Agent with a zod outputType, run() and streamed, on Chat Completions
and Responses, in the Node worker, through the runner's own path (``drive``). Each assertion is a
prediction of adapters/openai_agents_js/research.md."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.openai_agents_js.adapter import OpenAIAgentsJsAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.node import setup
from bench.provider import LocalProvider
from bench.scenarios.tasks import get_task
from bench.sdk import clients
from bench.sdk.adapter import Adapter, Cell
from tests.cell_runner import CellRun, CellRunner

pytestmark = pytest.mark.skipif(setup.unavailable() is not None, reason=str(setup.unavailable()))

ADAPTER = OpenAIAgentsJsAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
NO_WAIT_500 = {"http_error": {"status": 500, "retry_after_s": 0}}


class AgentsJsCells(CellRunner):
    """The tests' runner, on this adapter (the entry point takes effect at the next pip install)."""

    def adapter(self, cell: Cell) -> Adapter:
        return ADAPTER


def run_all(provider: LocalProvider, script: list[Any]) -> dict[tuple[str, str], CellRun]:
    async def main() -> dict[tuple[str, str], CellRun]:
        runner = AgentsJsCells(provider)
        async with clients.sharing():
            return {(str(c.protocol), str(c.variant)): await runner(c, script) for c in SUPPORTED}

    return asyncio.run(main())


def exception_of(run: CellRun) -> str | None:
    error = run.result.exception
    return None if error is None else getattr(error, "remote_type", type(error).__name__)


def test_cells() -> None:
    assert {(c.mode, c.protocol, c.variant) for c in SUPPORTED} == {
        (Mode.NATIVE, p, v) for p in (Protocol.CHAT, Protocol.RESPONSES) for v in (Variant.DEFAULT, Variant.STREAM)
    }
    assert all(c.note for c in ADAPTER.cells())
    assert ADAPTER.installed_version() == setup.locked()["@openai/agents"]


@pytest.mark.slow
def test_a_valid_answer_is_the_object_and_a_wrong_one_is_handed_on(provider: LocalProvider) -> None:
    for script, judged in ((["valid"], (True, True)), (["wrong"], (True, False))):
        runs = run_all(provider, script)
        assert {key: (get_task("person").judge(r.result.output), len(r.calls)) for key, r in runs.items()} == {
            key: (judged, 1) for key in runs
        }


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["malformed", "schema_violation", "prose"])
def test_an_answer_that_does_not_parse_or_validate_is_model_behavior_error_after_one_call(
    provider: LocalProvider, fault: str
) -> None:
    runs = run_all(provider, [fault])
    assert {key: (exception_of(r), str(r.result.exception), len(r.calls)) for key, r in runs.items()} == {
        key: (
            "@openai/agents.ModelBehaviorError",
            "Invalid output type: final assistant output did not match the expected schema.",
            1,
        )
        for key in runs
    }


@pytest.mark.slow
def test_a_refusal_is_model_refusal_error_and_a_500_is_the_clients_two_retries(provider: LocalProvider) -> None:
    refused = run_all(provider, ["refusal"])
    assert {exception_of(r) for r in refused.values()} == {"@openai/agents.ModelRefusalError"}
    exhausted = run_all(provider, [NO_WAIT_500])
    assert {(exception_of(r), len(r.calls)) for r in exhausted.values()} == {("openai.InternalServerError", 3)}
