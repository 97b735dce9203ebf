"""`bench list`: what each adapter runs, and every cell it cannot run with its reason (the README
promises the reasons); protocols are the ones an adapter speaks, not the ones its table lists
as unsupported."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.sdk import registry

runner = CliRunner()


@pytest.fixture(scope="module")
def listed() -> tuple[str, dict[str, dict]]:
    text = runner.invoke(app, ["list"])
    assert text.exit_code == 0, text.stderr
    data = runner.invoke(app, ["list", "--json"])
    return text.stdout, {row["sdk"]: row for row in json.loads(data.stdout)}


def test_every_unsupported_cell_is_listed_with_its_reason(listed: tuple[str, dict[str, dict]]) -> None:
    text, rows = listed
    for name in rows:
        if not rows[name]["installed"]:
            continue
        adapter = registry.load(name)
        unsupported = [c for c in adapter.cells() if c.mode_support == "unsupported"]
        groups = rows[name]["unsupported"]
        assert sum(len(g["cells"]) for g in groups) == len(unsupported) == rows[name]["unsupported_cells"]
        for cell in unsupported:
            assert any(g["reason"] == (cell.note or "(the adapter gives no reason)") for g in groups)
    agents = next(g for g in rows["openai-agents"]["unsupported"] if "native/default/anthropic-messages" in g["cells"])
    assert "litellm" in agents["reason"]
    assert f"    why: {agents['reason']}" in text.splitlines()
    assert any(
        line.startswith("  unsupported: ") and "native/default/anthropic-messages" in line for line in text.splitlines()
    )


def test_protocols_are_the_ones_the_adapter_speaks(listed: tuple[str, dict[str, dict]]) -> None:
    text, rows = listed
    assert rows["openai-agents"]["protocols"] == ["openai-chat", "openai-responses"]
    assert rows["claude-agent-sdk"]["protocols"] == ["anthropic-messages"]
    assert rows["agentmaker"]["protocols"] == ["anthropic-messages", "openai-chat"]
    line = next(line for line in text.splitlines() if line.startswith("openai-agents "))
    assert "protocols=openai-chat,openai-responses " in line
