"""Issue 26: a running `bench view` answers only its own page (bench.view.guard). Its documents
hold every prompt the SDKs sent; before, each was a script calling a global ``benchData`` (JSONP)
answered to any Host, so any web page the user visited could read them.

Proved with what an attacker has: pages from other origins (127.0.0.2, another port of 127.0.0.1,
a file://) in the same headless Chromium as the user's open view, trying script inclusion and
fetch; plain HTTP requests naming a foreign Host (DNS rebinding) or no token. One small real run
of pydantic-ai on openai-chat with request bodies recorded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from bench.view.site import Site
from bench.view.testing import DEMO_SCENARIOS, chromium_path, launch, serving


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.run.plan import Filters
    from bench.run.runner import RunOptions
    from bench.run.suite import SuiteRequest, run_suite

    filters = Filters(None, None, frozenset({"openai-chat"}), DEMO_SCENARIOS & {"valid", "malformed_then_valid"}, None)
    request = SuiteRequest(
        sdks=("pydantic-ai",),
        filters=filters,
        results_root=tmp_path_factory.mktemp("origin-runs"),
        options=RunOptions(record_bodies=True),
    )
    return run_suite(request)


@pytest.fixture(scope="module")
def site(run: Path) -> Site:
    return Site([run])


@pytest.fixture(scope="module")
def view(site: Site) -> Iterator[str]:
    """The URL bench view prints for this run: ``http://127.0.0.1:PORT/?token=...``."""
    with serving(site) as url:
        yield url


@pytest.fixture(scope="module")
def browser(run: Path) -> Iterator[Any]:
    """Headless Chromium, started after the run (Playwright's sync API holds an event loop in this
    thread, and a run starts its own)."""
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def client() -> httpx.Client:
    return httpx.Client(trust_env=False, timeout=30)


ATTACK = """<!DOCTYPE html><meta charset="utf-8"><title>attack</title><script>
window.stolen = [];
window.benchData = (path, doc) => window.stolen.push(["benchData " + path, JSON.stringify(doc)]);
const base = %(base)s, paths = %(paths)s;
function include(src) {
  return new Promise((resolve) => {
    const tag = document.createElement("script");
    tag.src = src; tag.onload = () => resolve("loaded " + src); tag.onerror = () => resolve("refused " + src);
    document.head.appendChild(tag);
  });
}
async function read(src, init) {
  try {
    const response = await fetch(src, init);
    const text = await response.text();
    if (text) window.stolen.push(["fetch " + src, text]);
    return `${response.type} ${response.status} ${src}`;
  } catch (error) { return "refused " + src; }
}
const tries = [];
for (const path of paths) for (const suffix of [".js", ".json"]) {
  const src = `${base}/data/${path}${suffix}`;
  tries.push(include(src), read(src, {credentials: "include"}), read(src, {mode: "no-cors", credentials: "include"}));
}
Promise.all(tries).then((done) => { window.tries = done; });
</script>"""


def a_cell_with_a_request_body(site: Site, run: Path) -> int:
    """A cell whose document holds a request body the SDK sent (what the attacker is after)."""
    for i in range(len(site.runs[run.name].groups)):
        cell = site.document(f"run/{run.name}/cell/{i}")
        if cell and any(a.get("request") for rep in cell["reps"] for a in rep["attempts"]):
            return i
    raise AssertionError("no cell with a request body")


@contextmanager
def attacker(host: str, page: bytes) -> Iterator[str]:
    """A second web server, on ``host``, answering ``page`` at every path; yields its origin."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.slow
def test_a_foreign_page_cannot_read_a_cell(browser: Any, view: str, site: Site, run: Path, tmp_path: Path) -> None:
    """The user has the view open (the browser holds its cookie); pages from 127.0.0.2, from
    another port of 127.0.0.1 (the same site, so the cookie goes along) and from a file:// try
    every document by script inclusion (with a benchData of their own) and by fetch: none reads
    a byte. Before, ``data/runs.js`` and each cell's ``.js`` ran in the foreign page."""
    import json

    cell = a_cell_with_a_request_body(site, run)
    context = browser.new_context()
    mine = context.new_page()
    mine.goto(view + "#/")
    mine.locator("#runs tbody tr").first.wait_for()
    paths = ["runs", f"run/{run.name}/matrix", f"run/{run.name}/cell/{cell}"]
    page = (ATTACK % {"base": json.dumps(origin(view)), "paths": json.dumps(paths)}).encode()
    (tmp_path / "attack.html").write_bytes(page)
    with attacker("127.0.0.2", page) as other_host, attacker("127.0.0.1", page) as other_port:
        for where in (f"{other_host}/attack.html", f"{other_port}/attack.html", (tmp_path / "attack.html").as_uri()):
            foreign = context.new_page()
            foreign.goto(where)
            foreign.wait_for_function("window.tries !== undefined", timeout=30_000)
            tries, stolen = foreign.evaluate("[window.tries, window.stolen]")
            assert len(tries) == 3 * 2 * len(paths), tries
            assert stolen == [], (where, stolen[:1])
            assert not [t for t in tries if t.startswith(("loaded", "cors", "basic"))], (where, tries)
            foreign.close()
    mine.goto(view + f"#/run/{run.name}/cell/{cell}")
    assert '"messages"' in mine.locator("#panel pre.request").first.text_content()
    context.close()


