"""Where the repository and the tests' data are, for a test file at any depth under tests/.

The test files mirror bench/ (tests/<package>/test_<module>.py), so a path computed from a test
file's own ``__file__`` would depend on how deep it sits; these do not."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
"""Vendored run folders, recordings and wire samples (each with its README)."""
GOLDEN_DIR = TESTS / "golden"
"""Committed reference outputs, byte for byte."""
WIRE_SAMPLES = FIXTURES / "wire-samples"
