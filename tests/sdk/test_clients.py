"""Cells share one HTTP client per (SDK, protocol) within a run, and still never see each
other's script: the SDK client holding the run's URL prefix is built per cell, only the
transport is shared, and a connection goes back to the pool only between whole responses."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx2
import pytest

pytest.importorskip("pydantic_ai", reason="pip install 'misfit-bench[pydantic-ai]'")

from adapters.pydantic_ai.adapter import PydanticAIAdapter
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider, RunHandle
from bench.scenarios.tasks import get_task
from bench.sdk import clients
from bench.sdk.adapter import AdapterResult, Cell

ADAPTER = PydanticAIAdapter()
CHAT_TOOL = next(c for c in ADAPTER.cells() if (c.mode, c.protocol, c.variant) == (Mode.TOOL, Protocol.CHAT, "default"))


async def run(cell: Cell, handle: RunHandle, task: str) -> AdapterResult:
    return await asyncio.wait_for(ADAPTER.run_cell(cell, get_task(task), handle.endpoint), 30)


def idle_connections(client: Any) -> list[bool]:
    """Whether each pooled connection is idle (httpcore's pool, behind httpx's transport)."""
    return [connection.is_idle() for connection in client._transport._pool.connections]


@pytest.mark.asyncio
async def test_outside_a_run_the_sdk_builds_its_own_client() -> None:
    assert clients.shared("key", object) is None


@pytest.mark.asyncio
async def test_two_interleaved_cells_on_one_client_see_only_their_own_script(provider: LocalProvider) -> None:
    slow = provider.open_script("person", script=[{"slow": 0.5}, "valid"], then="repeat", call_cap=5)
    quick = provider.open_script("ticket_triage", script=["valid"], then="repeat", call_cap=5)
    try:
        async with clients.sharing() as pool:
            first = asyncio.ensure_future(run(CHAT_TOOL, slow, "person"))
            await asyncio.sleep(0.1)  # the slow cell's request is on the wire, waiting for its first byte
            assert not first.done()
            second = await run(CHAT_TOOL, quick, "ticket_triage")
            assert not first.done()  # the quick cell ran to its end inside the slow one
            first_result = await first
            assert len(pool) == 1
            (client,) = pool._clients.values()
            assert all(idle_connections(client)) and not client.cookies
    finally:
        slow.close()
        quick.close()
    assert first_result.exception is None and get_task("person").judge(first_result.output) == (True, True)
    assert second.exception is None and get_task("ticket_triage").judge(second.output) == (True, True)
    assert [a.behaviour for a in slow.attempts] == ["slow:before_first_byte>valid"]
    assert [a.behaviour for a in quick.attempts] == ["valid"]
    assert len({a.run_id for a in slow.attempts + quick.attempts}) == 2


@pytest.mark.asyncio
async def test_a_cell_cancelled_mid_stream_leaves_the_pool_clean(provider: LocalProvider) -> None:
    stream = next(c for c in ADAPTER.cells() if (c.mode, c.protocol, c.variant) == (Mode.TOOL, Protocol.CHAT, "stream"))
    stalled = provider.open_script("person", script=[{"slow": {"delay_s": 3600, "where": "mid_stream"}}], call_cap=5)
    after = provider.open_script("person", script=["valid"], call_cap=5)
    try:
        async with clients.sharing() as pool:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(ADAPTER.run_cell(stream, get_task("person"), stalled.endpoint), 1.0)
            result = await run(CHAT_TOOL, after, "person")
            (client,) = pool._clients.values()
            assert all(idle_connections(client))
    finally:
        stalled.close()
        after.close()
    assert result.exception is None and get_task("person").judge(result.output) == (True, True)
    assert len(stalled.attempts) == 1 and [a.behaviour for a in after.attempts] == ["valid"]


@pytest.mark.asyncio
async def test_the_pool_closes_its_clients_when_the_run_ends() -> None:
    async with clients.sharing() as pool:
        client = clients.shared(("sdk", "protocol"), httpx2.AsyncClient)
        assert clients.shared(("sdk", "protocol"), object) is client
    assert client.is_closed and len(pool) == 0 and clients.shared("key", object) is None


def test_a_run_builds_ssl_contexts_without_parsing_a_ca_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpcore2

    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    assert httpcore2.default_ssl_context().cert_store_stats()["x509_ca"] > 0  # the bundle, parsed
    with clients.lazy_trust_store():
        assert "SSL_CERT_FILE" not in os.environ and os.path.isdir(os.environ["SSL_CERT_DIR"])
        assert httpcore2.default_ssl_context().cert_store_stats()["x509_ca"] == 0  # read on verification only
    assert os.environ["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt" and "SSL_CERT_DIR" not in os.environ
