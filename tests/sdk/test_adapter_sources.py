"""What the built-in adapters' sources may not do on their own (issue 29, part 3): spell an
exception's name themselves (``bench.core.names.qualified_name`` is the one spelling), or reach
LangChain's private API from anywhere but the one function that says why."""

from __future__ import annotations

import ast
from pathlib import Path

from langchain_openai import ChatOpenAI

from adapters.langchain import adapter as langchain_adapter
from bench.sdk.adapter import ANTHROPIC_MODEL, LOCAL_API_KEY, OPENAI_MODEL

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = sorted((ROOT / "adapters").glob("*/adapter.py"))


def test_no_adapter_spells_an_exception_name_itself() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in ADAPTERS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "__qualname__" in line
    ]
    assert ADAPTERS and spelled == []


def _private_imports(tree: ast.AST) -> dict[str, list[str]]:
    """Private names imported from langchain, by the function each import sits in ("" for the module)."""
    found: dict[str, list[str]] = {}

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("langchain"):
                private = [a.name for a in child.names if a.name.startswith("_")]
                if private:
                    found.setdefault(where, []).extend(private)
            visit(child, where)

    visit(tree, "")
    return found


def test_langchain_private_api_is_reached_from_one_named_function() -> None:
    source = Path(langchain_adapter.__file__).read_text(encoding="utf-8")
    assert _private_imports(ast.parse(source)) == {"provider_strategy_picked": ["_supports_provider_strategy"]}
    assert not hasattr(langchain_adapter, "_supports_provider_strategy")
    doc = langchain_adapter.provider_strategy_picked.__doc__ or ""
    assert "no public face" in doc and "factory.py:581" in doc


def test_provider_strategy_picked_is_langchains_decision_for_both_models() -> None:
    from langchain_anthropic import ChatAnthropic

    base = "http://127.0.0.1:9"  # building a chat model sends nothing
    openai = ChatOpenAI(model=OPENAI_MODEL, base_url=f"{base}/v1", api_key=LOCAL_API_KEY)
    anthropic = ChatAnthropic(model=ANTHROPIC_MODEL, base_url=base, api_key=LOCAL_API_KEY)
    assert langchain_adapter.provider_strategy_picked(openai)
    assert langchain_adapter.provider_strategy_picked(anthropic, tools=[])
