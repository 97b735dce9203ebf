"""The adapter tests' one fixture: ``run_cell``, a :class:`tests.cell_runner.CellRunner` on the
session's provider (tests/conftest.py)."""

from __future__ import annotations

import pytest

from bench.provider import LocalProvider
from tests.cell_runner import CellRunner


@pytest.fixture(scope="session")
def run_cell(provider: LocalProvider) -> CellRunner:
    return CellRunner(provider)
