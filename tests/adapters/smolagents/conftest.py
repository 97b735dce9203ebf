"""smolagents' cells through the runner's path, without its entry point: until the checkout is
reinstalled (``pip install -e .``) the installed metadata may not name ``smolagents``, so the
runner here is handed the adapter itself instead of loading it from the registry."""

from __future__ import annotations

from adapters.smolagents.adapter import SmolagentsAdapter
from bench.provider import LocalProvider
from bench.sdk.adapter import Adapter, Cell
from tests.cell_runner import CellRunner


class SmolagentsRunner(CellRunner):
    """A :class:`CellRunner` that drives one given smolagents adapter (a shorter time limit, in
    the time-limit test)."""

    def __init__(self, provider: LocalProvider, adapter: SmolagentsAdapter) -> None:
        super().__init__(provider)
        self.smolagents = adapter

    def adapter(self, cell: Cell) -> Adapter:
        assert cell.sdk == self.smolagents.name, cell
        return self.smolagents
