"""The LangChain.js adapter (adapters/langchain_js) against the real local provider over loopback:
``withStructuredOutput`` in each method on ChatOpenAI (Chat Completions and Responses) and
ChatAnthropic, invoked, streamed and under ``withRetry``, in the Node worker, through the
runner's own path (``drive``). Each assertion is a prediction of adapters/langchain_js/research.md."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adapters.langchain_js.adapter import HARDENED_ATTEMPTS, LangChainJsAdapter
from bench.cli import app
from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.node import setup
from bench.provider import LocalProvider
from bench.results.store import read_table
from bench.scenarios.tasks import get_task
from bench.sdk import clients
from bench.sdk.adapter import Adapter, Cell
from bench.sdk.registry import INHERITED
from tests.cell_runner import CellRun, CellRunner, cell_of

pytestmark = pytest.mark.skipif(setup.unavailable() is not None, reason=str(setup.unavailable()))

ADAPTER = LangChainJsAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
PARSER = "@langchain/core.OutputParserException"
Key = tuple[str, str, str]


class LangChainJsCells(CellRunner):
    """The tests' runner, on this adapter (the entry point takes effect at the next pip install)."""

    def adapter(self, cell: Cell) -> Adapter:
        return ADAPTER


def key(cell: Cell) -> Key:
    return str(cell.mode), str(cell.protocol), str(cell.variant)


def run_cells(provider: LocalProvider, cells: list[Cell], script: list[Any]) -> dict[Key, CellRun]:
    async def main() -> dict[Key, CellRun]:
        runner = LangChainJsCells(provider)
        async with clients.sharing():
            return {key(c): await runner(c, script) for c in cells}

    return asyncio.run(main())


def exception_of(run: CellRun) -> str | None:
    error = run.result.exception
    return None if error is None else getattr(error, "remote_type", type(error).__name__)


def test_cells_are_every_method_on_every_chat_model_but_json_mode_on_anthropic() -> None:
    assert {key(c) for c in SUPPORTED} == {
        (str(m), str(p), str(v))
        for m in Mode
        for p in Protocol
        for v in (Variant.DEFAULT, Variant.HARDENED, Variant.STREAM)
        if (m, p) != (Mode.PROMPTED, Protocol.ANTHROPIC)
    }
    unsupported = [c for c in ADAPTER.cells() if c.mode_support is ModeSupport.UNSUPPORTED]
    assert {(c.mode, c.protocol) for c in unsupported} == {(Mode.PROMPTED, Protocol.ANTHROPIC)}
    assert all("falls back to jsonSchema" in c.note for c in unsupported)
    assert ADAPTER.installed_version() == setup.locked()["@langchain/core"]
    assert ADAPTER.language == "typescript"


@pytest.mark.slow
def test_a_valid_answer_is_the_object_but_a_streamed_tool_call_on_responses_or_anthropic_is_lost(
    provider: LocalProvider,
) -> None:
    runs = run_cells(provider, SUPPORTED, ["valid"])
    broken = {("tool", "openai-responses", "stream"): "node.Error", ("tool", "anthropic-messages", "stream"): PARSER}
    fine = {k: r for k, r in runs.items() if k not in broken}
    assert {k: (get_task("person").judge(r.result.output), len(r.calls)) for k, r in fine.items()} == {
        k: ((True, True), 1) for k in fine
    }
    assert {k: (exception_of(runs[k]), len(runs[k].calls)) for k in broken} == {k: (v, 1) for k, v in broken.items()}
    assert str(runs["tool", "openai-responses", "stream"].result.exception) == "Cannot handle non-string output."


@pytest.mark.slow
def test_a_schema_violation_is_output_parser_exception_retried_only_under_with_retry(provider: LocalProvider) -> None:
    cells = [
        cell_of(ADAPTER, mode=mode, protocol=protocol, variant=variant)
        for mode, protocol in ((Mode.TOOL, Protocol.CHAT), (Mode.TOOL, Protocol.ANTHROPIC),
                               (Mode.NATIVE, Protocol.ANTHROPIC), (Mode.PROMPTED, Protocol.RESPONSES))
        for variant in (Variant.DEFAULT, Variant.HARDENED)
    ]  # fmt: skip
    runs = run_cells(provider, cells, ["schema_violation"])
    assert {k: (exception_of(r), len(r.calls)) for k, r in runs.items()} == {
        key(c): (PARSER, HARDENED_ATTEMPTS if c.variant == Variant.HARDENED else 1) for c in cells
    }


@pytest.mark.slow
def test_native_on_responses_hands_on_an_object_that_does_not_validate(provider: LocalProvider) -> None:
    cells = [cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES, variant=v) for v in Variant if
             v in (Variant.DEFAULT, Variant.HARDENED, Variant.STREAM)]  # fmt: skip
    runs = run_cells(provider, cells, ["schema_violation"])
    assert {k: (r.result.output, r.result.exception, len(r.calls)) for k, r in runs.items()} == {
        key(c): ({"name": "Ada Lovelace", "email": "ada@example.org"}, None, 1) for c in cells
    }


@pytest.mark.slow
def test_a_refusal_is_model_refusal_error_on_anthropic_native_and_nothing_at_all_on_chat_tool(
    provider: LocalProvider,
) -> None:
    native = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.ANTHROPIC)
    tool = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT)
    runs = run_cells(provider, [native, tool], ["refusal"])
    assert (exception_of(runs[key(native)]), len(runs[key(native)].calls)) == ("@langchain/core.ModelRefusalError", 1)
    silent = runs[key(tool)]
    assert (silent.result.output, silent.result.exception, len(silent.calls)) == (None, None, 1)


@pytest.mark.slow
def test_native_on_chat_retries_a_schema_violation_six_times_inside_the_model_call(provider: LocalProvider) -> None:
    """The openai client's zod parse runs inside LangChain's AsyncCaller, which retries any error
    6 times with a 1 s doubling wait (up to 126 s): slow by nature, one cell."""
    cell = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT)
    run = run_cells(provider, [cell], ["schema_violation"])[key(cell)]
    assert (exception_of(run), len(run.calls), run.result.usage) == ("zod.$ZodError", 7, None)


@pytest.mark.slow
def test_bench_run_records_the_cells_as_typescript_with_the_locked_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench run --sdk langchain-js`` through the CLI: the entry point is handed down as a
    registration (pyproject's takes effect at the next ``pip install -e .``)."""
    registration: dict[str, object] = {
        "name": "langchain-js",
        "target": "adapters.langchain_js:PLUGIN",
        "distribution": None,
        "extras": [],
    }
    monkeypatch.setenv(INHERITED, json.dumps([registration]))
    cell = ["--mode", "tool", "--protocol", "openai-chat", "--variant", "default", "--scenario", "malformed_persistent"]
    args = ["run", "--sdk", "langchain-js", *cell, "--no-cache", "--no-progress", "--results", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = [path for path in tmp_path.iterdir() if path.is_dir()]
    rows = read_table(run_dir, "runs").to_pylist()
    assert [(r["language"], r["sdk_version"], r["outcome"], r["exception_type"], r["model_calls"]) for r in rows] == [
        ("typescript", setup.locked()["@langchain/core"], "raised", PARSER, 1)
    ]
