"""`bench view` in a real browser: headless system Chromium driven by Playwright, against the app
served on loopback with two real runs (bench.view.testing.demo_runs: pydantic-ai and langchain on
openai-chat, then the same with a call cap of 1). One server and one browser for the module.

CI installs Chromium (.ci/run, apt-get); without it these tests skip locally and fail under CI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.view import data
from bench.view.site import Site, ViewError, export, script
from bench.view.testing import browser_page, demo_runs, serving
from tests.paths import REPO
from tests.ticket_agent import TICKET_MODEL

SLOW_FIXTURES = ("runs", "own_run")
"""Built once for this module's tests, in seconds to minutes: their users are ``slow`` (tests/conftest.py)."""

PYDANTIC_AI_REASK = "Your previous response failed the application's validation"
"""How pydantic-ai frames the validation errors it feeds back as a user message outside tool
mode (``_RETRY_FEEDBACK_FRAMING``, pydantic_ai/messages.py:2800 in 2.68.0)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return demo_runs(tmp_path_factory.mktemp("view-runs"))


@pytest.fixture(scope="module")
def site(runs: tuple[Path, Path]) -> Site:
    return Site(list(runs))


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[object]:
    with browser_page(site, 1500, 1000) as page:
        yield page


TWO_AGENTS = """
from pydantic_ai import Agent
sound = Agent("openai:gpt-4.1", output_type=Ticket, retries=2)
weak = Agent("openai:gpt-4.1", output_type=Ticket, retries=0)
"""


@pytest.fixture(scope="module")
def own_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of two of a user's own agents on one SDK (pydantic-ai, both variant ``own``):
    ``sound`` recovers from malformed JSON with its retry budget, ``weak`` (retries=0) raises."""
    import uuid

    project = tmp_path_factory.mktemp("own-agents")
    module = f"view_agents_{uuid.uuid4().hex[:8]}"  # imported modules are cached per process
    (project / f"{module}.py").write_text(TICKET_MODEL + TWO_AGENTS, encoding="utf-8")
    args = ["run", "--agent", f"{module}:sound", "--agent", f"{module}:weak", "--scenario", "valid"]
    args += ["--scenario", "malformed_then_valid", "--out", str(project / "results")]
    # a process of its own, as a user runs it: the first test to ask may hold Playwright's running
    # loop (its `page`), where `bench run`'s asyncio.run cannot start in this one
    env = os.environ | {"PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "bench.cli", *args], cwd=project, env=env,
                            capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return data.discover(project / "results")[0][0]


def test_two_own_agents_of_one_sdk_are_two_rows(own_run: Path) -> None:
    """Both agents are pydantic-ai/tool/own/openai-responses: the view labels them as the report does
    (bench.results.labels.label_agents), so each is a row of its own, not one cell voting over both."""
    site = Site([own_run])
    matrix = site.document(f"run/{own_run.name}/matrix")
    assert matrix is not None
    assert [row["sdk"] for row in matrix["rows"]] == ["sound (pydantic-ai)", "weak (pydantic-ai)"]
    outcomes = {(matrix["rows"][c["row"]]["sdk"], c["scenario"]): (c["outcome"], c["reps"]) for c in matrix["cells"]}
    assert outcomes[("sound (pydantic-ai)", "malformed_then_valid")] == ("recovered", 1)
    assert outcomes[("weak (pydantic-ai)", "malformed_then_valid")] == ("raised", 1)
    weak = next(c["i"] for c in matrix["cells"] if c["outcome"] == "raised")
    cell = site.document(f"run/{own_run.name}/cell/{weak}")
    assert cell is not None and cell["key"]["sdk"] == "weak (pydantic-ai)" and len(cell["reps"]) == 1
    assert data.compare(site.runs[own_run.name], site.runs[own_run.name])["compared"] == 4


@pytest.mark.browser
def test_two_own_agents_in_the_browser(page, own_run: Path) -> None:
    with serving(Site([own_run])) as url:
        page.goto(url + f"#/run/{own_run.name}")
        page.locator("#matrix tbody tr").first.wait_for()
        rows = page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.sdk)")
    assert rows == ["sound (pydantic-ai)", "weak (pydantic-ai)"]


