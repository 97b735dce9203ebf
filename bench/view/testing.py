"""What the browser tests and the screenshot script share: two small real runs to look at, the
app served on a free loopback port in a thread, and headless Chromium from the system (Debian's
``chromium``) driven by Playwright, never a browser Playwright downloads.

Playwright is a test dependency (``pip install -e '.[test]'``); nothing else in the package
imports this module.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.view.guard import new_token
from bench.view.site import Site, app, url

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DEMO_SCENARIOS = frozenset({"valid", "malformed_then_valid", "wrong_then_valid", "tool_unknown_order_then_ok"})
"""A control, an output retry, a wrong answer handed on, and a tool error: every view has something."""


def chromium_path() -> str | None:
    """The system Chromium (``apt-get install chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright: Any) -> Any:
    """Headless system Chromium through Playwright's own protocol driver."""
    executable = chromium_path()
    if executable is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)


def demo_runs(results_root: Path, sdks: tuple[str, ...] = ("pydantic-ai", "langchain")) -> tuple[Path, Path]:
    """Two real runs of the same small plan on openai-chat: the defaults, then with a call cap of
    1 (every retry becomes a runaway), so a comparison has cells that changed."""
    from bench.run.plan import Filters
    from bench.run.runner import RunOptions
    from bench.run.suite import SuiteRequest, run_suite

    filters = Filters(None, None, frozenset({"openai-chat"}), DEMO_SCENARIOS, None)
    runs = []
    for cap in (12, 1):
        request = SuiteRequest(
            sdks=sdks, filters=filters, results_root=results_root, options=RunOptions(call_cap=cap, record_bodies=True)
        )
        runs.append(run_suite(request))
    return runs[0], runs[1]


@contextmanager
def serving(site: Site) -> Iterator[str]:
    """The app on a free loopback port in a thread; yields the URL ``bench view`` would print
    (``http://127.0.0.1:PORT/?token=...``: append ``#/...`` for a view), stops on exit."""
    import uvicorn

    token = new_token()
    config = uvicorn.Config(app(site, token), host="127.0.0.1", port=0, log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    started = threading.Event()
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets)
        started.set()

    server.startup = startup  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    if not started.wait(30) or not server.servers:
        raise RuntimeError("bench view did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield url("127.0.0.1", port, token)
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def browser_page(site: Site, width: int, height: int) -> Iterator[Any]:
    """A headless Chromium page of ``width`` x ``height`` on ``site`` served by :func:`serving`
    (the page's ``base_url`` is the served URL). Without Chromium, a test fails under CI (where
    .ci/run installs it) and is skipped elsewhere, so a browser test never passes unseen."""
    import pytest

    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with serving(site) as served, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.base_url = served
        try:
            yield page
        finally:
            browser.close()
