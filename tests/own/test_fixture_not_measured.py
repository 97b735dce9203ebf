"""The ``misfit`` fixture on a fault family that was not measured (issue 25, point 1): a rate or
count that reads ``wrong`` raises, naming the family and the reason, where ``wrong`` could not
be derived for the agent or its planned cells never ran; what was measured still reads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bench.fixture.pytest_plugin import MisfitResult, NoCellRan
from bench.own.derive import NO_MEANING


def _result(cells: list[tuple[str, str, str]], not_measured: dict[str, dict[str, str]]) -> MisfitResult:
    rows = [{"agent": "billing", "scenario": s, "fault": f, "outcome": o, "note": "because"} for s, f, o in cells]
    return MisfitResult(pd.DataFrame(rows), Path("."), not_measured)


def test_a_rate_of_wrong_raises_when_wrong_was_not_measured() -> None:
    """The fixture: ``rate("wrong")`` passing with nothing measured is what issue 25 found."""
    cells = [("valid", "none", "ok"), ("wrong_persistent", "wrong", "unsupported")]
    gaps = {"billing": {"wrong": NO_MEANING}}
    for aggregate in ("rate", "count"):
        with pytest.raises(NoCellRan, match=r"wrong was not measured for agent 'billing': wrong needs a check"):
            getattr(_result(cells, gaps), aggregate)("wrong", "empty")
    with pytest.raises(NoCellRan, match=r"no wrong cell ran: all 1 were unsupported \(1 x because\)"):
        _result(cells, {}).rate("wrong")
    assert _result(cells, gaps).rate("ok") == 1  # what was measured still reads
    measured = [("valid", "none", "ok"), ("wrong_persistent", "wrong", "wrong")]
    assert _result(measured, {}).rate("wrong") == 0.5
