"""Each page of the published site, from the committed runs: the pick (the latest default run, under
the default weights), the latest matrix, one page per SDK and per SDK release, one per behaviour
(scenario) with every SDK and release side by side, the changelog with each change linked to its
behaviour's page, the field catalogue and the dataset."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Callable
from html import escape
from pathlib import Path

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.dataset import Built
from bench.pick import Weights, lead
from bench.publish.html import link, markdown, page, slug, table
from bench.report import build
from bench.report.changelog import (
    Behaviour,
    behaviours,
    cell_name,
    exception_letters,
    families,
    release_key,
    tallies,
    with_release,
)
from bench.report.field import write_doc
from bench.upgrade.history import render as render_changelog

PROTOCOL_SHORT = {"openai-chat": "chat", "openai-responses": "responses", "anthropic-messages": "anthropic"}
Cell = tuple[str, str, str, bool]
"""mode, variant, protocol, stream."""


def index_page(
    baseline: pd.DataFrame, manifest: dict, weights: Weights, built: Built, sdks: list[str], histories: set[str]
) -> str:
    """The pick first (the decision the site serves), then where everything else is: an SDK with a
    release history links its page, one without (measured at its pin only) its latest grid."""
    report = build(baseline, manifest)
    sections = lead(weights)(report, "latest.html")
    releases = "".join(
        f"<li>{link(f'sdk/{slug(sdk)}.html', sdk)}</li>"
        if sdk in histories
        else f"<li>{link(f'latest.html#{slug(sdk)}', sdk)} (its pinned release only: no history yet)</li>"
        for sdk in sdks
    )
    body = (
        f"<p class=lead>{escape(sections.sentence)}</p>"
        + markdown("\n".join(sections.markdown).replace("## Which SDK and mode to pick", "", 1))
        + f"<p>From the latest default run ({escape(str(manifest.get('suite_id')))}, {len(baseline):,} cells): "
        f"{link('latest.html', 'its matrix')}. Every SDK's releases:</p><ul>{releases}</ul>"
        f"<p>The data behind every page: {link('dataset.html', f'dataset {built.version}')} "
        f"({built.rows:,} cells, parquet and JSON lines, with its datasheet and citation).</p>"
    )
    return page("Which SDK and mode to pick", body)


def grid(frame: pd.DataFrame, sdk: str) -> str:
    """One SDK at one release: a row per scenario (by fault family), a column per mode x variant
    x protocol x stream, each cell the behaviour's short token; the exception letters under it."""
    rows = frame[(frame["sdk"] == sdk) & (frame["outcome"] != Outcome.UNSUPPORTED)]
    if rows.empty:
        return "<p>No supported cell.</p>"
    seen = behaviours(with_release(rows))
    letters = exception_letters(tallies(rows, sdk))
    cells: list[Cell] = sorted({(k[2], k[3], k[4], bool(k[5])) for k in seen})
    family = families(rows)
    scenarios = sorted({k[-1] for k in seen}, key=lambda s: (family.get(s, ""), s))
    by_key = {(k[2], k[3], k[4], bool(k[5]), k[-1]): b for k, b in seen.items()}
    header = ["scenario", *(_cell_header(cell) for cell in cells)]
    body = [
        [escape(s), *(escape(by_key[(*c, s)].token(letters)) if (*c, s) in by_key else "" for c in cells)]
        for s in scenarios
    ]
    legend = ", ".join(f"{tag} {escape(name)}" for name, tag in letters.items())
    legend_line = f"<p>Columns: mode, variant, protocol, streamed. Exceptions: {legend or 'none'}.</p>"
    return table(header, body, raw=True) + legend_line


def _cell_header(cell: Cell) -> str:
    mode, variant, protocol, stream = cell
    streamed = "stream" if stream and variant != "stream" else ""  # as cell_name says it
    parts = [mode, variant, PROTOCOL_SHORT.get(protocol, protocol), streamed]
    return "<br>".join(escape(part) for part in parts if part)


TOKENS = (
    "okN right first time in N calls, rN recovered after N calls, fN the variant's fallback, xN raised after N "
    "calls (the letter names the exception), WN / EN a WRONG / EMPTY answer handed to the caller, LN runaway at "
    "the call cap, T timeout."
)


def latest_page(baseline: pd.DataFrame, sdks: list[str]) -> str:
    sections = "".join(f"<h2 id={slug(sdk)}>{escape(sdk)}</h2>{grid(baseline, sdk)}" for sdk in sdks)
    return page("The latest default run", f"<p>{TOKENS}</p><div id=matrix>{sections}</div>")


def release_page(history: pd.DataFrame, sdk: str, release: str) -> str:
    rows = history[(history["sdk"] == sdk) & (history["release"] == release)]
    body = f"<p>{len(rows):,} cells. {TOKENS} {link(f'../../sdk/{slug(sdk)}.html', f'Every {sdk} release')}.</p>"
    return page(f"{sdk} {release}", body + grid(rows, sdk), depth=2)


