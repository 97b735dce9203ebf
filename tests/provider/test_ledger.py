"""The ledger is an API: per-run isolation under concurrency, exact token and byte counts,
transport retries told apart from new requests, and the call cap."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time

import httpx
import openai
import pytest

from bench.core.tokens import count_tokens
from bench.core.vocabulary import Mode, Protocol
from bench.provider import LocalProvider
from bench.provider import app as provider_app
from bench.provider.app import input_tokens
from bench.provider.ledger import CLIENT_CLOSED
from bench.scenarios.behaviours import Script, Stochastic
from tests.protocol_clients import chat_kwargs


async def _ask(client: openai.AsyncOpenAI, marker: str) -> str | None:
    kwargs = chat_kwargs(Mode.NATIVE)
    kwargs["messages"] = [{"role": "user", "content": marker}]
    completion = await client.chat.completions.create(**kwargs)
    return completion.choices[0].message.content


async def test_concurrent_runs_never_share_script_or_ledger(provider: LocalProvider) -> None:
    runs = []
    for index in range(24):
        value = {"name": f"Person {index}", "age": index, "email": f"p{index}@example.org"}
        runs.append(provider.open_script("person", ["wrong", {"valid": value}], then="refusal"))

    async def drive(index: int) -> list[str | None]:
        endpoint = runs[index].endpoint
        async with openai.AsyncOpenAI(base_url=endpoint.openai_base_url, api_key="x", max_retries=0) as client:
            return [await _ask(client, f"run {index} call {call}") for call in range(3)]

    answers = await asyncio.gather(*(drive(index) for index in range(len(runs))))
    for index, (run, got) in enumerate(zip(runs, answers, strict=True)):
        assert json.loads(got[0] or "{}")["age"] == 63  # the task's wrong answer
        assert json.loads(got[1] or "{}") == {"name": f"Person {index}", "age": index, "email": f"p{index}@example.org"}
        assert got[2] is None  # refusal: content null
        assert [record.attempt for record in run.attempts] == [0, 1, 2]
        assert [record.behaviour for record in run.attempts] == ["wrong", "valid", "refusal"]
        prompts = [record.request_body["messages"][0]["content"] for record in run.attempts]
        assert prompts == [f"run {index} call {call}" for call in range(3)]
        run.close()


class _CountedThenSlow:
    """A script that reports each call it is asked for and then takes ``delay_s`` to draw it:
    the window between the provider counting a model call and holding its answer, widened."""

    def __init__(self, script: Script, delay_s: float) -> None:
        self._script, self._delay_s, self.asked = script, delay_s, threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self._script, name)

    def behaviour_for(self, attempt: int) -> object:
        self.asked.set()
        time.sleep(self._delay_s)
        return self._script.behaviour_for(attempt)


def test_a_run_closed_while_a_call_is_counted_still_ledgers_it(provider: LocalProvider) -> None:
    """A run closed after the provider counted a call but before it held the answer: the
    ledger read right after ``close()`` still holds the call (as 499), because closing waits for
    the count-to-hold step (``RunState.new_call``). Without that, the ledger was empty here."""
    run = provider.open_script("person", [{"slow": {"delay_s": 2, "where": "before_first_byte"}}])
    slow = _CountedThenSlow(run.state.script, delay_s=0.5)
    run.state.script = slow  # type: ignore[assignment]
    client = httpx.Client(timeout=30)
    url = f"{run.endpoint.openai_base_url}/chat/completions"
    thread = threading.Thread(target=_post_ignoring_errors, args=(client, url), daemon=True)
    thread.start()
    assert slow.asked.wait(30), "the request never reached the provider"
    run.close()
    (attempt,) = run.attempts
    assert (attempt.attempt, attempt.status_code) == (0, CLIENT_CLOSED)
    thread.join(timeout=30)
    client.close()
    assert len(run.attempts) == 1, "the answer's end does not record it again"


def _post_ignoring_errors(client: httpx.Client, url: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        client.post(url, json=chat_kwargs(Mode.NATIVE))


def test_token_and_byte_counts_are_exact(provider: LocalProvider) -> None:
    with provider.open_script("person", ["valid", "truncated", {"http_error": 500}]) as run:
        client = openai.OpenAI(base_url=run.endpoint.openai_base_url, api_key="x", max_retries=0)
        contents = [
            client.chat.completions.create(**chat_kwargs(Mode.NATIVE)).choices[0].message.content for _ in range(2)
        ]
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(**chat_kwargs(Mode.NATIVE))
        client.close()
        records = run.attempts
    for record, content in zip(records[:2], contents, strict=True):
        assert record.input_tokens == input_tokens(Protocol.CHAT, record.request_body)
        assert record.output_tokens == count_tokens(content or "")
    for record in records:
        assert record.response_bytes > 0 and record.duration_ms >= record.first_byte_ms >= 0
    assert records[0].input_tokens > 50, "schema and prompt are billed"
    assert (records[2].input_tokens, records[2].output_tokens) == (0, 0), "a rejected request is not billed"


def test_request_bytes_are_what_crossed_the_wire(provider: LocalProvider) -> None:
    raw = json.dumps(chat_kwargs(Mode.NATIVE), indent=3).encode()
    with provider.open_script("person", ["valid"]) as run:
        response = httpx.post(f"{run.endpoint.openai_base_url}/chat/completions", content=raw)
        (record,) = run.attempts
    assert record.request_bytes == len(raw)
    assert record.response_bytes == len(response.content)


def test_output_retry_is_a_new_body_transport_retry_the_same(provider: LocalProvider) -> None:
    with provider.open_script(
        "person", [{"http_error": {"status": 503, "retry_after_s": 0.01}}, "malformed", "valid"]
    ) as run:
        client = openai.OpenAI(base_url=run.endpoint.openai_base_url, api_key="x", max_retries=1)
        kwargs = chat_kwargs(Mode.NATIVE)
        bad = client.chat.completions.create(**kwargs).choices[0].message.content
        kwargs["messages"] = [
            *kwargs["messages"],
            {"role": "assistant", "content": bad},
            {"role": "user", "content": "fix it"},
        ]
        client.chat.completions.create(**kwargs)
        client.close()
        first, retried, output_retry = run.attempts
    assert first.request_sha256 == retried.request_sha256 and retried.client_retry_count == 1
    assert output_retry.request_sha256 != retried.request_sha256 and output_retry.client_retry_count == 0


def test_body_cache_stays_bounded_and_never_changes_a_figure(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long runs send many distinct bodies: the cache of what a body implies must stay within its
    byte budget, and a body seen again after the cache emptied gets the same digest and count."""
    monkeypatch.setattr(provider_app, "_BODY_BYTES_MAX", 3000)
    monkeypatch.setattr(provider_app, "_BODIES", {})
    bodies = []
    for index in range(6):
        kwargs = chat_kwargs(Mode.NATIVE)
        kwargs["messages"] = [{"role": "user", "content": f"call {index} " + "x" * 500}]
        bodies.append(json.dumps(kwargs).encode())
    with provider.open_script("person", ["valid"], then="repeat") as run:
        for raw in [*bodies, bodies[0]]:
            httpx.post(f"{run.endpoint.openai_base_url}/chat/completions", content=raw).raise_for_status()
            assert sum(map(len, provider_app._BODIES)) <= 3000
        records = run.attempts
    for record, raw in zip(records, [*bodies, bodies[0]], strict=True):
        assert record.request_sha256 == hashlib.sha256(raw).hexdigest()[:16]
        assert record.input_tokens == input_tokens(Protocol.CHAT, json.loads(raw))
    assert records[0].input_tokens == records[-1].input_tokens


