"""Whether one Claude CLI process could serve several cells (issue 38, item 4): the figure.

Today each Claude Agent SDK cell is one ``query()``, so one CLI process started per cell. The
SDK's streaming client (``ClaudeSDKClient``) keeps one process and sends each prompt as a user
message with a ``session_id``. This measures, on the ``valid`` scenario of one cell (tool mode,
Anthropic Messages, default variant):

  per cell    N cells through the adapter's own ``run_cell`` (a CLI per cell): wall and CPU
  one CLI     the same N prompts through one ``ClaudeSDKClient``, a fresh ``session_id`` each,
              against one provider run scripted with N valid answers: wall and CPU
  carried     what the second and later prompts' first model call held: the number of messages
              in its body (1 is a fresh conversation; more means the CLI carried the earlier
              cells' turns into it) and the session id the CLI reported per prompt

CPU is this process and every child it reaped (the CLIs). A cell's result must not depend on the
cells before it, so the one-CLI path is usable only if ``carried`` shows fresh conversations (and
then only if the golden matrix stays byte-identical, which this does not check).

    .venv/bin/python benchmarks/claude_cli_reuse.py [--cells 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from typing import Any

from adapters.claude_agent_sdk.adapter import _HookLog, _options, _spec
from bench.provider import LocalProvider
from bench.run.plan import CellPlan, Filters
from bench.run.suite import SuiteRequest, plan_suite
from bench.scenarios.behaviours import Script, Valid
from bench.sdk.adapter import Adapter


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _plan() -> tuple[Adapter, CellPlan]:
    filters = Filters(
        scenarios=frozenset({"valid"}), variants=frozenset({"default"}), modes=frozenset({"tool"}),
        protocols=frozenset({"anthropic-messages"}),
    )  # fmt: skip
    adapters, plans = plan_suite(SuiteRequest(sdks=("claude-agent-sdk",), filters=filters), warn=lambda line: None)
    streamed = [p for p in plans if not p.cell.stream]
    if not streamed:
        raise SystemExit("no claude-agent-sdk cell for valid / tool / anthropic / default: is the SDK installed?")
    return adapters["claude-agent-sdk"], streamed[0]


async def per_cell(adapter: Adapter, plan: CellPlan, provider: LocalProvider, cells: int) -> tuple[float, float]:
    task = adapter.task_for(plan.scenario).with_tool(plan.scenario.tool)
    started, cpu = time.perf_counter(), _cpu()
    for _ in range(cells):
        with provider.open_run(task, plan.scenario.build_script(plan.unit_seed)) as run:
            result = await asyncio.wait_for(adapter.run_cell(plan.cell, task, run.endpoint), adapter.time_limit_s)
            assert result.exception is None, result.exception
    return time.perf_counter() - started, _cpu() - cpu


async def one_cli(
    adapter: Adapter, plan: CellPlan, provider: LocalProvider, cells: int, clear: bool
) -> tuple[float, float, list[int], list[str]]:
    """The N prompts through one streaming client; with ``clear``, ``/clear`` between them (the
    CLI then answers ``ConversationResetMessage``, types.py), waited for at most 30 s."""
    from claude_agent_sdk import ClaudeSDKClient, ConversationResetMessage, ResultMessage

    task = adapter.task_for(plan.scenario).with_tool(plan.scenario.tool)
    sessions: list[str] = []
    started, cpu = time.perf_counter(), _cpu()
    with (
        provider.open_run(task, Script([Valid()] * cells)) as run,
        tempfile.TemporaryDirectory(prefix="misfit-claude-reuse-") as scratch,
    ):
        options = _options(_spec(plan.cell), task, run.endpoint, scratch, _HookLog(), lambda line: None)
        async with ClaudeSDKClient(options=options) as client:
            for index in range(cells):
                if clear and index:
                    await client.query("/clear", session_id=f"cell-{index}")
                    await asyncio.wait_for(_until_reset(client, ConversationResetMessage, ResultMessage), 30)
                firsts = len(run.attempts)
                await client.query(task.prompt, session_id=f"cell-{index}")
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        sessions.append(str(message.session_id))
                assert len(run.attempts) > firsts, "the prompt reached no model call"
        bodies: list[dict[str, Any] | None] = [record.request_body for record in run.attempts]
    wall, used = time.perf_counter() - started, _cpu() - cpu
    held = [len((body or {}).get("messages", [])) for body in bodies]
    return wall, used, held, sessions


async def _until_reset(client: Any, *kinds: type) -> None:
    async for message in client.receive_messages():
        if isinstance(message, kinds):
            return


async def measure(cells: int) -> None:
    adapter, plan = _plan()
    with LocalProvider() as provider:
        await per_cell(adapter, plan, provider, 1)  # warm-up (imports, the CLI's first start), not counted
        wall, cpu = await per_cell(adapter, plan, provider, cells)
        print(
            f"{'a CLI per cell (today)':<24} {cells} cells: wall {wall:.2f} s, CPU {cpu:.2f} s, "
            f"per cell CPU {cpu / cells:.3f} s"
        )
        for clear in (False, True):
            wall2, cpu2, held, sessions = await one_cli(adapter, plan, provider, cells, clear)
            way = "one CLI, /clear between" if clear else "one CLI, session_id each"
            print(
                f"{way:<24} {cells} cells: wall {wall2:.2f} s, CPU {cpu2:.2f} s, per cell CPU {cpu2 / cells:.3f} s "
                f"({1 - cpu2 / cpu:.0%} less CPU than a CLI each)"
            )
            fresh = all(count == 1 for count in held)
            verdict = "each cell a fresh conversation" if fresh else "later cells carry the earlier cells' turns"
            print(f"{'':<24} messages per model call {held}; {len(set(sessions))} session id(s) reported: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=5, help="cells per way (default 5)")
    options = parser.parse_args()
    if options.cells < 2:
        parser.error("--cells must be at least 2: one cell shows nothing carried")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(measure(options.cells))


if __name__ == "__main__":
    main()
