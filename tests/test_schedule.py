"""tests/schedule.py: on pytest-xdist workers, the serial files run after every other test, a file
per worker, and the tests that load the CPU last, on one worker, in one session (issue 38)."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

import pytest

from tests.paths import REPO
from tests.schedule import PhasedScheduling, phase_of

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

from tests.schedule import PhasedScheduling


def phase(nodeid):
    return 2 if "alone" in nodeid else 1 if "serial" in nodeid else 0


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "load":
        return PhasedScheduling(config, log, phase=phase)
"""

BODY = """
import os
import time

import pytest


@pytest.mark.parametrize("n", range({count}))
def test_it(n, worker_id, request):
    with open(os.environ["EVENTS_LOG"], "a") as log:
        log.write(f"start {{request.node.nodeid}} {{worker_id}}\\n")
    time.sleep(0.05)
    with open(os.environ["EVENTS_LOG"], "a") as log:
        log.write(f"end {{request.node.nodeid}} {{worker_id}}\\n")
"""

# collected first, so that xdist's own ``load`` would start them first
FILES = {"test_a_alone": 2, "test_b_serial": 3, "test_c_serial": 3, "test_d": 6, "test_e": 6, "test_f": 6}


def _events(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[pytest.RunResult, list[tuple[str, str, str]]]:
    log = pytester.path / "events.log"
    monkeypatch.setenv("EVENTS_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**{name: BODY.format(count=count) for name, count in FILES.items()})
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", *args)
    events = [tuple(line.split()) for line in log.read_text().splitlines()]
    return result, events  # type: ignore[return-value]


@pytest.mark.slow  # a pytest session of two workers, about 10 s
def test_serial_files_run_after_the_rest_and_the_alone_tests_last_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, events = _events(pytester, monkeypatch)
    result.assert_outcomes(passed=sum(FILES.values()))
    order = [(kind, nodeid) for kind, nodeid, _ in events]
    first_start = {nodeid: order.index(("start", nodeid)) for _, nodeid in order}
    last_end = {nodeid: order.index(("end", nodeid)) for _, nodeid in order}
    alone = [n for n in first_start if "alone" in n]
    serial = [n for n in first_start if "serial" in n]
    parallel = [n for n in first_start if n not in alone and n not in serial]
    # ALONE: after every other test has ended, on one worker
    assert min(first_start[n] for n in alone) > max(last_end[n] for n in parallel + serial)
    assert len({worker for _, nodeid, worker in events if nodeid in alone}) == 1
    # SERIAL: after every other test but the last one a worker held (one per worker)
    for nodeid in serial:
        assert sum(last_end[p] > first_start[nodeid] for p in parallel) <= 2, (nodeid, order)
    # a file on one worker; both workers used
    workers: dict[str, set[str]] = {}
    for _, nodeid, worker in events:
        workers.setdefault(nodeid.split("::")[0], set()).add(worker)
    assert all(len(used) == 1 for used in workers.values()), workers
    assert len(set().union(*workers.values())) == 2


@pytest.mark.slow
def test_another_dist_is_xdists_own(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _events(pytester, monkeypatch, "--dist", "loadfile", "-v")
    result.assert_outcomes(passed=sum(FILES.values()))
    assert "scheduling tests via LoadFileScheduling" in result.stdout.str()


def test_the_suites_own_phases() -> None:
    assert phase_of("tests/run/test_runner_under_load.py::test_x") == 2
    assert phase_of("tests/run/test_suite.py::test_x") == 1
    assert phase_of("tests/benchmarks/test_benchmarks.py::test_benchmark_runs_and_prints_its_figures[matrix]") == 0
    assert phase_of("tests/benchmarks/test_benchmarks.py::test_benchmark_runs_and_prints_its_figures[releases]") == 1
    assert phase_of("tests/run/test_classify.py::test_x") == 0


class _Config:
    """What PhasedScheduling reads of a pytest config: the workers (``--tx``), the rootdir."""

    def __init__(self, root: Path) -> None:
        self.rootpath = root

    def getvalue(self, name: str) -> object:
        return {"tx": ["2*popen"]}[name]


def test_one_default_matrix_user_first_then_the_slow_files_then_the_other_users(tmp_path: Path) -> None:
    """The first worker builds the default matrix while the other does slow files, not waiting on
    the build's lock; the other users of the matrix come after the slow files, the rest last."""
    files = {
        "test_plain.py": "def test_bad_args_default_runs_away(): pass\n",
        "test_many.py": "def test_a(): pass\n",
        "test_user1.py": "def test_a(default_run): pass\n",
        "test_user2.py": "def test_a(default_run): pass\n",
        "test_slow.py": "import pytest\n\n@pytest.mark.slow\ndef test_a(): pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    scheduler = PhasedScheduling(_Config(tmp_path), phase=lambda nodeid: 0)  # type: ignore[arg-type]
    units = OrderedDict(
        (f"0|{name}", {f"{name}::test_{i}": False for i in range(3 if name == "test_many.py" else 1)}) for name in files
    )
    order = [scope.split("|")[1] for scope in scheduler._longest_first(units)]
    assert order == ["test_user1.py", "test_slow.py", "test_user2.py", "test_many.py", "test_plain.py"]
