"""Shared fixtures: one provider per test session, served on loopback like in a real run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.provider import LocalProvider

REPO = Path(__file__).resolve().parent.parent
WIRE_SAMPLES = REPO.parent / "shared" / "wire-samples"


@pytest.fixture(scope="session")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@pytest.fixture(scope="session")
def wire_samples() -> Path:
    if not WIRE_SAMPLES.is_dir():
        pytest.fail(f"wire samples not found at {WIRE_SAMPLES}: tests need ../shared beside the repo")
    return WIRE_SAMPLES
