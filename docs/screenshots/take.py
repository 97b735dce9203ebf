"""Take the screenshots of `bench view` and `bench publish` in docs/screenshots/ (run: make screenshots).

Makes two small real runs (bench.view.testing.demo_runs: pydantic-ai and langchain on openai-chat,
the second with a call cap of 1), serves them on loopback and photographs, in headless system
Chromium: the runs page, one run's matrix filtered to pydantic-ai, a cell's attempts with the
re-ask pydantic-ai sent, and the two runs side by side. Then publishes the committed runs
(bench.publish) and photographs the site's pick, a release's grid filtered to the refusals, and
one behaviour across every SDK and release. Rerun after a change to the pages.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.view.site import Site
from bench.view.testing import demo_runs, launch, serving

HERE = Path(__file__).resolve().parent


def take(out: Path = HERE) -> list[Path]:
    with tempfile.TemporaryDirectory() as scratch:
        before, after = demo_runs(Path(scratch))
        site = Site([before, after])
        native = ("pydantic-ai", "native", "default", "openai-chat", "malformed_then_valid")
        index = next(i for i, (key, _) in enumerate(site.runs[before.name].groups) if key == native)
        shots = [
            ("runs.png", "#/", "#runs tbody tr"),
            ("matrix.png", f"#/run/{before.name}?sdk=pydantic-ai", "#matrix tbody tr"),
            ("cell.png", f"#/run/{before.name}/cell/{index}?sdk=pydantic-ai", "#panel pre.added"),
            ("compare.png", f"#/compare/{before.name}/{after.name}", "#changed tbody tr"),
        ]
        written = []
        with serving(site) as url, sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            for name, route, ready in shots:
                page.goto(f"{url}{route}")
                page.locator(ready).first.wait_for()
                if name == "cell.png":
                    page.locator("#panel pre.added").first.scroll_into_view_if_needed()
                page.screenshot(path=out / name)
                written.append(out / name)
            browser.close()
    return written


def take_published(out: Path = HERE) -> list[Path]:
    from bench.pick import resolve_weights
    from bench.publish import publish

    shots = [
        ("publish-pick.png", "index.html", ""),
        ("publish-release.png", "release/pydantic-ai/2.0.0.html", "refusal"),
        ("publish-behaviour.png", "behaviour/refusal_then_valid.html", ""),
    ]
    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
        site = publish(Path(scratch) / "site", resolve_weights(Path(scratch), [])).out
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        for name, file, words in shots:
            page.goto((site / file).as_uri())
            if words:
                page.fill("input.filter", words)
            page.screenshot(path=out / name)
        browser.close()
    return [out / name for name, _, _ in shots]


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for path in [*take(where), *take_published(where)]:
        print(path)
