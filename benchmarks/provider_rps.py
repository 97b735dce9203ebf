"""Provider throughput on loopback, next to a minimal ASGI app sending the same bytes (figures,
not pass marks; issue 8's target is a ratio of at least 0.8).

Two cases, both OpenAI Chat Completions with a prompted `valid` answer:
  - small: one non-streamed completion (the task's reference answer);
  - stream: a streamed completion of 200 SSE events (first delta, 196 content deltas, finish,
    usage, [DONE]), from a `valid` answer whose long `name` splits into 196 token deltas.

The provider is the real one (LocalProvider: uvicorn in its own thread, one run opened with
`then: repeat` serving every request). The minimal app is served by the same LocalProvider
server code (same uvicorn config, its own thread and port) and answers every POST with the
status, headers and bytes captured from the provider for that case, sent in the same chunks
(one `http.response.body` message per SSE frame). The load comes from `wrk` in a separate
process, so the client never competes with the servers for the GIL; servers and client share
the machine's cores, which is the same for both sides of each ratio.

Rounds alternate provider and minimal app per case; the medians and their ratio are printed,
with the ledger's memory per 10k attempts (RSS growth of this process while the provider
served, divided by the attempts it recorded).

    flock /tmp/misfit-bench.lock .venv/bin/python benchmarks/provider_rps.py \
        [--duration 5] [--rounds 3] [--connections 8] [--record-bodies]
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.tokens import split_for_stream
from bench.provider import LocalProvider

LUA = Path(__file__).with_name("post.lua")
STREAM_DELTAS = 196
MESSAGES = [
    {"role": "system", "content": "Answer with a JSON object with keys name, age and email."},
    {"role": "user", "content": "Extract the person: 'Ada Lovelace (36) <ada@example.org>'."},
]


@dataclass
class Case:
    name: str
    request: dict[str, Any]
    behaviour: str | dict[str, Any]
    status: int = 0
    headers: list[tuple[bytes, bytes]] | None = None
    chunks: list[bytes] | None = None


def long_value(deltas: int) -> dict[str, Any]:
    """A person whose JSON splits into exactly ``deltas`` token deltas (found by search, so
    the event count does not depend on guessing the tokenizer)."""
    for words in range(1, 1000):
        value = {"name": " ".join(f"Ada{i}" for i in range(words)), "age": 36, "email": "x"}
        count = len(split_for_stream(json.dumps(value, separators=(",", ":"))))
        if count == deltas:
            return value
        if count > deltas:
            break
    raise SystemExit(f"no name gives exactly {deltas} deltas; adjust long_value")


def cases() -> list[Case]:
    small = {"model": "gpt-4o-mini", "messages": MESSAGES}
    stream = {**small, "stream": True, "stream_options": {"include_usage": True}}
    return [
        Case("small", small, "valid"),
        Case("stream-200", stream, {"valid": long_value(STREAM_DELTAS)}),
    ]


def post(port: int, path: str, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", path, body, {"content-type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, response.getheaders(), data


def capture(case: Case, port: int, path: str) -> None:
    """Record what the provider sends for ``case``: status, headers, body in its chunks."""
    status, headers, data = post(port, path, json.dumps(case.request).encode())
    if status != 200:
        raise SystemExit(f"{case.name}: provider answered {status}: {data[:200]!r}")
    keep = {"content-type", "cache-control"}  # uvicorn adds date, server, length/chunked itself
    case.status = status
    case.headers = [(k.lower().encode(), v.encode()) for k, v in headers if k.lower() in keep]
    if case.request.get("stream"):
        case.chunks = [frame + b"\n\n" for frame in data.split(b"\n\n") if frame]
        events = len(case.chunks)
        if events != STREAM_DELTAS + 4:
            raise SystemExit(f"{case.name}: {events} events, expected {STREAM_DELTAS + 4}")
    else:
        case.chunks = [data]


Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class MinimalApp:
    """The floor: read the body, send the captured bytes for the path's case, nothing else."""

    def __init__(self, replies: dict[str, Case]) -> None:
        self.replies = replies
        self.runs: dict[str, Any] = {}  # LocalProvider.stop() closes runs; there are none

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        case = self.replies[scope["path"]]
        assert case.chunks is not None
        await send({"type": "http.response.start", "status": case.status, "headers": case.headers})
        last = len(case.chunks) - 1
        for index, chunk in enumerate(case.chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": index != last})


def wrk(url: str, body_file: Path, seconds: int, connections: int, pin: bool) -> tuple[float, int, list[str]]:
    """Requests per second from one bounded wrk run (one client thread, its own process)."""
    command = (["taskset", "-c", str(max(os.sched_getaffinity(0)) + 1)] if pin else []) + [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "-s",
        str(LUA),
        url,
    ]
    env = {**os.environ, "WRK_BODY": str(body_file)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=seconds + 30, check=True)
    match = re.search(r"MISFIT requests=(\d+) duration_us=(\d+) errors=(\d+)", done.stdout)
    if match is None:
        raise SystemExit(f"wrk printed no summary:\n{done.stdout}\n{done.stderr}")
    requests, duration_us, errors = (int(g) for g in match.groups())
    return requests / (duration_us / 1e6), errors, command


def thread_cpu_s(server: LocalProvider) -> float:
    """CPU seconds (user + system) the server's own thread has used: the cost per request,
    whatever share of the cores the other processes on the machine leave it."""
    assert server._served is not None and server._served.thread.native_id is not None
    fields = Path(f"/proc/self/task/{server._served.thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per case")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--case", action="append", choices=["small", "stream-200"], help="only these cases")
    parser.add_argument(
        "--pin", action=argparse.BooleanOptionalAction, default=False,
        help="servers on CPU 0, wrk on CPU 1 (else the scheduler may run them on one core, and a reply's "
        "write then waits for the client it wakes)",
    )  # fmt: skip
    parser.add_argument("--record-bodies", action="store_true", help="store request bodies in the ledger")
    args = parser.parse_args()
    # wrk closes its connections mid-stream when its time is up; asyncio logs each write
    # that follows as "socket.send() raised exception.", which is noise here.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")

    if args.pin:
        os.sched_setaffinity(0, {0})  # before the server threads start: they inherit it
    provider = LocalProvider(record_bodies=args.record_bodies).start()
    all_cases = [case for case in cases() if not args.case or case.name in args.case]
    paths: dict[str, str] = {}
    for case in all_cases:
        run = provider.open_script("person", [case.behaviour], then="repeat")
        paths[case.name] = f"/runs/{run.run_id}/v1/chat/completions"
        capture(case, provider.port, paths[case.name])
    minimal = LocalProvider()
    minimal.app = MinimalApp({paths[c.name]: c for c in all_cases})  # type: ignore[assignment]
    minimal.start()

    rates: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}  # server-thread CPU seconds per second of load
    ledger_kib, ledger_attempts = 0, 0
    command: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in all_cases:
            body_file = Path(tmp) / f"{case.name}.json"
            body_file.write_text(json.dumps(case.request))
            for _ in range(args.rounds):
                for side, server in (("provider", provider), ("minimal", minimal)):
                    before = rss_kib(), _attempts(provider), thread_cpu_s(server)
                    rate, errors, command = wrk(
                        f"{server.base_url}{paths[case.name]}", body_file, args.duration, args.connections, args.pin
                    )
                    if errors:
                        raise SystemExit(f"{side} {case.name}: {errors} failed requests")
                    rates.setdefault((case.name, side), []).append(rate)
                    cpu.setdefault((case.name, side), []).append((thread_cpu_s(server) - before[2]) / args.duration)
                    if side == "provider":
                        ledger_kib += rss_kib() - before[0]
                        ledger_attempts += _attempts(provider) - before[1]
    provider.stop()
    minimal.stop()
    report(all_cases, rates, cpu, args, ledger_kib, ledger_attempts, command)


