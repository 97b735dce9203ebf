"""agno's entry point for the test run, whatever the harness's install says: until the checkout is
reinstalled (``pip install -e .``), the installed metadata has no ``agno`` entry point, so a
throwaway distribution folder naming ``adapters.agno:PLUGIN`` goes on ``sys.path`` and
``PYTHONPATH``, read by importlib.metadata as an install would leave it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.sdk import registry


@contextmanager
def agno_registered(folder: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        if "agno" not in registry.registrations():
            info = folder / "misfit_bench_agno_test-0.1.0.dist-info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "METADATA").write_text("Metadata-Version: 2.1\nName: misfit-bench-agno-test\nVersion: 0.1.0\n")
            (info / "entry_points.txt").write_text("[misfit_bench.adapters]\nagno = adapters.agno:PLUGIN\n")
            patch.syspath_prepend(str(folder))
            patch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
        assert "agno" in registry.registrations(), sys.path[:3]
        yield
