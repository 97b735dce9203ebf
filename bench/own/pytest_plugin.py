"""The ``misfit`` pytest fixture (registered through the ``pytest11`` entry point).

::

    def test_support_agent_survives_faults(misfit):
        result = misfit.run("myapp.agents:support", scenarios="library")
        assert result.rate("wrong", "empty") == 0
        assert result.max("model_calls") <= 4

``run()`` drives the agent through the same path as ``bench run --agent`` (the user's project is
pytest's rootdir, where their pyproject.toml is) and returns a :class:`MisfitResult`: rates,
counts, maxima and the cells as a DataFrame. A rate or a maximum remembers the cells behind it,
so a failing assertion prints a compact table of exactly those cells.

Suite and reps: ``run(scenarios=..., reps=...)``, a ``@pytest.mark.misfit(scenarios=..., reps=...)``
marker, or ``--misfit-scenarios`` / ``--misfit-reps`` on the command line (in that order of
precedence, the call's own arguments first). ``run()`` works in a plain test and in an async one
(pytest-asyncio): with an event loop already running, the run gets a thread and a loop of its
own, joined before ``run()`` returns, so no thread, loop or socket outlives the call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.plan import Filters
from bench.results import load_run
from bench.scenario import SCENARIO_DIR
from bench.vocabulary import Outcome

SHOWN = ("agent", "sdk", "scenario", "fault", "rep", "outcome", "model_calls", "exception_type")
_EXPLAINED: list[str] = []
"""Tables of the cells behind the values of the current test's failed comparisons."""


class Measure(float):
    """A number read off the cells (a rate, a maximum), which remembers the cells behind it."""

    label: str
    cells: pd.DataFrame

    def __new__(cls, value: float, label: str, cells: pd.DataFrame) -> Measure:
        measure = super().__new__(cls, value)
        measure.label, measure.cells = label, cells
        return measure

    def __repr__(self) -> str:
        return f"{float(self):g}"

    def table(self) -> str:
        if self.cells.empty:
            return f"{self.label}: no cell"
        shown = self.cells.sort_values(["agent", "scenario", "rep"])[[c for c in SHOWN if c in self.cells.columns]]
        return f"{self.label}: {len(self.cells)} cell(s)\n{shown.to_string(index=False)}"


class NoCellRan(Exception):
    """A rate, count or maximum was asked of a run in which no cell ran (every cell unsupported,
    or a filter that matched none): any number given back would let the assertion pass unmeasured."""


@dataclass
class MisfitResult:
    """One run of the user's agent: the cells (a DataFrame, one row per cell) and the run folder."""

    cells: pd.DataFrame
    directory: Path

    @property
    def supported(self) -> pd.DataFrame:
        """The cells that ran (not "not applicable"/unsupported)."""
        return self.cells[self.cells["outcome"] != Outcome.UNSUPPORTED]

    def _ran(self, asked: str) -> pd.DataFrame:
        """The cells that ran; raises :class:`NoCellRan`, naming why, when there are none."""
        ran = self.supported
        if not ran.empty:
            return ran
        if self.cells.empty:
            raise NoCellRan(f"{asked}: no cell ran: the run has no cells (the scenarios or filters matched none)")
        notes = self.cells["note"].fillna("") if "note" in self.cells.columns else pd.Series([""] * len(self.cells))
        reasons = "; ".join(f"{count} x {note or 'no reason given'}" for note, count in notes.value_counts().items())
        raise NoCellRan(f"{asked}: no cell ran: all {len(self.cells)} cell(s) were unsupported ({reasons})")

    def count(self, *outcomes: str) -> int:
        """How many of the cells that ran have one of ``outcomes``."""
        ran = self._ran(f"count({', '.join(outcomes)})")
        return int(ran["outcome"].isin(outcomes).sum())

    def rate(self, *outcomes: str) -> Measure:
        """Share of the cells that ran whose outcome is one of ``outcomes``."""
        label = f"rate({', '.join(outcomes)})"
        ran = self._ran(label)
        hit = ran[ran["outcome"].isin(outcomes)]
        return Measure(len(hit) / len(ran), f"{label} = {len(hit)}/{len(ran)}", hit)

    def max(self, column: str) -> Measure:
        """The largest value of ``column`` over the cells that ran; remembers the cells holding it.
        Raises :class:`NoCellRan` when no cell ran, and ``ValueError`` when none of them has a value."""
        ran = self._ran(f"max({column})")
        values = ran[column].dropna()
        if values.empty:
            raise ValueError(f"max({column}): none of the {len(ran)} cell(s) that ran has a value in {column}")
        peak = values.max()
        return Measure(float(peak), f"max({column}) = {peak:g}", ran[ran[column] == peak])

    def outcomes(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.cells["outcome"].value_counts().items()}


