"""The registry: lazy adapters, and an install hint that reaches the user when an SDK is missing."""

from __future__ import annotations

import sys

import pytest

from bench.run.suite import load_adapters
from bench.sdk import registry


def _hide(monkeypatch: pytest.MonkeyPatch, sdk_module: str, adapter_module: str) -> None:
    """Make ``import sdk_module`` fail as it does when the SDK is not installed."""
    for name in [m for m in sys.modules if m == adapter_module or m.startswith(f"{adapter_module}.")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.startswith(f"{sdk_module}.")]:
        monkeypatch.setitem(sys.modules, name, None)  # already imported by another test module
    monkeypatch.setitem(sys.modules, sdk_module, None)


def test_a_missing_sdk_names_the_pip_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "langchain", "adapters.langchain.adapter")
    with pytest.raises(registry.AdapterUnavailable) as raised:
        registry.load("langchain")
    assert "pip install 'misfit-bench[langchain]'" in str(raised.value)


def test_the_hint_is_read_before_import_for_every_builtin_adapter() -> None:
    hints = {name: r.install_hint for name, r in registry.registrations().items() if r.distribution == "misfit-bench"}
    python_sdks = ("agentmaker", "claude-agent-sdk", "langchain", "openai-agents", "pydantic-ai")
    assert {name: hint for name, hint in hints.items() if name in python_sdks} == {
        name: f"pip install 'misfit-bench[{name}]'" for name in python_sdks
    }
    # The TypeScript SDKs' adapters import no SDK (bench.node runs it), so they need no extra.
    assert {name: hint for name, hint in hints.items() if name not in python_sdks} in (
        {}, {"ai": "pip install 'misfit-bench'", "openai-agents-js": "pip install 'misfit-bench'"},
    )  # fmt: skip


def test_run_without_names_skips_a_missing_sdk_with_its_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "agentmaker", "adapters.agentmaker.adapter")
    warnings: list[str] = []
    adapters = load_adapters((), warnings.append)
    assert "agentmaker" not in adapters and "pydantic-ai" in adapters
    assert any("agentmaker" in w and "pip install 'misfit-bench[agentmaker]'" in w for w in warnings)


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(registry.UnknownAdapter, match=r"known: agentmaker, (ai, )?claude-agent-sdk"):
        registry.load("no-such-sdk")


class RaisingAdapter:
    """What a third-party entry point can name: a class whose constructor raises."""

    def __init__(self) -> None:
        raise RuntimeError("OPENAI_API_KEY must be set\n(and more detail on a second line)")


class NotAnAdapter:
    """A class that constructs but is no ``bench.sdk.adapter.Adapter``."""


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "misfit_echo:NoSuchAdapter",
            "'misfit_echo:NoSuchAdapter': module misfit_echo has no attribute 'NoSuchAdapter'",
        ),
        ("tests.sdk.test_registry:RaisingAdapter", "could not be built: RuntimeError: OPENAI_API_KEY must be set"),
        ("tests.sdk.test_registry:NotAnAdapter", "is not a bench.sdk.adapter.Adapter (got NotAnAdapter)"),
        (
            "tests.raising_import:Adapter",
            "module tests.raising_import failed to import: RuntimeError: the adapter's settings file is missing",
        ),
    ],
    ids=["missing-attribute", "constructor-raises", "not-an-adapter", "module-raises"],
)
def test_a_broken_third_party_entry_point_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, target: str, expected: str
) -> None:
    """A misnamed entry point (tests/plugin's module, a wrong attribute) or one whose class does
    not construct is the registry's own error with one line naming the entry point, in the
    library and through the CLI (exit 2, no traceback)."""
    from importlib.metadata import EntryPoint

    from typer.testing import CliRunner

    from bench.cli import app

    broken = EntryPoint(name="broken", value=target, group=registry.GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    with pytest.raises(registry.AdapterUnavailable) as raised:
        registry.load("broken")
    message = str(raised.value)
    assert message.startswith("the broken adapter's entry point ") and expected in message
    assert "\n" not in message
    result = CliRunner().invoke(app, ["releases", "list", "broken"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {message}"]