def test_a_foreign_host_is_refused(view: str) -> None:
    """DNS rebinding: a name of the attacker's that resolves to 127.0.0.1 reaches the socket, but
    the Host it sends is its own: 421, even with the token. No answer grants CORS."""
    base = origin(view)
    port = urlsplit(view).port
    token = urlsplit(view).query
    with client() as http:
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", f"[::1]x:{port}"):
            for path in (f"/?{token}", f"/data/runs.json?{token}"):
                answer = http.get(base + path, headers={"host": host})
                assert answer.status_code == 421, (host, path, answer.status_code)
                assert "bench view answers only" in answer.text and "access-control-allow-origin" not in answer.headers
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
            answer = http.get(f"{base}/data/runs.json?{token}", headers={"host": host, "origin": "http://evil.example"})
            assert answer.status_code == 200, (host, answer.text)
            assert answer.headers["content-type"] == "application/json"
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert "access-control-allow-origin" not in answer.headers
        preflight = http.options(
            f"{base}/data/runs.json?{token}",
            headers={"origin": "http://evil.example", "access-control-request-method": "GET"},
        )
        assert "access-control-allow-origin" not in preflight.headers


def test_a_request_without_the_token_is_refused(view: str, run: Path) -> None:
    """Every page and document wants this start's token, in the query or the cookie the first
    answer sets; a missing or wrong one is 403 with one line saying where the token is."""
    base = origin(view)
    token = urlsplit(view).query.removeprefix("token=")
    with client() as http:
        for path in ("/", "/app.js", "/index.html", "/data/runs.json", f"/data/run/{run.name}/matrix.json"):
            for query in ("", "?token=", f"?token={token[:-1]}x"):
                answer = http.get(base + path + query)
                assert answer.status_code == 403, (path, query, answer.status_code)
                assert answer.text.startswith("bench view wants the token of the URL it printed")
        first = http.get(view)
        assert first.status_code == 200 and 'data-source="json"' in first.text
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"bench-view-{urlsplit(view).port}={token};") and "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert http.get(f"{base}/data/runs.json").status_code == 200  # the client kept the cookie
        assert http.get(f"{base}/data/runs.js").status_code == 404  # the live view serves no script


def test_a_request_another_site_sent_is_refused(view: str) -> None:
    """A page on another port of 127.0.0.1 is the same site: the browser sends it the cookie. Its
    fetch metadata gives it away (403), unless it is the user opening a page."""
    base = origin(view)
    token = urlsplit(view).query.removeprefix("token=")
    with client() as http:
        http.get(view)
        for site in ("same-site", "cross-site"):
            answer = http.get(f"{base}/data/runs.json", headers={"sec-fetch-site": site, "sec-fetch-mode": "no-cors"})
            assert answer.status_code == 403 and "another site" in answer.text
        opened = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
        assert http.get(f"{base}/?token={token}", headers=opened).status_code == 200
        same = {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"}
        assert http.get(f"{base}/data/runs.json", headers=same).status_code == 200


def test_a_cell_number_in_other_digits_is_not_found(view: str, site: Site, run: Path) -> None:
    """``cell/²`` was a 500 (``"²".isdigit()`` but ``int("²")`` raises); so were 5,000 digits
    (``int`` refuses that many). Only a cell number as the pages write it names a cell."""
    for number in ("²", "٣", "03", "-1", "1.0", "9" * 5000, str(len(site.runs[run.name].groups))):
        assert site.document(f"run/{run.name}/cell/{number}") is None, number
    with client() as http:
        http.get(view)
        for number in ("²", "٣", "9" * 5000):
            answer = http.get(f"{origin(view)}/data/run/{run.name}/cell/{number}.json")
            assert answer.status_code == 404, (number[:5], answer.status_code)
            assert answer.text.startswith(f"bench view has no document data/run/{run.name}/cell/")
        assert http.get(f"{origin(view)}/data/run/{run.name}/cell/0.json").status_code == 200


def test_the_printed_url_opens_the_view(browser: Any, run: Path) -> None:
    """`bench view RUN --port 0` prints one URL once it listens; that URL, as printed, opens the
    runs page and a cell in the browser; the same address without the token is refused."""
    command = [sys.executable, "-m", "bench.cli", "view", str(run), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.fullmatch(r"bench view: (http://127\.0\.0\.1:\d+/\?token=[\w-]{32}) \(Ctrl-C to stop\)\n", line)
        assert match, line
        page = browser.new_page()
        page.goto(match.group(1) + f"#/run/{run.name}/cell/0")
        page.locator("#panel .rep").first.wait_for()
        assert page.locator("#matrix td.cell").count() == len(Site([run]).runs[run.name].groups)
        page.close()
        with client() as http:
            assert http.get(origin(match.group(1)) + "/").status_code == 403
    finally:
        process.kill()
        process.communicate(timeout=10)
