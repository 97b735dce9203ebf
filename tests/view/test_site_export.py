"""`bench view --export` writes compressed packs, not a file per cell (issue 30, point 4): a
two-SDK merge once exported 7,552 files and 46 MB. Each pack holds ``PACK_CELLS`` cells' documents
as gzipped JSON in base64; every cell's document comes back out of its pack unchanged, and the
pages open cells of every pack from file:// in headless system Chromium (as tests/test_view.py).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.view import site as site_module
from bench.view.site import Site, export
from bench.view.testing import chromium_path, demo_runs, launch

SLOW_FIXTURES = ("run",)
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

PACK = 3
"""Cells to a pack here: small, so the demo run's cells fill several packs and a last part one."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_runs(tmp_path_factory.mktemp("export-runs"), sdks=("pydantic-ai",))[0]


@pytest.fixture
def exported(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Site, Path]:
    monkeypatch.setattr(site_module, "PACK_CELLS", PACK)
    site = Site([run])
    export(site, tmp_path / "site")
    return site, tmp_path / "site"


def _unpack(path: Path) -> dict[str, object]:
    found = re.fullmatch(r'benchPack\("([^"]+)","([A-Za-z0-9+/=]+)"\);\n', path.read_text(encoding="utf-8"))
    assert found is not None, path.read_text(encoding="utf-8")[:200]
    return json.loads(gzip.decompress(base64.b64decode(found.group(2))))


@pytest.mark.slow
def test_cells_are_packed_and_come_back_unchanged(exported: tuple[Site, Path], run: Path) -> None:
    site, out = exported
    cells = len(site.runs[run.name].groups)
    assert cells > 2 * PACK
    folder = out / "data" / "run" / run.name
    assert not (folder / "cell").exists()
    packs = sorted(folder.glob("cells/*.js"), key=lambda p: int(p.stem))
    assert [p.stem for p in packs] == [str(k) for k in range(-(-cells // PACK))]
    unpacked: dict[str, object] = {}
    for pack in packs:
        unpacked |= _unpack(pack)
    assert unpacked == {f"run/{run.name}/cell/{i}": site.document(f"run/{run.name}/cell/{i}") for i in range(cells)}
    assert 'data-pack-cells="3"' in (out / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def browser(run: Path) -> Iterator[object]:
    """After ``run``: sync_playwright holds an event loop, in which run_suite cannot start its own."""
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.mark.slow
def test_the_export_opens_cells_of_every_pack_from_files(browser, exported: tuple[Site, Path], run: Path) -> None:
    """The first, a middle and the last cell (its pack part full), each opened from file://, show
    their reps and as many attempts as their documents hold."""
    site, out = exported
    cells = len(site.runs[run.name].groups)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    for index in (0, PACK + 1, cells - 1):
        document = site.document(f"run/{run.name}/cell/{index}")
        assert document is not None
        page.goto(out.joinpath("index.html").as_uri() + f"#/run/{run.name}")
        page.locator(f'td.cell[data-i="{index}"]').click()
        panel = page.locator("#panel")
        panel.locator(".rep").first.wait_for()
        assert panel.locator(".rep").count() == len(document["reps"])
        attempts = sum(len(rep["attempts"]) for rep in document["reps"])
        assert panel.locator("details.attempt").count() == attempts
    page.close()