def sdk_page(history: pd.DataFrame, sdk: str, changes_html: str, sizes: dict[str, int]) -> str:
    """The SDK's releases (cells, outcomes, the size of each release's page) and its changelog."""
    frame = history[history["sdk"] == sdk]
    rows = []
    for release in sorted(set(frame["release"]), key=release_key):
        cells = frame[frame["release"] == release]
        counts = Counter(cells["outcome"])
        outcomes = ", ".join(f"{outcome} {n}" for outcome, n in counts.most_common())
        href = f"../release/{slug(sdk)}/{slug(release)}.html"
        rows.append([link(href, release), f"{len(cells):,}", escape(outcomes), f"{sizes.get(release, 0):,}"])
    releases = table(["release", "cells", "outcomes", "page bytes"], rows, raw=True)
    return page(sdk, releases + "<h2>Changelog</h2>" + changes_html, depth=1)


def behaviour_page(history: pd.DataFrame, scenario: str) -> str:
    """One scenario: per SDK, a row per cell, a column per release, what the caller got."""
    frame = history[(history["scenario"] == scenario) & (history["outcome"] != Outcome.UNSUPPORTED)]
    seen = behaviours(frame)
    sections = []
    for sdk in sorted(set(frame["sdk"])):
        releases = sorted({k[1] for k in seen if k[0] == sdk}, key=release_key)
        cells = sorted({k[2:7] for k in seen if k[0] == sdk})
        rows = [
            [cell_name(cell), *(_phrase(seen.get((sdk, release, *cell))) for release in releases)] for cell in cells
        ]
        sections.append(f"<h2 id={slug(sdk)}>{escape(sdk)}</h2>" + table(["cell", *releases], rows))
    return page(scenario, "".join(sections) or "<p>No supported cell.</p>", depth=1)


def _phrase(behaviour: Behaviour | None) -> str:
    return behaviour.phrase() if behaviour is not None else ""


def behaviours_page(history: pd.DataFrame) -> str:
    family = families(history)
    scenarios = sorted(set(history["scenario"]), key=lambda s: (family.get(s, ""), s))
    rows = [[link(f"behaviour/{slug(s)}.html", s), escape(family.get(s, ""))] for s in scenarios]
    return page("Behaviours", table(["scenario", "fault family"], rows, raw=True))


CHANGE_LINE = re.compile(r"<li><code>([A-Za-z0-9_]+)</code>")


def changelog_html(history_root: Path) -> dict[str, str]:
    """The changelog as HTML, whole (key ``""``) and per SDK; each change's scenario links to its
    behaviour page at that SDK."""
    text = render_changelog(history_root)
    head, *sections = re.split(r"^## ", text, flags=re.MULTILINE)
    per_sdk = {}
    for section in sections:
        sdk = section.split("\n", 1)[0].strip()
        per_sdk[sdk] = CHANGE_LINE.sub(_linked_to(sdk), markdown("## " + section))
    whole = markdown(head.split("\n", 2)[-1]) + "".join(per_sdk.values())
    return {"": whole, **per_sdk}


def _linked_to(sdk: str) -> Callable[[re.Match[str]], str]:
    """A change's scenario as a link to its behaviour page at ``sdk`` (``{up}``: the way to the
    site's root, filled in per page)."""

    def linked(found: re.Match[str]) -> str:
        scenario = found.group(1)
        return f'<li><a href="{{up}}behaviour/{slug(scenario)}.html#{slug(sdk)}"><code>{scenario}</code></a>'

    return linked


def field_page(field_run: Path) -> str:
    if not (field_run / "manifest.json").is_file():
        return page("Reported in the field", "<p>No committed field run.</p>")
    with tempfile.TemporaryDirectory() as folder:
        text = write_doc(field_run, Path(folder) / "field.md").read_text(encoding="utf-8")
    return page("Reported in the field", markdown(text.split("\n", 1)[-1]))


def dataset_page(built: Built) -> str:
    base = f"dataset/{built.version}"
    files = [[link(f"{base}/{name}", name), f"{size:,}"] for name, size in built.sizes.items()]
    sheet = (built.directory / "datasheet.md").read_text(encoding="utf-8")
    citation = (built.directory / "CITATION.cff").read_text(encoding="utf-8")
    body = (
        f"<p>Version <code>{escape(built.version)}</code>, {built.rows:,} cells. Load it with "
        f"<code>bench.dataset.load(URL_OF_THIS_SITE + '/dataset', version='{escape(built.version)}')</code>.</p>"
        + table(["file", "bytes"], files, raw=True)
        + f"<h2>Cite it</h2><pre>{escape(citation)}</pre>"
        + markdown(sheet.split("\n", 1)[-1])
    )
    return page(f"Dataset {built.version}", body)
