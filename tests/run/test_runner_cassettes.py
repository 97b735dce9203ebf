"""``bench run --cassettes``: real SDK cells answered from cassettes recorded from those SDKs'
own requests, the scenario's faults on top; the outcomes equal the synthesised run's (the
recordings are of the same reference answer), and a request no cassette matches is a harness
error naming the nearest cassette, never a measured outcome."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cassettes import RecordingProxy
from bench.cli import app
from bench.core.vocabulary import Mode, Protocol, Variant
from bench.provider import LocalProvider
from bench.results.store import latest_run, read_table
from bench.scenarios.behaviours import Script, Valid
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Endpoint
from bench.sdk.registry import load

pytestmark = pytest.mark.slow
SDKS = ("pydantic-ai", "openai-agents", "langchain", "agentmaker", "openai-parse")
SCENARIOS = ("valid", "malformed_then_valid", "truncated_then_valid", "wrong_then_valid", "http_429_then_valid")
CELL = ["--mode", "native", "--protocol", "openai-chat", "--variant", "default"]


def record_cells(
    folder: Path,
    task_name: str,
    sdks: tuple[str, ...] = SDKS,
    cell: tuple[Mode, Protocol] = (Mode.NATIVE, Protocol.CHAT),
) -> None:
    """Each SDK's default cell of ``cell``'s mode and protocol, run once through ``bench
    record``'s proxy in front of the provider answering validly."""
    with LocalProvider() as upstream:
        for sdk in sdks:
            adapter = load(sdk)
            [chosen] = [c for c in adapter.cells() if (c.mode, c.protocol, c.variant) == (*cell, Variant.DEFAULT)]
            with upstream.open_run(get_task(task_name), Script([Valid()])) as run:
                prefix = run.endpoint.root.removeprefix(upstream.base_url)
                with RecordingProxy(upstream.base_url, folder) as proxy:
                    endpoint = Endpoint(root=proxy.base_url + prefix)
                    result = asyncio.run(adapter.run(chosen, get_task(task_name), endpoint))
            assert result.exception is None, result.exception


def outcomes(
    out: Path, *extra: str, who: tuple[str, ...] | None = None, scenarios: tuple[str, ...] = SCENARIOS
) -> dict[str, str]:
    chosen = who if who is not None else (*(a for sdk in SDKS for a in ("--sdk", sdk)), *CELL)
    args = ["run", *chosen, "--out", str(out), "--no-progress"]
    args += [a for name in scenarios for a in ("--scenario", name)]
    result = CliRunner().invoke(app, [*args, *extra])
    assert result.exit_code in (0, 3), result.output
    runs = read_table(latest_run(out), "runs").to_pandas().fillna({"exception_message": ""})
    return {f"{row.sdk}/{row.scenario}": f"{row.outcome} {row.exception_message}".strip() for row in runs.itertuples()}


def test_replayed_outcomes_equal_the_synthesised_ones(tmp_path: Path) -> None:
    record_cells(tmp_path / "cassettes", "person")
    synthesised = outcomes(tmp_path / "synth")
    replayed = outcomes(tmp_path / "replay", "--cassettes", str(tmp_path / "cassettes"))
    assert len(replayed) == len(SDKS) * len(SCENARIOS)
    assert replayed == synthesised
    assert not any(outcome.startswith("harness_error") for outcome in replayed.values())


def test_a_request_no_cassette_matches_is_a_harness_error(tmp_path: Path) -> None:
    record_cells(tmp_path / "cassettes", "expense_report")  # another task's prompt and schema
    replayed = outcomes(tmp_path / "replay", "--cassettes", str(tmp_path / "cassettes"))
    not_missed = {k: o for k, o in replayed.items() if not (o.startswith("harness_error") and "nearest: " in o)}
    # A scripted error needs no recorded answer: the SDK that does not retry never asks for one.
    assert list(not_missed) == ["openai-parse/http_429_then_valid"] and not_missed[
        "openai-parse/http_429_then_valid"
    ].startswith("raised")


OWN_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "own_agent"


def test_your_own_agent_replays_its_recorded_traffic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/own_agent's ``support`` agent (Pydantic AI), recorded once through the proxy on
    its declared prompt, then ``bench run --agent support --cassettes``: the synthesised run's outcomes."""
    from bench.own.adapter import load_agents

    monkeypatch.chdir(OWN_PROJECT)
    adapter = load_agents(["support"], OWN_PROJECT)["support"]
    [cell] = adapter.cells()
    folder = tmp_path / "cassettes"
    with LocalProvider() as upstream, upstream.open_run(adapter.task, Script([Valid()])) as run:
        prefix = run.endpoint.root.removeprefix(upstream.base_url)
        with RecordingProxy(upstream.base_url, folder) as proxy:
            result = asyncio.run(adapter.run(cell, adapter.task, Endpoint(root=proxy.base_url + prefix)))
    assert result.exception is None, result.exception
    who = ("--agent", "support")
    synthesised = outcomes(tmp_path / "synth", who=who)
    replayed = outcomes(tmp_path / "replay", "--cassettes", str(folder), who=who)
    assert replayed == synthesised and len(replayed) == len(SCENARIOS)


def test_the_claude_cli_replays_with_its_temporary_folder_redacted(tmp_path: Path) -> None:
    """The Claude CLI tells the model its working folder, a new temporary one per cell: replayed
    with ``--redact`` on that path (applied to recorded and new requests alike), it matches."""
    record_cells(tmp_path / "cassettes", "person", ("claude-agent-sdk",), (Mode.TOOL, Protocol.ANTHROPIC))
    who = ("--sdk", "claude-agent-sdk", "--mode", "tool", "--protocol", "anthropic-messages", "--variant", "default")
    scenarios = ("--scenario", "valid", "--scenario", "malformed_then_valid")
    synthesised = outcomes(tmp_path / "synth", who=(*who, *scenarios), scenarios=())
    cassettes = ("--cassettes", str(tmp_path / "cassettes"), "--redact", r"/tmp/misfit-claude-[^/]+")
    replayed = outcomes(tmp_path / "replay", *cassettes, who=(*who, *scenarios), scenarios=())
    assert replayed == synthesised and len(replayed) == 2


def test_a_partial_cassette_is_skipped_only_under_skip_bad(tmp_path: Path) -> None:
    """``bench run --cassettes``: a cassette cut short refuses the run (one line naming it, exit
    2) unless ``--skip-bad``: then a warning names it and the cells run on the others, the
    builtin tasks and those drawn from the cassettes (``--tasks cassettes``) alike."""
    folder = tmp_path / "cassettes"
    record_cells(folder, "person", ("openai-parse",))
    partial = folder / "0001-openai-chat-partial.json"
    partial.write_text(next(folder.iterdir()).read_text()[:200])
    who = ("--sdk", "openai-parse", *CELL)
    args = ["run", *who, "--scenario", "valid", "--no-progress", "--cassettes", str(folder)]
    refused = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "refused")])
    assert refused.exit_code == 2 and refused.stderr.startswith(f"error: --cassettes {partial}: not a JSON"), (
        refused.output
    )
    for tasks in ("builtin", "cassettes"):
        out = tmp_path / tasks
        result = CliRunner().invoke(app, [*args, "--skip-bad", "--tasks", tasks, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert result.stderr.startswith(f"warning: --skip-bad: skipped {partial}: not a JSON cassette"), result.stderr
        runs = read_table(latest_run(out), "runs").to_pandas()
        assert list(runs["outcome"]) == ["ok"], runs[["outcome", "exception_message"]]
