"""Issue 48: the same cell run twice gives the same row. A slice of the default matrix (every
built-in SDK, the scenarios whose ids travel back: a parallel tool turn, a retry after malformed
output, a refusal) runs twice; every runs column but the wall-clock ones and the run's own ids
must be equal, billed and reported tokens included, and so must every request's tokens
(docs/ci.md, "Token noise")."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from bench.results.golden import BUILTIN_SDKS
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

pytestmark = pytest.mark.slow  # two slices of the default matrix, about 40 s on two loaded cores

SCENARIOS = frozenset({"tool_parallel_ok", "malformed_then_valid", "refusal_then_valid"})
KEY = ["sdk", "mode", "variant", "protocol", "stream", "scenario", "rep"]
WALL_CLOCK = {"started_at", "latency_ms", "retry_wait_ms"}
"""Wall-clock columns; ``details.cli_init_ms`` too, and the timestamps inside a message."""
RUN_IDS = {"run_id", "suite_id"}
"""Which run a row came from (``cell_id`` is derived from the cell: it is compared)."""
PER_RUN = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"  # a timestamp
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a uuid (pydantic-ai's run ids: uuid7)
    r"|127\.0\.0\.1:\d+"  # the provider's port
)
"""What of the run an exception message may quote: pydantic-ai's quotes the model response, with
its timestamp, its ``run_id`` and ``conversation_id`` and the provider's URL."""


def _run(root: Path) -> dict:
    run_suite(SuiteRequest(sdks=BUILTIN_SDKS, filters=Filters(scenarios=SCENARIOS), results_root=root))
    directory = latest_run(root)
    assert directory is not None
    return load_run(directory)


def _comparable(runs: pd.DataFrame) -> pd.DataFrame:
    frame = runs.drop(columns=[*WALL_CLOCK, *RUN_IDS]).sort_values(KEY).reset_index(drop=True)
    frame["exception_message"] = frame["exception_message"].map(
        lambda text: PER_RUN.sub("<per-run>", text) if isinstance(text, str) else text
    )
    frame["details"] = frame["details"].map(
        lambda details: (
            {k: v for k, v in details.items() if k != "cli_init_ms"} if isinstance(details, dict) else details
        )
    )
    return frame.astype(object).map(_text)


def _text(value: object) -> str:
    """A cell as text, nulls of every kind alike (pandas' NA is never equal to itself)."""
    if getattr(value, "ndim", 0) == 1:  # a list column (exception_mro) reads back as an array
        value = list(value)  # type: ignore[call-overload]
    missing = value is None or (not isinstance(value, dict | list) and bool(pd.isna(value)))  # type: ignore[call-overload]
    return "<null>" if missing else str(value)


def test_a_slice_run_twice_gives_equal_rows_and_tokens(tmp_path: Path) -> None:
    first, second = _run(tmp_path / "first"), _run(tmp_path / "second")
    ours, theirs = _comparable(first["runs"]), _comparable(second["runs"])
    assert len(ours) == len(theirs) and set(first["runs"].sdk) == set(BUILTIN_SDKS)
    changed = {
        column: ours[KEY].assign(first=ours[column], second=theirs[column])[ours[column] != theirs[column]]
        for column in ours.columns
        if (ours[column] != theirs[column]).any()
    }
    assert not changed, "\n".join(
        f"{column}:\n{rows.head(5).to_string(max_colwidth=80)}" for column, rows in changed.items()
    )
    tokens = ["cell_id", "attempt", "input_tokens", "output_tokens", "request_bytes"]
    requests = [run["attempts"][tokens].sort_values(tokens[:2]).reset_index(drop=True) for run in (first, second)]
    pd.testing.assert_frame_equal(requests[0], requests[1])
