"""An SDK that cannot import what it needs at call time (issue 44.2): the cell is the SDK's
``unsupported``, with its reason and an install hint said once in the summary, exit 0; the same
import failing in our adapter code stays a harness error (exit 3). Decided by the traceback's
innermost frame, not by the exception's class.

The SDK is a test one, installed for these tests only: a folder put on ``sys.path`` holding the
``lazysdk`` distribution (its call imports an optional module that is not there) and a plugin
adapter registered by entry point, as a third-party adapter is (tests/plugin)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run, read_table
from bench.sdk.failures import sdk_import_failure

SDK = """
def structured(prompt):
    \"\"\"The SDK's call: its optional dependency is imported when first used.\"\"\"
    import lazysdk_optional_extra  # noqa: F401
    raise AssertionError("unreachable: the extra is never installed")
"""

ADAPTER = """
from typing import ClassVar

import lazysdk

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.sdk.adapter import Adapter, AdapterResult, Support, SupportTable


class LazyAdapter(Adapter):
    name: ClassVar[str] = "lazy-sdk"
    distribution: ClassVar[str] = "lazysdk"
    support: ClassVar[SupportTable] = {
        (Mode.NATIVE, Protocol.CHAT, Variant.DEFAULT): Support.builtin("lazysdk.structured"),
        (Mode.NATIVE, Protocol.CHAT, Variant.HARDENED): Support.builtin("our own import, which fails"),
    }

    async def run_cell(self, cell, task, endpoint):
        if cell.variant == Variant.HARDENED:
            import misfit_lazy_missing_helper  # noqa: F401 - the adapter's own import: our bug
        try:
            return AdapterResult(output=lazysdk.structured(task.prompt))
        except Exception as error:  # the SDK's own: recorded, not judged
            return AdapterResult(exception=error)
"""


def _dist_info(site: Path, name: str, files: dict[str, str]) -> None:
    info = site / f"{name}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n", encoding="utf-8")
    for file, text in files.items():
        (info / file).write_text(text, encoding="utf-8")


@pytest.fixture
def lazy_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    (site / "lazysdk").mkdir(parents=True)
    (site / "lazysdk" / "__init__.py").write_text(textwrap.dedent(SDK), encoding="utf-8")
    _dist_info(site, "lazysdk", {"top_level.txt": "lazysdk\n"})
    (site / "misfit_lazy.py").write_text(textwrap.dedent(ADAPTER), encoding="utf-8")
    entry = "[misfit_bench.adapters]\nlazy-sdk = misfit_lazy:LazyAdapter\n"
    _dist_info(site, "misfit_bench_lazy_plugin", {"entry_points.txt": entry, "top_level.txt": "misfit_lazy\n"})
    monkeypatch.syspath_prepend(str(site))
    return tmp_path / "results"


@pytest.mark.slow
def test_an_sdk_import_at_call_time_is_unsupported_with_the_hint(lazy_sdk: Path) -> None:
    args = ["run", "--sdk", "lazy-sdk", "--scenario", "valid", "--scenario", "malformed_then_valid", "--procs", "1"]
    result = CliRunner().invoke(app, [*args, "--variant", "default", "--out", str(lazy_sdk)])
    assert result.exit_code == 0, result.output
    runs = read_table(latest_run(lazy_sdk), "runs").to_pandas()
    assert list(runs["outcome"]) == ["unsupported", "unsupported"]
    assert set(runs["exception_type"]) == {"builtins.ModuleNotFoundError"}
    said = (
        "No module named 'lazysdk_optional_extra' (install module 'lazysdk_optional_extra' beside lazysdk "
        "(its extra that brings it, or pip install lazysdk-optional-extra))"
    )
    assert set(runs["exception_message"]) == {said}
    assert result.stdout.count(f"unsupported: lazy-sdk: {said} x 2 cells\n") == 1, result.stdout
    assert "harness errors" not in result.stderr


def test_the_same_import_in_our_adapter_stays_a_harness_error(lazy_sdk: Path) -> None:
    args = ["run", "--sdk", "lazy-sdk", "--scenario", "valid", "--variant", "hardened", "--procs", "1"]
    result = CliRunner().invoke(app, [*args, "--out", str(lazy_sdk)])
    assert result.exit_code == 3, result.output
    runs = read_table(latest_run(lazy_sdk), "runs").to_pandas()
    assert list(runs["outcome"]) == ["harness_error"]
    assert "unsupported: lazy-sdk" not in result.stdout


def test_decided_by_the_innermost_frame_not_the_class() -> None:
    """An ImportError raised by our code, or by a module that is no installed distribution, is
    not an SDK's; the class alone decides nothing."""
    try:
        import misfit_not_installed_anywhere  # noqa: F401
    except ImportError as error:
        assert sdk_import_failure(error) is None  # this test module: no installed distribution
    try:
        from pydantic import not_a_name_of_pydantic  # type: ignore[attr-defined]  # noqa: F401
    except ImportError as error:
        assert sdk_import_failure(error) is None  # raised at this frame, not inside pydantic
    assert sdk_import_failure(RuntimeError("No module named 'x'")) is None


