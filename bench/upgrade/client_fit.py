"""What each release's official client makes of the provider's snapshot.

An SDK release resolves the ``openai`` and ``anthropic`` clients of its date, and the provider
answers as the API did on its snapshot's date (bench/provider/snapshot.py). An older client
parses a newer reply as long as every field it requires is there; the fields it does not declare
it keeps as extras, which no SDK code reads. So the question for an upgrade is which snapshot
fields a release's client does not know, and whether any reply fails its parser: this module
asks each release environment's own client, over loopback, with the provider's real replies
(structured answer and output-tool call, JSON and SSE, in each protocol the client speaks), and
``bench.upgrade.history`` keeps the answers in ``results/releases/clients.json`` for the
changelog (the environments are not there when the changelog is rendered, in CI say).
"""

from __future__ import annotations

import json
import subprocess
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench.provider import LocalProvider

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age", "email"],
    "additionalProperties": False,
}
CLIENTS = ("openai", "anthropic")
"""The official clients a release can resolve."""
USER = "Extract the person: Ada Lovelace, 36, ada@example.com"
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    # name: (client, the create() call's keyword arguments); each runs as JSON and as SSE
    "chat structured answer": ("openai.chat", {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": USER}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True}},
    }),
    "chat output tool": ("openai.chat", {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": USER}], "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "final_result", "parameters": SCHEMA, "strict": True}}],
    }),
    "responses structured answer": ("openai.responses", {
        "model": "gpt-4o-mini", "input": USER,
        "text": {"format": {"type": "json_schema", "name": "Person", "schema": SCHEMA, "strict": True}},
    }),
    "responses output tool": ("openai.responses", {
        "model": "gpt-4o-mini", "input": USER, "tool_choice": "required",
        "tools": [{"type": "function", "name": "final_result", "parameters": SCHEMA, "strict": True}],
    }),
    "messages output tool": ("anthropic.messages", {
        "model": "claude-haiku-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": USER}],
        "tool_choice": {"type": "tool", "name": "final_result"},
        "tools": [{"name": "final_result", "input_schema": SCHEMA}],
    }),
}  # fmt: skip
"""One request per reply kind a framework's structured output rests on."""

PROBE = r"""
import json, sys
from importlib.metadata import version

args = json.load(sys.stdin)
out = {"clients": {}, "probes": []}
clients = {}
for package in args["packages"]:
    try:
        module = __import__(package)
    except ImportError:
        continue
    out["clients"][package] = version(package)
    clients[package] = module


def extras(value, path):
    # the fields the client's own types do not declare, as dotted paths (list items as [])
    found = []
    if isinstance(value, list):
        for item in value:
            found += extras(item, path + "[]")
        return found
    extra = getattr(value, "__pydantic_extra__", None)
    if extra is None:
        return found
    found += [f"{path}.{key}".lstrip(".") for key in extra]
    for name in type(value).model_fields:
        found += extras(getattr(value, name, None), f"{path}.{name}")
    return found


for name, client, stream, kwargs in args["probes"]:
    package, _, surface = client.partition(".")
    if package not in clients:
        continue
    module = clients[package]
    base = args["base"] + ("/v1" if package == "openai" else "")
    made = (module.OpenAI if package == "openai" else module.Anthropic)(api_key="unused", base_url=base, max_retries=0)
    endpoint = {"chat": lambda: made.chat.completions, "responses": lambda: made.responses,
                "messages": lambda: made.messages}[surface]()
    entry = {"probe": name, "client": package, "stream": stream, "error": None, "extras": []}
    try:
        if stream:
            kwargs = dict(kwargs, stream=True)
            if surface == "chat":
                kwargs["stream_options"] = {"include_usage": True}
            paths = []
            for event in endpoint.create(**kwargs):
                paths += extras(event, type(event).__name__)
        else:
            reply = endpoint.create(**kwargs)
            paths = extras(reply, type(reply).__name__)
        entry["extras"] = sorted(set(paths))
    except Exception as error:
        entry["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    out["probes"].append(entry)
json.dump(out, sys.stdout)
"""


class ProbeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    probe: str
    client: str
    stream: bool
    error: str | None
    """The client's parser failed on the reply (or the call failed): the message's first line."""
    extras: list[str]
    """Snapshot fields the client's types do not declare (``Type.path.field``)."""


class ClientFit(BaseModel):
    """One release environment's clients against the provider (``results/releases/clients.json``)."""

    model_config = ConfigDict(extra="forbid")
    sdk: str
    release: str
    clients: dict[str, str]
    """The official clients the environment resolved, package -> version (empty: the SDK talks
    through something else, the Claude Agent SDK's bundled CLI)."""
    probes: list[ProbeResult]


def probe(python: Path, sdk: str, release: str, packages: tuple[str, ...] = CLIENTS, timeout: float = 300) -> ClientFit:
    """Ask the clients (of ``packages``) installed beside ``python`` for every :data:`PROBES`
    reply, JSON and SSE."""
    calls = [[name, client, stream, kwargs] for name, (client, kwargs) in PROBES.items() for stream in (False, True)]
    with LocalProvider() as provider, provider.open_script("person", ["valid"]) as run:
        payload = json.dumps({"base": run.endpoint.root, "probes": calls, "packages": list(packages)})
        done = subprocess.run(
            [str(python), "-c", PROBE], input=payload, capture_output=True, text=True, timeout=timeout, check=False
        )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{sdk} {release}: the client probe failed: {last}")
    found = json.loads(done.stdout)
    return ClientFit(sdk=sdk, release=release, clients=found["clients"], probes=found["probes"])


def table(fits: list[ClientFit]) -> list[str]:
    """The releases' clients against the snapshot as a fixed-width block (releases across), then
    one line per release on the snapshot fields its client learned or still lacks: what an
    upgrade changes in what the SDK can read of a reply."""
    if not any(fit.clients for fit in fits):
        return [f"Clients: none of {', '.join(fit.release for fit in fits)} resolves an official Python client "
                "(the SDK talks to the API through its own transport)."]  # fmt: skip
    names = sorted({name for fit in fits for name in fit.clients})
    rows = [["release", *(fit.release for fit in fits)]]
    rows += [[name, *(fit.clients.get(name, "-") for fit in fits)] for name in names]
    rows.append(["parses every reply", *("no" if _failures(fit) else "yes" for fit in fits)])
    rows.append(["undeclared fields", *(str(len(_undeclared(fit))) for fit in fits)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    aligned = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    lines = ["```text", *aligned, "```"]
    notes = [f"{fit.release} fails on {'; '.join(_failures(fit))}." for fit in fits if _failures(fit)]
    for older, newer in pairwise(fits):
        if learned := sorted(_undeclared(older) - _undeclared(newer)):
            notes.append(f"{newer.release}'s client declares {', '.join(learned)}.")
    if lacking := sorted(_undeclared(fits[-1])):
        notes.append(f"{fits[-1].release}'s client still does not declare (kept as extras): {', '.join(lacking)}.")
    return [*lines, "", *notes]


def _failures(fit: ClientFit) -> list[str]:
    return sorted({f"{p.probe}{' (SSE)' if p.stream else ''}: {p.error}" for p in fit.probes if p.error})


def _undeclared(fit: ClientFit) -> set[str]:
    return {_field(path) for p in fit.probes for path in p.extras}


def _field(path: str) -> str:
    """``ResponseCompletedEvent.response.store`` is ``Response.store`` seen in a stream; an event's
    own field is named on the events of its protocol (``ResponseStreamEvent.obfuscation``)."""
    head, _, rest = path.partition(".")
    if not (head.startswith("Response") and head.endswith("Event")):
        return path
    if rest.startswith("response."):
        return "Response." + rest.removeprefix("response.")
    return f"ResponseStreamEvent.{rest}"