@pytest.fixture(scope="module")
def results_with_a_broken_run(own_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results root holding the own-agent run and a run whose manifest is not JSON."""
    import shutil

    root = tmp_path_factory.mktemp("broken-results")
    shutil.copytree(own_run, root / own_run.name)
    (root / "20200101-000000-dead").mkdir()
    (root / "20200101-000000-dead" / "manifest.json").write_text("{not json", encoding="utf-8")
    return root


def test_an_unreadable_run_is_skipped_with_a_warning_and_listed(
    results_with_a_broken_run: Path, own_run: Path, tmp_path: Path
) -> None:
    """One unreadable manifest no longer keeps every run from the view (exit 2 before): it is
    named on stderr in one line and listed on the runs page with bench runs' status."""
    from typer.testing import CliRunner

    from bench.cli import app

    out = tmp_path / "site"
    result = CliRunner().invoke(app, ["view", "--results", str(results_with_a_broken_run), "--export", str(out)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"bench view: skipped run 20200101-000000-dead, unreadable: {results_with_a_broken_run}"
        "/20200101-000000-dead/manifest.json: unreadable manifest: Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)"
    ]
    runs = json.loads((out / "data" / "runs.js").read_text()[len('benchData("runs",') : -3])
    assert [r["id"] for r in runs["runs"]] == [own_run.name]
    assert [r["id"] for r in runs["unreadable"]] == ["20200101-000000-dead"]
    assert runs["unreadable"][0]["status"].startswith("unreadable: ")


@pytest.mark.browser
def test_an_unreadable_run_on_the_runs_page(page, results_with_a_broken_run: Path, own_run: Path) -> None:
    directories, unreadable = data.discover(results_with_a_broken_run)
    with serving(Site(directories, unreadable)) as url:
        page.goto(url + "#/")
        page.locator("#runs tbody tr").first.wait_for()
        listed = page.locator("#runs tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.run || r.dataset.unreadable)"
        )
        status = page.locator('#runs tr[data-unreadable="20200101-000000-dead"]').inner_text()
    assert listed == [own_run.name, "20200101-000000-dead"]
    assert "unreadable manifest" in status


def cell_index(site: Site, run: Path, sdk: str, mode: str, variant: str, scenario: str) -> int:
    wanted = (sdk, mode, variant, "openai-chat", scenario)  # any release: these runs hold one per SDK
    return next(i for i, (key, _) in enumerate(site.runs[run.name].groups) if (key[0], *key[2:]) == wanted)


@pytest.mark.browser
def test_the_runs_page_lists_both_runs(page, runs: tuple[Path, Path]) -> None:
    page.goto(page.base_url + "#/")
    rows = page.locator("#runs tbody tr")
    rows.first.wait_for()
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.run)")) == sorted(r.name for r in runs)


@pytest.mark.browser
def test_filter_the_matrix_to_one_sdk(page, runs: tuple[Path, Path]) -> None:
    from playwright.sync_api import expect

    page.goto(page.base_url + f"#/run/{runs[0].name}")
    page.locator("#matrix").wait_for()
    assert set(page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.sdk)")) == {
        "langchain",
        "pydantic-ai",
    }
    page.locator('fieldset[data-facet="sdk"] button[data-value="langchain"]').click()
    page.wait_for_url(re.compile(r"sdk=langchain"))
    # The hash changes before the matrix re-renders (the route handler awaits the document): wait
    # for the rendered rows, not for the URL.
    expect(page.locator('#matrix tbody tr[data-sdk="pydantic-ai"]')).to_have_count(0)
    sdks = page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.sdk)")
    assert sdks and set(sdks) == {"langchain"}
    assert (
        page.locator('fieldset[data-facet="sdk"] button[data-value="langchain"]').get_attribute("aria-pressed")
        == "true"
    )


@pytest.mark.browser
def test_a_failed_cell_shows_the_sdks_reask_in_the_request_body(page, site: Site, runs: tuple[Path, Path]) -> None:
    """pydantic-ai's native mode on malformed_then_valid: attempt #0 served malformed JSON, and the
    request of attempt #1 carries the re-ask pydantic-ai wrote, shown as what it added."""
    index = cell_index(site, runs[0], "pydantic-ai", "native", "default", "malformed_then_valid")
    page.goto(page.base_url + f"#/run/{runs[0].name}?sdk=pydantic-ai")
    page.locator(f'td.cell[data-i="{index}"]').click()
    panel = page.locator("#panel")
    panel.locator(".rep").first.wait_for()
    attempts = panel.locator("details.attempt")
    assert attempts.count() == 2
    assert "#0 malformed" in attempts.nth(0).locator("summary").first.inner_text()
    added = attempts.nth(1).locator("pre.added")
    assert PYDANTIC_AI_REASK in added.inner_text()
    assert PYDANTIC_AI_REASK in attempts.nth(1).locator("pre.request").text_content()
    assert '"choices"' in attempts.nth(1).locator("pre.response").text_content()


