"""A run reached by a route that is not its id (a runner slot's, bench.run.runner.Slot): one URL
serves a slot's runs one after another, each with its own id and ledger, and nothing sent on a
route reaches a run it was not meant for."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bench.core.vocabulary import Mode
from bench.provider import LocalProvider
from tests.protocol_clients import chat_kwargs


@pytest.fixture
def served() -> Iterator[LocalProvider]:
    """A provider of this test's own: the session's has runs of other tests open."""
    with LocalProvider() as provider:
        yield provider


def _post(provider: LocalProvider, route: str) -> httpx.Response:
    url = f"{provider.base_url}/runs/{route}/v1/chat/completions"
    return httpx.post(url, json=chat_kwargs(Mode.NATIVE), headers={"Authorization": "Bearer x"}, timeout=30)


def test_one_route_reaches_its_runs_one_after_another_each_with_its_own_ledger(served: LocalProvider) -> None:
    first = served.open_script("person", ["valid"], route="slot-a")
    assert first.endpoint.root == f"{served.base_url}/runs/slot-a"
    assert _post(served, "slot-a").status_code == 200
    with pytest.raises(ValueError, match="'slot-a' is already open"):
        served.open_script("person", ["valid"], route="slot-a")
    first.close()
    second = served.open_script("person", ["malformed"], route="slot-a")
    first.close()  # the previous handle, closed again, leaves the route's next run open
    assert "slot-a" in served.app.runs
    assert _post(served, "slot-a").status_code == 200
    assert first.run_id != second.run_id
    assert [(a.run_id, a.behaviour, a.path) for a in first.attempts] == [
        (first.run_id, "valid", "/runs/slot-a/v1/chat/completions")
    ]
    assert [(a.run_id, a.behaviour.split(":")[0]) for a in second.attempts] == [(second.run_id, "malformed")]
    second.close()
    stray = _post(served, "slot-a")  # a request sent after the route's last run closed
    assert stray.status_code == 404, stray.text
    assert "unknown run 'slot-a'" in stray.json()["error"]["message"]
    assert len(first.attempts) == 1 and len(second.attempts) == 1
