"""A run's report as the three files ``bench report`` writes into the run folder (or ``--out``):
report.md (a PR comment or job summary), report.html (self-contained) and report.json."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from bench.report.claims import CLAIMS_FILE

if TYPE_CHECKING:  # the report's model pulls pandas in; an annotation needs none of it
    from bench.report.build import Report

MARKDOWN_FILE, HTML_FILE, JSON_FILE = "report.md", "report.html", "report.json"


class LeadSections(NamedTuple):
    """What the reports open with, from a layer above (``bench.pick.lead``)."""

    sentence: str
    """The decision in one sentence (``bench.pick.lead_sentence``): the first line under the title."""
    markdown: list[str]
    """report.md's section before the claims (the pick table)."""
    html: str
    """report.html's section before the claims."""


Lead = Callable[["Report", str], LeadSections]
"""The report and report.md's link to the HTML in, the sections the reports open with out."""


def write_report(
    directory: Path,
    out: Path | None = None,
    claims_path: Path = CLAIMS_FILE,
    baseline: Path | None = None,
    html_url: str = HTML_FILE,
    lead: Lead | None = None,
) -> dict[str, Path]:
    """Build the report of the run in ``directory`` (with ``bench gate``'s changes against
    ``baseline``) and write the three forms; report.md links its details to ``html_url``; both
    open with ``lead`` when given."""
    from bench.report import render_html, render_markdown
    from bench.report.build import build_from_run
    from bench.report.matrix import is_sweep, scenario_order

    report, runs = build_from_run(directory, claims_path, baseline)
    scenarios = scenario_order(runs[~is_sweep(runs)])
    target = out or directory
    target.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": target / MARKDOWN_FILE, "html": target / HTML_FILE, "json": target / JSON_FILE}
    opening = lead(report, html_url) if lead else LeadSections("", [], "")
    markdown = render_markdown.render(report, scenarios, html_url, opening.markdown, opening.sentence)
    paths["markdown"].write_text(markdown, encoding="utf-8")
    paths["html"].write_text(render_html.render(report, scenarios, opening.html, opening.sentence), encoding="utf-8")
    paths["json"].write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return paths