@pytest.mark.browser
def test_two_runs_side_by_side(page, runs: tuple[Path, Path]) -> None:
    page.goto(page.base_url + "#/")
    page.locator("#runs tbody tr").first.wait_for()
    for run in runs:
        page.locator(f'#runs tr[data-run="{run.name}"] input[type="checkbox"]').check()
    page.locator("#compare").click()
    page.wait_for_url(re.compile(r"#/compare/"))
    changed = page.locator("#changed tbody tr")
    changed.first.wait_for()
    texts = changed.evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.innerText))")
    # sdk, release, mode, variant, protocol, family, scenario, before, after
    recovered = [
        t for t in texts if (t[0], *t[2:4]) == ("pydantic-ai", "tool", "default") and t[6] == "malformed_then_valid"
    ]
    assert recovered and recovered[0][7:] == ["r2", "L1"], texts[:5]


@pytest.mark.browser
def test_the_export_opens_from_files(page, site: Site, runs: tuple[Path, Path], tmp_path: Path) -> None:
    """`bench view --export DIR`: the same pages read the same documents from a folder (file://)."""
    count = export(site, tmp_path / "site")
    assert count == len(list((tmp_path / "site").rglob("*.*")))
    page.goto((tmp_path / "site" / "index.html").as_uri() + f"#/run/{runs[1].name}")
    page.locator("#matrix tbody tr").first.wait_for()
    assert page.locator("td.cell").count() == len(site.runs[runs[1].name].groups)


def test_documents_are_scripts_that_cannot_end_early() -> None:
    text = script("runs", {"x": "</script><b>"})
    assert "</script>" not in text and json.loads(text[len('benchData("runs",') : -3]) == {"x": "</script><b>"}


@pytest.mark.slow
def test_the_reask_is_what_the_request_added(runs: tuple[Path, Path]) -> None:
    """Without a browser: the document of the cell says what each request added to the
    conversation, and a transport retry (the same body again) says so."""
    run = data.Run(runs[0])

    def attempts_of(mode: str) -> list[dict]:
        key = ("pydantic-ai", mode, "default", "openai-chat", "malformed_then_valid")
        return data.cell(run, next(i for i, (k, _) in enumerate(run.groups) if (k[0], *k[2:]) == key))["reps"][0][
            "attempts"
        ]

    attempts = attempts_of("native")
    assert [a["behaviour"] for a in attempts] == ["malformed:trailing_comma", "valid"]
    assert "added" not in attempts[0] and PYDANTIC_AI_REASK in attempts[1]["added"]
    tool_mode = ("pydantic-ai", "tool", "default", "openai-chat", "malformed_then_valid")
    tool_attempts = data.cell(run, next(i for i, (k, _) in enumerate(run.groups) if (k[0], *k[2:]) == tool_mode))[
        "reps"
    ][0]["attempts"]
    assert '"role": "tool"' in tool_attempts[1]["added"] and "json_invalid" in tool_attempts[1]["added"]


def test_the_command_exports_and_refuses_bad_input(runs: tuple[Path, Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    cli = CliRunner()
    result = cli.invoke(app, ["view", str(runs[0]), str(runs[1]), "--export", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out" / "index.html").exists() and (tmp_path / "out" / "data" / "runs.js").exists()
    assert (tmp_path / "out" / "data" / "compare" / runs[0].name / f"{runs[1].name}.js").exists()
    assert result.stdout.startswith(str(tmp_path / "out" / "index.html"))
    missing = cli.invoke(app, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: ") and len(missing.stderr.splitlines()) == 1
    exposed = cli.invoke(app, ["view", str(runs[0]), "--host", "0.0.0.0"])
    assert exposed.exit_code == 2 and "loopback only" in exposed.stderr


def test_a_run_named_twice_is_refused(runs: tuple[Path, Path]) -> None:
    with pytest.raises(ViewError, match="two runs named"):
        Site([runs[0], runs[0]])


@pytest.mark.browser
def test_the_pages_take_white_text_outcomes_from_the_document(
    page, site: Site, runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """The outcomes with white text are bench.core.vocabulary.WHITE_TEXT, sent in the documents (as the
    colours are), not a copy in app.js: an export whose matrix says otherwise is drawn that way."""
    from bench.core.vocabulary import WHITE_TEXT

    matrix = site.document(f"run/{runs[0].name}/matrix")
    assert matrix is not None and matrix["dark"] == sorted(WHITE_TEXT)
    export(site, tmp_path / "site")
    path = tmp_path / "site" / "data" / "run" / runs[0].name / "matrix.js"
    path.write_text(script(f"run/{runs[0].name}/matrix", matrix | {"dark": ["recovered"]}), encoding="utf-8")
    page.goto((tmp_path / "site" / "index.html").as_uri() + f"#/run/{runs[0].name}")
    page.locator("#matrix").wait_for()
    legend = page.locator(".legend span[style]").evaluate_all(
        "spans => Object.fromEntries(spans.map(s => [s.textContent, getComputedStyle(s).color]))"
    )
    assert legend["recovered"] == "rgb(255, 255, 255)" and legend["ok"] == "rgb(31, 35, 40)"
