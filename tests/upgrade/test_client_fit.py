"""Each release's official clients against the provider's snapshot (bench/upgrade/client_fit.py):
the probe asks a real client, over loopback, for the provider's real replies; the table says
what an upgrade changes in what the client declares."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.upgrade.client_fit import PROBES, ClientFit, ProbeResult, probe, table


def test_the_pinned_clients_parse_every_reply_and_name_what_they_do_not_declare() -> None:
    fit = probe(Path(sys.executable), "pydantic-ai", "pinned")
    assert set(fit.clients) == {"openai", "anthropic"}
    assert len(fit.probes) == 2 * len(PROBES)  # each reply kind as JSON and as SSE
    assert [p.error for p in fit.probes if p.error] == []
    # the Responses API sends `store` on every response; openai's Response type has no such field
    responses = [p for p in fit.probes if p.probe.startswith("responses") and not p.stream]
    assert all("Response.store" in p.extras for p in responses), responses
    assert all(not p.extras for p in fit.probes if p.probe.startswith("messages") and not p.stream)


def test_a_release_without_those_clients_probes_nothing() -> None:
    fit = probe(Path(sys.executable), "claude-agent-sdk", "pinned", packages=())
    assert (fit.clients, fit.probes) == ({}, [])
    assert table([fit]) == [
        "Clients: none of pinned resolves an official Python client "
        "(the SDK talks to the API through its own transport)."
    ]


def _fit(release: str, version: str, extras: list[str], error: str | None = None) -> ClientFit:
    found = ProbeResult(probe="chat output tool", client="openai", stream=False, error=error, extras=extras)
    return ClientFit(sdk="x", release=release, clients={"openai": version}, probes=[found])


def test_the_table_names_what_each_upgrade_teaches_the_client_and_what_fails() -> None:
    fits = [
        _fit("1.0", "1.1.0", ["ChatCompletion.service_tier", "ResponseCompletedEvent.response.store"]),
        _fit("2.0", "2.0.0", ["ResponseInProgressEvent.response.store"], error="ValidationError: usage"),
    ]
    lines = table(fits)
    assert lines[1].split() == ["release", "1.0", "2.0"]
    assert lines[3].split() == ["parses", "every", "reply", "yes", "no"]
    assert lines[4].split() == ["undeclared", "fields", "2", "1"]
    assert "2.0 fails on chat output tool: ValidationError: usage." in lines
    assert "2.0's client declares ChatCompletion.service_tier." in lines
    assert "2.0's client still does not declare (kept as extras): Response.store." in lines
