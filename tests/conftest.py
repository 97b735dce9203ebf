"""Shared fixtures: one provider per test session, served on loopback like in a real run; the
paths of the repository and the tests' data are in tests/paths.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.provider import LocalProvider
from tests.paths import REPO, WIRE_SAMPLES
from tests.schedule import ALONE, SERIAL

# --- the test plugin SDK (openai-parse), registered for the tests only -------------------------
# tests/plugin holds misfit_echo.py and an installed-distribution folder
# (misfit_bench_echo_plugin-0.1.0.dist-info: METADATA, entry_points.txt). With the folder on
# sys.path (this process) and PYTHONPATH (every subprocess a test starts: `bench run` workers,
# CLI subprocesses), importlib.metadata finds the `openai-parse` entry point inside the test run
# only, so a user's `bench run` never plans it (issue 25). tests/test_test_plugin.py holds both.
TEST_PLUGIN = REPO / "tests" / "plugin"
if str(TEST_PLUGIN) not in sys.path:
    sys.path.insert(0, str(TEST_PLUGIN))
os.environ["PYTHONPATH"] = os.pathsep.join(
    dict.fromkeys([str(TEST_PLUGIN), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
)
# --- end of the test plugin block ---------------------------------------------------------------

# The cell cache is off in every test (and every `bench run` a test starts): a test that changes
# an adapter's behaviour in-process, or counts what a run computed, must see the cell computed.
# tests/run/test_cache.py turns it on, in a folder of its own, where the cache is what is tested.
os.environ["MISFIT_BENCH_CELL_CACHE"] = "off"


@pytest.fixture(scope="session")
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


@pytest.fixture(scope="session")
def wire_samples() -> Path:
    """Real API recordings vendored with the tests (provenance in the folder's README)."""
    return WIRE_SAMPLES


@pytest.fixture(scope="session")
def default_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict:
    """The full default matrix of the five built-in adapters, run once per test session
    (about two and a half minutes on two cores), by whichever pytest-xdist worker asks first
    (tests/once.py), and shared by the tests that judge it: every test that asks for it is marked
    ``slow`` (:func:`pytest_collection_modifyitems`)."""
    from bench.results.golden import BUILTIN_SDKS
    from bench.results.store import latest_run, load_run
    from bench.run.suite import SuiteRequest, run_suite
    from tests.once import built_once

    def build(out: Path) -> None:
        run_suite(SuiteRequest(sdks=BUILTIN_SDKS, results_root=out))

    directory = latest_run(built_once(tmp_path_factory, worker_id, "default-run", build))
    assert directory is not None
    return load_run(directory)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under pytest-xdist's default ``--dist load``, the suite's phases in one session
    (tests/schedule.py): every other test on all workers, then the ``SERIAL`` files, then the
    ``ALONE`` tests on one worker. Another ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "load":
        return None
    from tests.schedule import PhasedScheduling

    return PhasedScheduling(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a slow fixture is slow, marked or not: :func:`default_run` (the whole
    default matrix) wherever it is, and the fixtures a module names in ``SLOW_FIXTURES`` (a run or
    a project built once for the module's tests) in that module, so ``make test-fast`` never
    builds them."""
    for item in items:
        module = getattr(item, "module", None)
        declared = getattr(module, "SLOW_FIXTURES", ())
        if unknown := [name for name in declared if not hasattr(module, name)]:
            raise pytest.UsageError(f"{item.path}: SLOW_FIXTURES names no fixture of the module: {unknown}")
        fixtures = set(getattr(item, "fixturenames", ()))
        if {"default_run", *declared} & fixtures:
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
        if item.nodeid.startswith(ALONE):
            item.add_marker(pytest.mark.alone)