async def test_call_cap_holds_the_next_call_and_signals_the_runner(provider: LocalProvider) -> None:
    run = provider.open_script("person", ["malformed"], call_cap=2)
    cap = run.cap_reached()
    async with openai.AsyncOpenAI(base_url=run.endpoint.openai_base_url, api_key="x", max_retries=0) as client:
        for _ in range(2):
            await client.chat.completions.create(**chat_kwargs(Mode.NATIVE))
        held = asyncio.ensure_future(client.chat.completions.create(**chat_kwargs(Mode.NATIVE)))
        await asyncio.wait_for(cap, timeout=5)
        assert not held.done(), "the call past the cap gets no answer while the run is open"
        run.close()
        with pytest.raises(openai.NotFoundError):
            await asyncio.wait_for(held, timeout=5)
    assert [record.behaviour for record in run.attempts] == ["malformed:trailing_comma"] * 2 + ["call_cap"]


def test_stochastic_scripts_are_reproducible_per_seed_and_unit() -> None:
    mix = Stochastic(rates={"malformed": 0.3, "refusal": 0.1}, seed=7)
    first = [Script(stochastic=mix, unit_seed=1).behaviour_for(i).kind for i in range(400)]
    again = [Script(stochastic=mix, unit_seed=1).behaviour_for(i).kind for i in range(400)]
    other = [Script(stochastic=mix, unit_seed=2).behaviour_for(i).kind for i in range(400)]
    assert first == again and first != other
    assert 0.22 < first.count("malformed") / 400 < 0.38
    assert 0.05 < first.count("refusal") / 400 < 0.16


def test_admin_api_opens_runs_and_serves_their_ledger(provider: LocalProvider) -> None:
    created = httpx.post(f"{provider.base_url}/runs", json={"task": "ticket_triage", "script": ["refusal", "valid"]})
    assert created.status_code == 201
    spec = created.json()
    client = openai.OpenAI(base_url=spec["openai_base_url"], api_key="x", max_retries=0)
    assert client.chat.completions.create(**chat_kwargs(Mode.NATIVE)).choices[0].message.refusal
    client.close()
    ledger = httpx.get(f"{provider.base_url}/runs/{spec['run_id']}/ledger").json()
    assert [a["behaviour"] for a in ledger["attempts"]] == ["refusal"]
    assert httpx.delete(f"{provider.base_url}/runs/{spec['run_id']}").json()["closed"] is True
    bad = httpx.post(f"{provider.base_url}/runs", json={"task": "nope", "script": ["valid"]})
    assert bad.status_code == 400 and "unknown task" in bad.json()["error"]["message"]


def test_provider_refuses_to_bind_beyond_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        LocalProvider(host="0.0.0.0")
