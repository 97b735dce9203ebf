"""A release that cannot be installed is refused before anything is built (issue 46.1): ``bench
upgrade``, ``bench run --release`` and ``bench bisect`` against a fake package index on loopback
(PEP 691 JSON, as uv and pip read it), in one line naming the release and the nearest ones that
can be, exit 2, no environment built and no run made; a build that stalls is stopped at a limit
the progress line says."""

from __future__ import annotations

import json
import platform
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from bench.cli import app

runner = CliRunner()
RELEASES = {  # version: (yanked, Requires-Python)
    "0.14.7": (False, ">=3.9"),
    "0.14.8": (False, ">=3.9"),
    "0.14.9": (True, ">=3.9"),
    "0.15.0": (False, ">=3.99"),
}


def page() -> dict[str, object]:
    files = [
        {
            "filename": f"openai_agents-{version}-py3-none-any.whl", "url": f"/files/openai_agents-{version}.whl",
            "hashes": {}, "requires-python": needs, "upload-time": "2026-05-01T12:00:00Z", "yanked": yanked,
        }
        for version, (yanked, needs) in RELEASES.items()
    ]  # fmt: skip
    return {"meta": {"api-version": "1.1"}, "name": "openai-agents", "versions": list(RELEASES), "files": files}


class FakeIndex(BaseHTTPRequestHandler):
    """Answers the harness's own look-up; stalls uv's (a build that hangs on the index)."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        agent = self.headers.get("User-Agent", "")
        FakeIndex.seen.append(f"{agent.split('/')[0]} {self.path}")
        if agent.startswith("uv"):
            time.sleep(30)
            return
        if self.path.rstrip("/") != "/simple/openai-agents":
            self.send_error(404)
            return
        body = json.dumps(page()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """The fake index on loopback as every index client's default, an empty cache, a scratch
    working directory: nothing here reaches PyPI or the shared environments."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeIndex)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    monkeypatch.setenv("UV_DEFAULT_INDEX", url)
    monkeypatch.delenv("UV_INDEX_URL", raising=False)
    monkeypatch.setenv("MISFIT_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.chdir(tmp_path)
    FakeIndex.seen = []
    yield url
    server.shutdown()
    server.server_close()


@pytest.mark.slow  # the CLI imports the SDK's adapter: seconds on a loaded machine
@pytest.mark.parametrize(
    ("args", "why"),
    [
        (
            ["upgrade", "--to", "openai-agents==9.9.9"],
            "openai-agents==9.9.9: openai-agents has no release 9.9.9 on {url}; the nearest: 0.14.8 (the latest)",
        ),
        (
            ["run", "--sdk", "openai-agents", "--release", "openai-agents==0.14.9", "--scenario", "valid"],
            "openai-agents==0.14.9: openai-agents 0.14.9 is yanked on {url}; the nearest: 0.14.8 (the latest)",
        ),
        (
            ["bisect", "openai-agents", "valid", "--good", "0.14.7", "--bad", "0.15.0"],
            "openai-agents: openai-agents 0.15.0 requires Python >=3.99; environments are built with Python "
            f"{platform.python_version()}; the nearest: 0.14.8 (the latest)",
        ),
        (
            ["releases", "build", "openai-agents==0.14.10"],
            "openai-agents==0.14.10: openai-agents has no release 0.14.10 on {url}; the nearest: 0.14.8 (the latest)",
        ),
    ],
    ids=["upgrade-missing", "run-yanked", "bisect-python", "build-missing"],
)
def test_a_release_that_cannot_be_installed_is_one_line(index: str, args: list[str], why: str) -> None:
    started = time.monotonic()
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {why.format(url=index)}\n", result.stderr
    assert time.monotonic() - started < 90  # the index asked, nothing built (uv here would stall 30 s a request)
    assert not any(seen.startswith("uv") for seen in FakeIndex.seen), FakeIndex.seen
    assert not Path("results").exists() and not (Path("cache") / "envs").exists()


@pytest.mark.slow
def test_a_build_that_stalls_is_stopped_at_the_limit_it_said(index: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv's requests to the index never get an answer: the build stops at the limit
    (``MISFIT_BENCH_BUILD_TIMEOUT_S``), said in the progress line, in one error line, exit 2."""
    monkeypatch.setenv("MISFIT_BENCH_BUILD_TIMEOUT_S", "5")
    started = time.monotonic()
    result = runner.invoke(app, ["run", "--sdk", "openai-agents", "--release", "openai-agents==0.14.8",
                                 "--scenario", "valid", "--no-progress"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "building the environment for openai-agents==0.14.8 (at most 5 s)" in result.stderr, result.stderr
    stopped = (
        "openai-agents==0.14.8: the environment build took longer than 5 s and was stopped "
        "($MISFIT_BENCH_BUILD_TIMEOUT_S sets the limit)"
    )
    assert stopped in result.stderr and result.stderr.count(stopped) == 1, result.stderr
    assert time.monotonic() - started < 60
    assert not (Path("cache") / "envs" / "openai-agents" / "0.14.8").exists()
