"""Cassette folders recorded once per session (tests/cassette_recorder.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.core.vocabulary import Mode, Protocol
from tests.cassette_recorder import COMBOS, REFUSAL, record


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[Any, bytes | str]]]:
    """Every protocol x mode x stream answered validly, recorded once."""
    folder = tmp_path_factory.mktemp("cassettes")
    yield folder, record(folder, ["valid"], COMBOS)


@pytest.fixture(scope="session")
def with_refusals_and_errors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The valid answers, plus one recorded refusal and one recorded 429 per protocol."""
    folder = tmp_path_factory.mktemp("cassettes-more")
    record(folder, ["valid"], COMBOS)
    once = [(protocol, Mode.PROMPTED, False) for protocol in Protocol]
    record(folder, [{"refusal": REFUSAL}], once)
    record(folder, [{"http_error": {"status": 429, "retry_after_s": 0}}], once)
    return folder
