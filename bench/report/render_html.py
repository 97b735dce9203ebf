"""The report as one self-contained HTML page: inline CSS, figures as base64 PNG, no script and
no external URL, so it opens from a CI artifact or an e-mail attachment as it is."""

from __future__ import annotations

import re
from html import escape

import pandas as pd

from bench.core.vocabulary import CODE, USER_FAILURE, WHITE_TEXT
from bench.report import plots
from bench.report.build import Report
from bench.report.matrix import OUTCOME_ORDER, ROW_KEYS
from bench.report.render_markdown import (
    BUDGET_HEADER,
    BUDGET_INTRO,
    COST_HEADER,
    LAYER_HEADER,
    LAYERS_INTRO,
    NEGATIVE_INTRO,
    NO_TOOL_CELLS,
    PERSISTENT_HEADER,
    PERSISTENT_HINT,
    SWEEP_HINT,
    TOOL_CELL_HEADER,
    TOOL_CONTROL,
    TOOL_INTRO,
    TOOL_SUMMARY_HEADER,
    budget_rows,
    cost_rows,
    gap_rows,
    layer_rows,
    persistent_rows,
    shared_failures,
    supported_rows,
    sweep_rows,
    tool_cell_rows,
    tool_summary_rows,
    unsupported_note,
)
from bench.report.terminal import LEGEND, token

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#212121;max-width:none}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 4px} .muted{color:#616161} code{font-size:12px;background:#f5f5f5;padding:0 3px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #e0e0e0;padding:3px 6px;text-align:left;vertical-align:top;white-space:nowrap}
th{background:#fafafa;position:sticky;top:0;z-index:1}
.scroll{overflow:auto;max-height:85vh;border:1px solid #e0e0e0}
.matrix th.scn{writing-mode:vertical-rl;transform:rotate(180deg);height:250px;text-align:left;font-weight:600;
  vertical-align:bottom;padding:2px 1px;font-size:11px}
.matrix td{white-space:nowrap;padding:2px 3px;font-size:11px;line-height:1.25;text-align:center}
.matrix td.key{background:#fafafa;font-weight:600;text-align:left}
table.pick td.list,.findings td:last-child{white-space:normal;min-width:240px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;padding:1px 8px;margin:2px;border-radius:3px;font-size:12px}
.legend code{background:none;color:inherit}
.badge{padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}
.confirmed{background:#c8e6c9;color:#1b5e20}.refuted{background:#ffcdd2;color:#b71c1c}.untested{background:#eeeeee;color:#424242}.partial{background:#e6ee9c;color:#33691e}
blockquote{margin:4px 0 8px;padding:4px 12px;border-left:3px solid #bdbdbd;color:#424242}
ul.cells{margin:2px 0 8px;font-size:12px} img{max-width:100%;height:auto;display:block;margin:8px 0}
nav a{margin-right:12px} table.claims td.says{white-space:normal;min-width:480px}
"""


def _style(outcome: str) -> str:
    colour = plots.COLOURS.get(outcome, "#ffffff")
    return f"background:{colour};color:{'#fff' if outcome in WHITE_TEXT else '#212121'}"


def _table(header: list[str], rows: list[list[object]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if i in numeric else ''}>{escape(str(v))}</td>" for i, v in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _image(figure: object, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{plots.png_base64(figure)}">'  # type: ignore[arg-type]


def matrix_html(report: Report, scenarios: list[str]) -> str:
    cells = {(c.sdk, c.mode, c.variant, c.scenario): c for c in report.matrix}
    keys, hidden = supported_rows(report)
    head = "".join(f"<th>{k}</th>" for k in ROW_KEYS) + "".join(f'<th class="scn">{escape(s)}</th>' for s in scenarios)
    rows = []
    for key in keys:
        tds = "".join(f'<td class="key">{escape(k)}</td>' for k in key)
        for scenario in scenarios:
            cell = cells.get((*key, scenario))
            if cell is None:
                tds += "<td></td>"
                continue
            counts = ", ".join(f"{o} {n}" for o, n in cell.outcomes.items())
            title = f"{scenario}: {cell.label}{' (rows disagree)' if cell.mixed else ''}; {counts}"
            tds += f'<td style="{_style(cell.outcome)}" title="{escape(title)}">{escape(token(cell.model_dump()))}</td>'
        rows.append(f"<tr>{tds}</tr>")
    codes = {o: escape(CODE.get(o, o)) for o in OUTCOME_ORDER}
    legend = "".join(f'<span style="{_style(o)}">{o} <code>{codes[o]}</code></span>' for o in OUTCOME_ORDER)
    legend += "".join(f"<br>{escape(line)}" for line in LEGEND[:3])
    note = f'<p class="muted">{escape(unsupported_note(hidden))}</p>' if hidden else ""
    return (
        f'<p class="legend">{legend}</p>{note}<div class="scroll"><table class="matrix"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def cost_html(report: Report) -> str:
    if not report.cost_summary:
        return "<p>No fault cell has a <code>valid</code> control in this run.</p>"
    rows = cost_rows(report)
    note = ""
    if report.uncontrolled_scenarios:
        note = (
            "<p class=muted>Not compared (task ticket_triage has no control in the library): "
            + ", ".join(f"<code>{escape(s)}</code>" for s in report.uncontrolled_scenarios)
            + ".</p>"
        )
    summary = pd.DataFrame([c.model_dump() for c in report.cost_summary])
    return (
        "<p>Extra model calls and billed tokens against the same cell's control (<code>valid</code> for person, "
        "<code>expense_valid</code> for expense_report"
        + (escape(TOOL_CONTROL.replace("`", "")) if report.tool_task_rows else "")
        + "), paired by protocol, stream and rep.</p>"
        + note
        + _table(
            COST_HEADER,
            rows,
            set(range(3, 10)),
        )
        + (
            f"<p>{escape(NEGATIVE_INTRO)}</p><ul>"
            + "".join(f"<li>{escape(n)}</li>" for n in report.negative_cost_notes)
            + "</ul>"
            if report.negative_cost_notes
            else ""
        )
        + _image(plots.cost_bars(summary), "extra calls and tokens per SDK x mode x variant")
    )


def gap_html(report: Report) -> str:
    rows = gap_rows(report)
    frame = pd.DataFrame([g.model_dump() for g in report.token_gap_families])
    image = _image(plots.token_gap_bars(frame), "billed vs reported tokens per fault family") if not frame.empty else ""
    return (
        _table(
            ["sdk", "result", "cells", "no usage", "billed", "reported", "unreported", "unreported %"],
            rows,
            set(range(2, 8)),
        )
        + image
    )


def _text(markdown: str) -> str:
    """A line of the markdown report as HTML: escaped, with its `code` spans."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", escape(markdown))


def tool_html(report: Report) -> str:
    if not report.tool_cells:
        return f"<p>{_text(NO_TOOL_CELLS)}</p>"
    parts = [f"<p>{_text(TOOL_INTRO)}</p>", _table(TOOL_SUMMARY_HEADER, tool_summary_rows(report), {1, 4})]
    if report.tool_budget:
        parts += [f"<p>{_text(BUDGET_INTRO)}</p>", _table(BUDGET_HEADER, budget_rows(report))]
    parts += [
        "<details><summary>Per cell and tool scenario</summary>",
        _table(TOOL_CELL_HEADER, tool_cell_rows(report), {5, 6, 9}),
        "</details>",
    ]
    return "".join(parts)


def layers_html(report: Report) -> str:
    parts = [f"<p>{_text(LAYERS_INTRO)}</p>", _table(LAYER_HEADER, layer_rows(report), {6, 7, 8, 9})]
    parts.append("<h3>Persistent transport faults</h3>")
    if report.persistent_faults:
        parts.append(_table(PERSISTENT_HEADER, persistent_rows(report), {5, 8}))
    else:
        parts.append(f"<p>{_text(PERSISTENT_HINT)}</p>")
    return "".join(parts)


def checks_html(report: Report) -> str:
    """Each claim's words, source and checks with their deciding cells (the slugs link here)."""
    parts = []
    for claim in report.claims:
        parts.append(
            f'<h3 id="{escape(claim.id)}"><code>{escape(claim.id)}</code> '
            f'<span class="badge {claim.verdict}">{claim.verdict}</span></h3>'
            f"<blockquote>{escape(claim.claim)}"
            + (f"<br><span class=muted>Source: {escape(claim.source)}</span>" if claim.source else "")
            + "</blockquote><ul>"
        )
        for check in claim.checks:
            lines = check.counter or check.evidence[:5]
            more = len(check.evidence) - 5 if not check.counter and len(check.evidence) > 5 else 0
            items = "".join(f"<li><code>{escape(line)}</code></li>" for line in lines)
            items += f"<li class=muted>and {more} more agreeing</li>" if more else ""
            parts.append(
                f'<li><span class="badge {check.verdict}">{check.verdict}</span> ({check.cells} cells) '
                f'{escape(check.says)}<ul class="cells">{items}</ul></li>'
            )
        parts.append("</ul>")
    return "".join(parts)


def _badge_table(report: Report) -> str:
    rows = "".join(
        f'<tr><td><a href="#{escape(c.id)}"><code>{escape(c.id)}</code></a></td><td>{escape(c.sdk)}</td>'
        f'<td><span class="badge {c.verdict}">{c.verdict}</span></td><td class=says>{escape(c.claim)}</td></tr>'
        for c in report.claims
    )
    head = "<th>claim</th><th>sdk</th><th>verdict</th><th>says</th>"
    return f"<table class=claims><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def sweep_html(report: Report) -> str:
    if not report.sweep:
        return f"<p>{escape(SWEEP_HINT)}</p>"
    rows = sweep_rows(report)
    frame = pd.DataFrame([s.model_dump() for s in report.sweep])
    intro = (
        "<p>Per attempt the fake model draws a fault at the given rate (the rest is valid), the same draws for "
        "every SDK. User-visible = <code>wrong</code> or <code>empty</code>; success = <code>ok</code> or "
        "<code>recovered</code>; 95% Wilson intervals over n = reps (protocols share a rep's draws); tokens per "
        "success = all billed tokens / successful answers.</p>"
    )
    return (
        intro
        + _image(plots.sweep_curves(frame), "fault-rate sweep curves")
        + _table(
            [
                "faults",
                *ROW_KEYS,
                "fault rate",
                "n (reps)",
                "rows",
                "user-visible failure (95% Wilson)",
                "success (95% Wilson)",
                "calls/cell",
                "tokens/success",
            ],
            rows,
            set(range(4, 11)),
        )
    )


def _first_outcome(text: str) -> str:
    words = text.split(" ")
    return words[1] if len(words) > 1 and words[0].isdigit() else words[0]


def releases_html(report: Report) -> str:
    """Per SDK run in several releases: a release x scenario grid coloured by outcome, then the
    cells that changed from one release to the next (``bench changelog`` in markdown)."""
    parts = []
    for grid in report.releases:
        head = "".join(f"<th>{escape(s)}</th>" for s in ["release", *grid.scenarios])
        body = ""
        for release, cells in zip(grid.releases, grid.cells, strict=True):
            # A split cell reads "8 recovered (2) | 8 raised X (2)": coloured by its first behaviour.
            tds = "".join(f'<td style="{_style(_first_outcome(text))}">{escape(text)}</td>' for text in cells)
            body += f"<tr><th>{escape(release)}</th>{tds}</tr>"
        parts.append(f"<h3>{escape(grid.sdk)}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        if grid.changes:
            rows: list[list[object]] = [[c.before, c.after, c.cell, c.scenario, c.was, c.now] for c in grid.changes]
            parts.append(_table(["from", "to", "cell", "scenario", "before", "after"], rows))
    return "".join(parts)


def findings_html(report: Report) -> str:
    """The failures handed to the user: one SDK's or mode's apart from every SDK's."""
    shared = shared_failures(report)
    specific: dict[tuple[str, str, str], list[str]] = {}
    for cell in report.matrix:
        if cell.scenario not in shared and any(cell.outcomes.get(o, 0) for o in USER_FAILURE):
            specific.setdefault((cell.sdk, cell.mode, cell.variant), []).append(cell.scenario)
    rows: list[list[object]] = [[*key, ", ".join(scenarios)] for key, scenarios in sorted(specific.items())]
    parts = [
        "<p>Cells where the caller got a WRONG or EMPTY answer with no exception.</p><h3>Specific to some SDKs or "
        "modes</h3>",
        _table([*ROW_KEYS, "scenarios"], rows) if rows else "<p>None in this run.</p>",
    ]
    if shared:
        items = "".join(
            f"<li><code>{escape(s)}</code>" + (f"; not handed on by {escape(', '.join(e))}" if e else "") + "</li>"
            for s, e in shared.items()
        )
        parts.append(f"<h3>Shared by every SDK</h3><p>Each default variant hands it on.</p><ul>{items}</ul>")
    return f"<div class=findings>{''.join(parts)}</div>"


def field_html(report: Report) -> str:
    """The field catalogue's verdicts (bench.report.field), each SDK's cells behind its verdict
    listed under the table by outcome."""
    sdks = list(report.field[0]["sdks"]) if report.field else []
    with_release = any(row["release"] for row in report.field)
    header = [
        "scenario",
        "source",
        "reported",
        "symptom",
        *sdks,
        *(["at the reported release"] if with_release else []),
    ]
    rows = [
        [row["scenario"] + (f" ({', '.join(row['modes'])} mode)" if row["modes"] else ""), row["source"],
         row["reported"], row["symptom"], *(row["sdks"][sdk] for sdk in sdks),
         *([row["release"] or "-"] if with_release else [])]
        for row in report.field
    ]  # fmt: skip
    details = "".join(
        f"<details><summary>{escape(row['scenario'])}: the cells</summary><ul>"
        + "".join(
            f"<li>{escape(sdk)}: "
            + "; ".join(f"{escape(outcome)} ({len(ids)}): {escape(', '.join(ids))}" for outcome, ids in cells.items())
            + "</li>"
            for sdk, cells in row["cells"].items()
            if cells
        )
        + "</ul></details>"
        for row in report.field
    )
    return _table(header, rows) + details


def render(report: Report, scenarios: list[str], lead: str = "", sentence: str = "") -> str:
    """The page: the decision in one ``sentence``, the pick (``lead``), the claims in their words,
    the findings, then the cells."""
    shown, _ = supported_rows(report)
    cells = pd.DataFrame([c.model_dump() for c in report.matrix if (c.sdk, c.mode, c.variant) in set(shown)])
    heatmap = _image(plots.landing_heatmap(cells, scenarios), "landing matrix heatmap") if not cells.empty else ""
    versions = ", ".join(f"{escape(k)} {escape(v or '?')}" for k, v in report.sdk_versions.items())
    totals = ", ".join(f"{k} {v}" for k, v in report.outcomes.items())
    sections = [
        *([("pick", "Which SDK and mode to pick", lead)] if lead else []),
        ("claims", "Published claims, checked", _badge_table(report)),
        ("findings", "Failures handed to the user", findings_html(report)),
        ("matrix", "Where the failure landed", matrix_html(report, scenarios) + heatmap),
        ("cost", "The cost of failure", cost_html(report)),
        ("tokens", "Billed vs SDK-reported tokens", gap_html(report)),
        *([("tools", "Tool failures", tool_html(report))] if report.tool_task_rows else []),
        *([("layers", "Retry layers", layers_html(report))] if report.retry_layers else []),
        ("checks", "The claims' checks and their cells", checks_html(report)),
        ("sweep", "Fault-rate sweep", sweep_html(report)),
        *([("releases", "Releases", releases_html(report))] if report.releases else []),
        *([("field", "Reported in the field", field_html(report))] if report.field else []),
    ]
    nav = "".join(f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title, _ in sections)
    body = "".join(f'<h2 id="{anchor}">{escape(title)}</h2>{html}' for anchor, title, html in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>misfit-bench report {escape(report.suite_id)}</title>"
        f"<style>{CSS}</style></head><body><h1>misfit-bench report</h1>"
        + (f'<p class="lead"><strong>{escape(sentence)}</strong></p>' if sentence else "")
        + f'<p class="muted">Run <code>{escape(report.suite_id)}</code>: {report.rows} rows ({escape(totals)}). '
        f"SDKs: {versions}.</p>"
        f"<nav>{nav}</nav>{body}</body></html>\n"
    )