def test_a_release_worker_decides_it_where_the_traceback_is(lazy_sdk: Path) -> None:
    """In a release worker the exception crosses by name and message: the worker decides, from
    the traceback it still has, and the parent's classification reads that."""
    import lazysdk  # the test SDK, on sys.path through the fixture

    from bench.releases.protocol import decode_result, encode_result
    from bench.run.accounting import summarise
    from bench.run.classify import Driven, decide
    from bench.scenarios.tasks import get_task
    from bench.sdk.adapter import AdapterResult

    task = get_task("person")
    try:
        lazysdk.structured("hi")
    except ImportError as error:
        raised = error
    crossed = decode_result(encode_result(AdapterResult(exception=raised), task, "misfit_lazy"), task)
    verdict = decide(Driven(result=crossed), task, summarise([], 0), None)
    assert (verdict.outcome, verdict.exception_type) == ("unsupported", "builtins.ModuleNotFoundError")
    ours = decode_result(encode_result(AdapterResult(exception=raised), task, "lazysdk"), task)
    assert decide(Driven(result=ours), task, summarise([], 0), None).outcome == "harness_error"


def test_the_summary_names_no_sdk_for_the_cells_its_support_table_marks_unsupported(tmp_path: Path) -> None:
    """A cell unsupported by its adapter's table carries no message (null, NaN once read back):
    the once-per-SDK line is for an SDK that could not import, never ``agentmaker: nan``."""
    from typer.testing import CliRunner

    from bench.cli import app

    args = ["run", "--sdk", "agentmaker", "--scenario", "valid", "--protocol", "openai-chat", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--results", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "cells: " in result.stdout and "unsupported" in result.stdout  # the table's tool cells
    assert "unsupported: agentmaker:" not in result.output and "nan" not in result.output


def test_bench_pick_on_a_users_type_decides_it_the_same_way(lazy_sdk: Path, tmp_path: Path) -> None:
    """``bench pick --type`` runs the SDK's cells on the user's type through the same rule: the
    SDK's missing import is its cell's ``unsupported`` with the hint, said once, never exit 3."""
    from tests.ticket_agent import TICKET_MODEL

    (tmp_path / "tickets.py").write_text(TICKET_MODEL, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        args = ["pick", "--type", "tickets:Ticket", "--sdk", "lazy-sdk", "--scenario", "valid", "--no-progress"]
        result = CliRunner().invoke(app, [*args, "--results", str(lazy_sdk)])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tickets", None)
    assert result.exit_code == 0 and "harness errors" not in result.stderr, result.output
    assert "Unsupported throughout, not ranked (see `bench list`): lazy-sdk/native/default." in result.stdout
    runs = read_table(latest_run(lazy_sdk), "runs").to_pandas()
    assert list(runs["outcome"]) == ["unsupported"] and "--type" not in runs["exception_message"][0]
    assert set(runs["exception_type"]) == {"builtins.ModuleNotFoundError"}
    assert "No module named 'lazysdk_optional_extra' (install module" in runs["exception_message"][0]
