"""``bench list`` reads an adapter's modes from :attr:`Adapter.modes`, the one definition of "the
modes at least one cell runs" (issue 29, part 3), rather than working them out again."""

from __future__ import annotations

from typing import ClassVar

from bench.core.vocabulary import Mode, Protocol, Variant
from bench.scenarios.tasks import Task
from bench.sdk.adapter import Adapter, AdapterResult, Cell, Endpoint, Support, SupportTable
from bench.sdk.listing import adapter_row


class _Stub(Adapter):
    name: ClassVar[str] = "stub"
    distribution: ClassVar[str] = "pytest"
    support: ClassVar[SupportTable] = {
        (Mode.NATIVE, Protocol.CHAT, Variant.DEFAULT): Support.builtin("native"),
        (Mode.TOOL, Protocol.CHAT, Variant.DEFAULT): Support.composed("tool"),
        (Mode.PROMPTED, Protocol.CHAT, Variant.DEFAULT): Support.unsupported("no parser"),
    }

    async def run_cell(self, cell: Cell, task: Task, endpoint: Endpoint) -> AdapterResult:
        raise AssertionError("never run")


class _NarrowerModes(_Stub):
    @property
    def modes(self) -> frozenset[Mode]:
        return frozenset({Mode.NATIVE})


def test_listing_shows_the_modes_the_adapter_runs() -> None:
    assert _Stub().modes == {Mode.NATIVE, Mode.TOOL}
    assert adapter_row("stub", "stub:Stub", _Stub(), "1.0")["modes"] == ["native", "tool"]


def test_listing_reads_adapter_modes() -> None:
    assert adapter_row("stub", "stub:Stub", _NarrowerModes(), "1.0")["modes"] == ["native"]
