"""Which tests run when, on pytest-xdist workers: the suite's three phases in one session.

Most tests run on every worker at once. The ``SERIAL`` files signal, kill or count processes,
start a local Ray or build release environments: they run after all the others, a whole file per
worker. The ``ALONE`` tests load the CPU themselves: they run last, on one worker, the others shut
down first. :class:`PhasedScheduling` keeps that order inside one ``pytest -n N`` session
(tests/conftest.py installs it for xdist's default ``--dist load``), so the README's test command,
``make test`` and ``.ci/run`` are one session: collected once, the default matrix built once.

Every phase hands out whole files (xdist's ``loadfile``): a module-scoped fixture (a small run a
module builds for its tests, ``SLOW_FIXTURES``) is built on one worker, not on each. A phase
starts when every worker holds at most its last test of the one before (an xdist worker keeps
its last test until it is sent more or told to stop, so that test runs at the start of the next
phase); the ``ALONE`` phase starts only when the other workers have finished and left. Within a
phase the files likely to take longest go first (:meth:`PhasedScheduling._longest_first`), so
that no worker is left alone with a long file at the end.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

ALONE = (
    # busy loops beside the cells: on their own, so they load no other test's clock
    "tests/benchmarks/test_benchmarks.py::test_benchmark_runs_and_prints_its_figures[under_load]",
    "tests/releases/test_pool_starved_worker.py",
    "tests/run/test_runner_under_load.py",
)
SERIAL = (
    "tests/adapters/claude_agent_sdk/",  # the Claude CLI's processes are counted after each cell
    "tests/cli/test_releases.py",  # release environments every release test shares
    "tests/cli/test_signals.py",
    "tests/run/test_cluster.py",  # a local Ray of two CPUs; a worker found by its process title, machine-wide
    "tests/run/test_cluster_nodes.py",  # a Ray of two nodes, one of them removed mid-run
    "tests/run/test_rerun_atomic.py",
    "tests/run/test_runner.py",
    "tests/run/test_runs.py",
    "tests/run/test_suite.py",  # no process outlives a run
    "tests/test_misuse.py",
    "tests/benchmarks/test_benchmarks.py::test_benchmark_runs_and_prints_its_figures[releases]",
    *ALONE,
)
"""Test files (or tests) marked ``serial`` by tests/conftest.py: run after every other test, a
whole file per worker; the ``ALONE`` ones (marked ``alone`` too) last, on one worker."""

PHASES = ("parallel", "serial", "alone")


def phase_of(nodeid: str) -> int:
    """0 for most tests, 1 for the ``SERIAL`` ones, 2 for the ``ALONE`` ones (an index of PHASES)."""
    if nodeid.startswith(ALONE):
        return 2
    return 1 if nodeid.startswith(SERIAL) else 0


class PhasedScheduling(LoadScopeScheduling):
    """xdist's file-at-a-time scheduling, in the three phases of :data:`PHASES`, each after the
    one before. A work unit is a phase and a file (``"1|tests/run/test_suite.py"``), so a file
    whose tests fall in two phases is two units."""

    def __init__(
        self, config: pytest.Config, log: Producer | None = None, phase: Callable[[str], int] = phase_of
    ) -> None:
        super().__init__(config, log)
        self.phase_of = phase
        self.waiting: list[OrderedDict[str, dict[str, bool]]] = []  # the phases not started, in order
        self.phase = 0

    def _split_scope(self, nodeid: str) -> str:
        return f"{self.phase_of(nodeid)}|{nodeid.split('::', 1)[0]}"

    @property
    def tests_finished(self) -> bool:
        return not self.waiting and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return bool(self.waiting) or super().has_pending

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        phases: list[OrderedDict[str, dict[str, bool]]] = [OrderedDict() for _ in PHASES]
        for nodeid in self.collection:
            scope = self._split_scope(nodeid)
            phases[self.phase_of(nodeid)].setdefault(scope, {})[nodeid] = False
        self.workqueue, *self.waiting = (self._longest_first(phase) for phase in phases)
        self._start_next_phase()
        for node in self.nodes:
            self._reschedule(node)

    def _longest_first(self, units: OrderedDict[str, dict[str, bool]]) -> OrderedDict[str, dict[str, bool]]:
        """The files likely to take longest first, so that the last ones handed out are short:
        one file that uses the default matrix (its build starts at once, on one worker), then
        those with slow tests or fixtures, while the other workers do the slow files, then the
        other users of the default matrix (built by then: no worker waits on its lock), then the
        rest by their number of tests. Read from the files' text: this process collects nothing."""

        def weight(scope: str) -> int:
            try:
                text = (self.config.rootpath / scope.split("|", 1)[1]).read_text(encoding="utf-8")
            except OSError:
                return 3
            if re.search(r"\bdefault_run\b", text):  # the fixture's name, not a test's ("..._default_runs_...")
                return 2
            return 1 if ("mark.slow" in text or "SLOW_FIXTURES" in text) else 3

        weights = {scope: weight(scope) for scope in units}
        builder = next((scope for scope in units if weights[scope] == 2), None)
        if builder is not None:
            weights[builder] = 0
        return OrderedDict(sorted(units.items(), key=lambda item: (weights[item[0]], -len(item[1]))))

    def remove_node(self, node: WorkerController) -> str | None:
        crashed = super().remove_node(node)
        for other in self.nodes:  # the ALONE phase waits for the other workers to leave
            self._reschedule(other)
        return crashed

    def _start_next_phase(self) -> None:
        """Move on to the next phase that has tests once this one is handed out and each worker
        holds at most its last test of it; ALONE waits until one worker is left."""
        while not self.workqueue and self.waiting:
            if any(self._pending_of(work) > 1 for work in self.assigned_work.values()):
                return
            if self.phase + 1 == PHASES.index("alone") and self.waiting[0]:
                _kept, *others = self.nodes
                for other in others:
                    if not other.shutting_down:
                        other.shutdown()
                if others:
                    return
            self.workqueue = self.waiting.pop(0)
            self.phase += 1

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        before = self.phase
        self._start_next_phase()
        if self.phase != before:
            for other in self.nodes:
                if other is not node:
                    self._reschedule(other)
        if not self.workqueue:
            if not self.waiting:
                node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 2:
            return
        self._assign_work_unit(node)