class Misfit:
    """The fixture: runs a user's agent under the scripted faults."""

    def __init__(self, request: pytest.FixtureRequest, out: Path) -> None:
        self._request = request
        self._out = out

    def run(
        self, agent: str, scenarios: str | list[str] | None = None, reps: int | None = None, **filters: Any
    ) -> MisfitResult:
        """Run ``agent`` (module:attr or a ``[[tool.bench.agents]]`` name) and read the cells back.

        ``scenarios``: a scenario file of the library by its name (``"library"``, ``"transport"``),
        a path, or scenario names and globs. ``filters``: ``faults=[...]`` and the like.
        """
        from bench.suite import SuiteRequest, run_suite

        marker = self._request.node.get_closest_marker("misfit")
        options = marker.kwargs if marker else {}
        config = self._request.config
        scenarios = scenarios or options.get("scenarios") or config.getoption("misfit_scenarios")
        reps = reps or options.get("reps") or config.getoption("misfit_reps")
        paths, names = _scenario_selection(scenarios, config.rootpath)
        request = SuiteRequest(
            agents=(agent,),
            filters=Filters(scenarios=names, **{k: frozenset(v) for k, v in filters.items()}),
            scenario_paths=paths,
            reps=int(reps),
            results_root=self._out,
            project=config.rootpath,
        )
        directory = _in_own_loop(lambda: run_suite(request))
        return MisfitResult(load_run(directory)["runs"], directory)


def _scenario_selection(value: str | list[str] | None, root: Path) -> tuple[tuple[Path, ...], frozenset[str] | None]:
    if value is None:
        return (SCENARIO_DIR,), None
    if isinstance(value, str):
        if (SCENARIO_DIR / f"{value}.yaml").is_file():
            return (SCENARIO_DIR / f"{value}.yaml",), None
        if (root / value).exists():
            return (root / value,), None
        value = [value]
    return (SCENARIO_DIR,), frozenset(value)


def _in_own_loop(call: Any) -> Any:
    """``call()`` here when no event loop runs in this thread, else in a joined thread of its own
    (``asyncio.run`` refuses to nest in a running loop, as under pytest-asyncio)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=target, name="misfit-run")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def misfit(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Misfit]:
    """Run your own agent under fault: ``misfit.run("myapp.agents:support")``."""
    out = request.config.getoption("misfit_out")
    yield Misfit(request, Path(out) if out else tmp_path / "misfit")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("misfit", "misfit-bench: your own agent under fault")
    group.addoption("--misfit-scenarios", default=None, help="Scenario file name, path or names (default: all).")
    group.addoption("--misfit-reps", type=int, default=1, help="Repetitions per cell (default 1).")
    group.addoption("--misfit-out", default=None, help="Keep the runs under this folder (default: tmp_path).")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "misfit(scenarios=None, reps=1): the misfit fixture's defaults for this test")


def pytest_runtest_setup(item: pytest.Item) -> None:
    _EXPLAINED.clear()


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> list[str] | None:
    """``assert result.rate("wrong") == 0`` explains itself with the cells behind the number."""
    measures = [side for side in (left, right) if isinstance(side, Measure)]
    if not measures:
        return None
    tables = [measure.table() for measure in measures]
    _EXPLAINED.extend(tables)
    return [f"{left!r} {op} {right!r}", *"\n".join(tables).splitlines()]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The whole table as a report section (assertion explanations are cut at 8 lines unless -vv)."""
    report = yield
    if call.when == "call" and report.failed and _EXPLAINED:
        report.sections.append(("misfit: the cells behind the failed assertion", "\n\n".join(_EXPLAINED)))
    return report
