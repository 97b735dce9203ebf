"""``bench serve`` keeps a bounded number of runs, each with a bounded script (issue 26, point 4):
it once kept every run posted, whatever its length (20 posts of a 110,000-step script: 227 MB
to 1.3 GB; 30,000 posts of 500 steps: 7.6 GB)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from bench.provider.server import MAX_SERVE_RUNS
from bench.scenarios.behaviours import MAX_SCRIPT_STEPS, MAX_TURN_CALLS
from tests.protocol_clients import chat_kwargs


@pytest.fixture
def served() -> Iterator[LocalProvider]:
    """A provider of this test's own: the session's has runs of other tests open."""
    with LocalProvider() as provider:
        yield provider


def test_a_posted_script_past_the_limit_is_a_413_and_never_built(
    served: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps are counted before any is parsed (building 110,000 of them was the cost), the
    answer is the API's 413 shape naming the field, and no run is opened; at the limit, one is."""
    too_long = ["valid", "malformed"] * (MAX_SCRIPT_STEPS // 2) + ["valid"]
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        with monkeypatch.context() as patched:
            patched.setattr("bench.provider.admin.Script.parse", _never_called)
            refused = client.post("/runs", json={"task": "person", "script": too_long, "run_id": "long"})
        assert refused.status_code == 413, refused.text
        assert refused.json() == {
            "error": {
                "message": f"field script: the script has {MAX_SCRIPT_STEPS + 1:,} steps (a parallel turn's "
                f"calls counted one each); a script may have at most {MAX_SCRIPT_STEPS:,}",
                "type": "invalid_request_error",
                "param": "script",
                "code": "request_too_large",
            }
        }
        assert "long" not in served.app.runs
        opened = client.post("/runs", json={"task": "person", "script": too_long[:-1], "run_id": "long"})
        assert opened.status_code == 201, opened.text
        assert len(served.app.runs["long"].script.steps) == MAX_SCRIPT_STEPS


def test_a_parallel_turn_counts_as_its_calls(served: LocalProvider) -> None:
    """A turn of 16 calls costs 16 steps to build and keep: 63 of them (1,008) are a 413 too,
    in the long form as in the short one."""
    short = {"parallel": [{"tool_call": {"order_id": f"ORD-{n}"}} for n in range(MAX_TURN_CALLS)]}
    long = {"kind": "parallel", "calls": short["parallel"]}
    turns = MAX_SCRIPT_STEPS // MAX_TURN_CALLS
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        for turn in (short, long):
            refused = client.post("/runs", json={"task": "order_lookup", "script": [turn] * (turns + 1)})
            assert refused.status_code == 413, refused.text
            assert f"the script has {(turns + 1) * MAX_TURN_CALLS:,} steps" in refused.json()["error"]["message"]
            opened = client.post("/runs", json={"task": "order_lookup", "script": [turn] * turns})
            assert opened.status_code == 201, opened.text


def _never_called(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a script past the limit was parsed")


def test_runs_past_the_cap_are_a_429_until_a_client_closes_one(served: LocalProvider) -> None:
    """With MAX_SERVE_RUNS runs open the next post is a 429 in the API's error shape and opens
    nothing; an open run is never dropped for it (every one still serves), and a closed run is
    dropped at once (its ledger gone), which makes room for the next post."""
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        ids = []
        for index in range(MAX_SERVE_RUNS):
            response = client.post("/runs", json={"task": "person", "script": ["valid"], "run_id": f"r{index}"})
            assert response.status_code == 201, response.text
            ids.append(response.json()["run_id"])
        refused = client.post("/runs", json={"task": "person", "script": ["valid"], "run_id": "one-more"})
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["type"] == "requests" and error["code"] == "too_many_runs" and error["param"] is None
        assert f"{MAX_SERVE_RUNS:,} runs are open" in error["message"] and "DELETE /runs/ID" in error["message"]
        assert "one-more" not in served.app.runs and len(served.app.runs) == MAX_SERVE_RUNS
        assert client.get("/health").json()["runs"] == MAX_SERVE_RUNS
        for run_id in (ids[0], ids[-1]):  # the oldest and the newest still serve
            answered = client.post(f"/runs/{run_id}/v1/chat/completions", json=chat_kwargs(Mode.NATIVE))
            assert answered.status_code == 200, answered.text
        assert client.delete(f"/runs/{ids[0]}").json() == {"run_id": ids[0], "closed": True}
        assert client.get(f"/runs/{ids[0]}/ledger").status_code == 404
        reopened = client.post("/runs", json={"task": "person", "script": ["valid"], "run_id": "one-more"})
        assert reopened.status_code == 201, reopened.text
        assert len(served.app.runs) == MAX_SERVE_RUNS
        assert client.post("/runs", json={"scenario": "valid"}).status_code == 429
