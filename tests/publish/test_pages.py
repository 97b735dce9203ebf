"""``bench publish OUT`` from the committed runs: the pick first, every table in the HTML as sent,
every link to a page or anchor that exists, at most 10 MB, no prompt and no machine path, and in
Chromium a filter box that narrows a table."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.scenarios.tasks import TASKS
from bench.view.testing import chromium_path, launch
from tests.paths import REPO
from tests.published import published_text

SLOW_FIXTURES = ("site",)
HREF = re.compile(r'href="([^"]+)"')
MAX_SITE_BYTES = 10 * 1024 * 1024


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = CliRunner().invoke(app, ["publish", str(out)])
    assert result.exit_code == 0, result.output
    assert "dataset cells-" in result.stdout and "index.html" in result.stdout
    return out


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_the_site_leads_with_the_pick_and_holds_every_page(site: Path) -> None:
    index = (site / "index.html").read_text()
    assert index.index("<h1>Which SDK and mode to pick</h1>") < index.index("<table")
    for sdk in ("agentmaker", "claude-agent-sdk", "langchain", "openai-agents", "pydantic-ai"):
        assert (site / "sdk" / f"{sdk}.html").is_file()
    assert (site / "release" / "pydantic-ai" / "1.0.18.html").is_file()
    assert (site / "behaviour" / "refusal_then_valid.html").is_file()
    assert "page bytes" in (site / "sdk" / "pydantic-ai.html").read_text()  # each release's size, stated


def test_every_link_reaches_a_page_and_anchor_that_exist(site: Path) -> None:
    for page in pages(site):
        for href in HREF.findall(page.read_text()):
            if href.startswith(("http://", "https://")):
                continue
            target, _, anchor = href.partition("#")
            path = (page.parent / target).resolve() if target else page
            assert path.is_file(), f"{page.relative_to(site)} links {href}"
            if anchor and path.suffix == ".html":
                assert f"id={anchor}" in path.read_text() or f'id="{anchor}"' in path.read_text(), (page, href)


def test_each_change_in_the_changelog_links_to_its_cells(site: Path) -> None:
    changelog = (site / "changelog.html").read_text()
    assert 'href="behaviour/refusal_then_valid.html#claude-agent-sdk"' in changelog
    sdk_page = (site / "sdk" / "openai-agents.html").read_text()
    assert 'href="../behaviour/' in sdk_page


def test_the_site_is_small_and_carries_no_prompt_and_no_machine_path(site: Path) -> None:
    files = [path for path in site.rglob("*") if path.is_file()]
    assert sum(path.stat().st_size for path in files) <= MAX_SITE_BYTES
    prompts = [task.prompt for task in TASKS.values()]
    roots = [str(REPO), str(Path.home()), "/root/", "/work/", "/tmp/"]
    assert any(path.suffix == ".parquet" for path in files)  # read by its values, not skipped
    for path in files:
        text = published_text(path)
        for needle in [*prompts, *roots]:
            assert needle not in text, f"{path.relative_to(site)} holds {needle[:40]!r}"


def test_a_results_root_with_no_runs_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["publish", str(tmp_path / "out"), "--results", str(tmp_path)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "error:" in result.stderr, result.output


@pytest.mark.browser
def test_a_table_reads_without_javascript_and_filters_with_it(site: Path, tmp_path: Path) -> None:
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    page_url = (site / "release" / "pydantic-ai" / "2.0.0.html").as_uri()
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            bare = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900}).new_page()
            bare.goto(page_url)
            rows = bare.locator("tbody tr").count()
            assert rows > 30 and bare.locator("input.filter").count() == 0
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_url)
            page.fill("input.filter", "refusal")
            visible = page.locator("tbody tr:visible")
            assert 0 < visible.count() < rows
            assert all("refusal" in text for text in visible.all_inner_texts())
            page.screenshot(path=str(tmp_path / "release.png"))
        finally:
            browser.close()
