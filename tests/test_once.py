"""tests/once.py: a session fixture's product is built once per session across pytest-xdist
workers (the default matrix was built by each worker, about seven minutes of CI each)."""

from __future__ import annotations

import os

import pytest

from tests.paths import REPO

pytest_plugins = ["pytester"]

WORKERS = """
import os
import time

import pytest

from tests.once import built_once


@pytest.fixture(scope="session")
def product(tmp_path_factory, worker_id):
    def build(folder):
        with open(os.environ["BUILDS_LOG"], "a") as log:
            log.write(worker_id + "\\n")
        time.sleep(1)  # the other worker asks while this one builds
        (folder / "made").write_text(worker_id)

    return built_once(tmp_path_factory, worker_id, "product", build)


@pytest.mark.parametrize("n", range(8))
def test_uses_it(product, n):
    assert (product / "made").exists()
"""


@pytest.mark.slow  # a pytest session of two workers: 16.5 s at load 2.9
def test_two_workers_build_a_session_product_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    log = tmp_path_factory.mktemp("builds") / "builds.log"
    monkeypatch.setenv("BUILDS_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_workers=WORKERS)
    result = pytester.runpytest_subprocess("-n", "2", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    assert len({line.split()[0] for line in result.outlines if "PASSED" in line}) == 2  # both workers used it
    assert len(log.read_text().split()) == 1, log.read_text()  # and one built it
