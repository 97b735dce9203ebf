"""The built-in adapters' support tables (issue 29, part 3): each one is a rule over the grid
(``bench.sdk.adapter.grid``), its cells in (mode, protocol, variant) order over the axes it was
built on, and its shape as the research notes give it. A table written any other way, a cell
listed out of order or a rule that changes what a cell is fails here before it reaches a run."""

from __future__ import annotations

import ast
from collections import Counter
from itertools import product
from pathlib import Path

import pytest

from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.sdk import registry
from bench.sdk.adapter import VARIANTS, Support, SupportGrid, grid

ROOT = Path(__file__).resolve().parents[2]

SHAPES: dict[str, dict[ModeSupport, int]] = {
    "pydantic-ai": {ModeSupport.BUILTIN: 27},
    "openai-agents": {ModeSupport.BUILTIN: 6, ModeSupport.COMPOSED: 6, ModeSupport.UNSUPPORTED: 15},
    "langchain": {ModeSupport.BUILTIN: 21, ModeSupport.COMPOSED: 3, ModeSupport.UNSUPPORTED: 12},
    "claude-agent-sdk": {ModeSupport.BUILTIN: 3, ModeSupport.UNSUPPORTED: 8},
    "agentmaker": {ModeSupport.BUILTIN: 7, ModeSupport.UNSUPPORTED: 21},
    "openai-client": {ModeSupport.BUILTIN: 8, ModeSupport.UNSUPPORTED: 9},
    "anthropic-client": {ModeSupport.BUILTIN: 2, ModeSupport.COMPOSED: 2, ModeSupport.UNSUPPORTED: 9},
    "instructor": {ModeSupport.BUILTIN: 22, ModeSupport.UNSUPPORTED: 3},
}
"""How many cells of each level every built-in table holds: a rule that changes a cell's level
(or drops or adds one) must change this on purpose."""

BUILTIN = sorted(SHAPES)


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_table_is_a_rule_over_the_grid(name: str) -> None:
    table = registry.load(name).support
    assert isinstance(table, SupportGrid), f"{name}: support is a {type(table).__name__}, not grid(...)"
    # A named function with a docstring saying why, not a lambda over a lookup table.
    assert table.rule.__name__ != "<lambda>" and table.rule.__doc__, f"{name}: the rule is not a documented function"
    modes, protocols, variants = table.axes
    for axis in table.axes:
        assert len(set(axis)) == len(axis), f"{name}: an axis lists a value twice: {axis}"
    assert all(isinstance(m, Mode) for m in modes) and all(isinstance(p, Protocol) for p in protocols)
    assert set(variants) <= set(Variant)


@pytest.mark.parametrize("name", BUILTIN)
def test_cells_are_in_mode_protocol_variant_order_over_the_axes(name: str) -> None:
    table = registry.load(name).support
    assert isinstance(table, SupportGrid)
    keys = list(table)
    assert keys == [key for key in product(*table.axes) if key in table]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("name", BUILTIN)
def test_table_shape_and_notes(name: str) -> None:
    adapter = registry.load(name)
    assert Counter(entry.level for entry in adapter.support.values()) == SHAPES[name]
    # Every cell says how it is built or why it cannot be: `bench list` groups gaps by this note.
    assert all(entry.note.strip() for entry in adapter.support.values())
    assert [(c.mode, c.protocol, c.variant) for c in adapter.cells()] == list(adapter.support)


def test_claude_lists_its_gaps_once_under_the_default_variant() -> None:
    table = registry.load("claude-agent-sdk").support
    runs = {key for key, entry in table.items() if entry.level is not ModeSupport.UNSUPPORTED}
    assert runs == {(Mode.TOOL, Protocol.ANTHROPIC, variant) for variant in VARIANTS}
    assert {key[2] for key, entry in table.items() if entry.level is ModeSupport.UNSUPPORTED} == {Variant.DEFAULT}


def test_agentmaker_json_object_exists_for_prompted_chat_only() -> None:
    table = registry.load("agentmaker").support
    assert [key for key in table if key[2] == Variant.JSON_OBJECT] == [
        (Mode.PROMPTED, Protocol.CHAT, Variant.JSON_OBJECT)
    ]


def test_a_rule_returning_none_leaves_the_grid_point_out_and_keeps_the_order() -> None:
    def rule(mode: Mode, protocol: Protocol, variant: Variant | str) -> Support | None:
        return None if variant == "b" and mode is not Mode.NATIVE else Support.builtin(f"{mode}-{variant}")

    table = grid((Mode.TOOL, Mode.NATIVE), (Protocol.CHAT,), ("a", "b"), rule)
    assert list(table.items()) == [
        ((Mode.TOOL, Protocol.CHAT, "a"), Support.builtin("tool-a")),
        ((Mode.NATIVE, Protocol.CHAT, "a"), Support.builtin("native-a")),
        ((Mode.NATIVE, Protocol.CHAT, "b"), Support.builtin("native-b")),
    ]
    assert not hasattr(table, "__setitem__"), "a class-level table every instance shares is read-only"


def _assigned_names(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names += [target.id for target in targets if isinstance(target, ast.Name)]
    return names


def test_variants_is_declared_once() -> None:
    declared = [
        str(path.relative_to(ROOT))
        for path in sorted([*(ROOT / "bench").rglob("*.py"), *(ROOT / "adapters").rglob("*.py")])
        for name in _assigned_names(path)
        if name == "VARIANTS"
    ]
    assert declared == ["bench/sdk/adapter.py"]