def _attempts(provider: LocalProvider) -> int:
    return sum(len(state.attempts) for state in provider.app.runs.values())


def report(
    all_cases: list[Case], rates: dict[tuple[str, str], list[float]], cpu: dict[tuple[str, str], list[float]],
    args: argparse.Namespace,
    ledger_kib: int, ledger_attempts: int, command: list[str],
) -> None:  # fmt: skip
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"cores {os.cpu_count()}  load average before report {' '.join(load)}")
    pinned = "servers on CPU 0, wrk on CPU 1" if args.pin else "not pinned"
    print(
        f"wrk: 1 thread, {args.connections} connections, {args.duration:g} s x {args.rounds} rounds per side; {pinned}"
    )
    print(f"{'case':<12} {'bytes':>7} {'events':>6} {'provider req/s':>15} {'minimal req/s':>14} {'ratio':>6}")
    for case in all_cases:
        assert case.chunks is not None
        provider = statistics.median(rates[(case.name, "provider")])
        minimal = statistics.median(rates[(case.name, "minimal")])
        size, events = sum(map(len, case.chunks)), len(case.chunks) if case.request.get("stream") else 0
        print(f"{case.name:<12} {size:>7} {events:>6} {provider:>15.0f} {minimal:>14.0f} {provider / minimal:>6.2f}")
        pairs = zip(rates[(case.name, "provider")], rates[(case.name, "minimal")], strict=True)
        print(f"{'':<12} per-round ratios: {' '.join(f'{p / m:.2f}' for p, m in pairs)}")
        per_request = {
            side: statistics.median(
                c / r * 1e6 for c, r in zip(cpu[(case.name, side)], rates[(case.name, side)], strict=True)
            )
            for side in ("provider", "minimal")
        }
        print(
            f"{'':<12} server-thread CPU per request: provider {per_request['provider']:.0f} us, minimal "
            f"{per_request['minimal']:.0f} us, ratio {per_request['minimal'] / per_request['provider']:.2f}"
        )
    per_10k = ledger_kib / ledger_attempts * 10_000 / 1024 if ledger_attempts else 0.0
    bodies = "with" if args.record_bodies else "without"
    print(f"ledger: {ledger_attempts} attempts, RSS growth {per_10k:.1f} MiB per 10k attempts ({bodies} bodies)")
    line = " ".join(shlex.quote(a) for a in sys.argv)
    print(f"reproduce: flock /tmp/misfit-bench.lock .venv/bin/python {line}")
    print(f"wrk per run: WRK_BODY=<request.json> {' '.join(command[:-1])} <url>")


if __name__ == "__main__":
    main()
