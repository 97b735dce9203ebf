"""The decision table as text: a 120-column terminal, markdown (report.md, ``--markdown``) and
HTML (report.html). ``--json`` is :class:`bench.pick.table.Pick` dumped."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from bench.pick.table import FamilyResult, Pick, PickRow, row_name, tied_with_top
from bench.pick.weights import Weights
from bench.report.build import Report
from bench.report.files import LeadSections

if TYPE_CHECKING:
    from bench.report.files import Lead

WIDTH = 120
SHORT = {
    "control": "ctrl",
    "malformed": "malf",
    "schema_violation": "schm",
    "wrong": "wrong",
    "truncated": "trunc",
    "refusal": "refus",
    "prose": "prose",
    "http_error": "http",
    "slow": "slow",
    "tool": "tool",
    "parallel": "par",
}
"""Family column headings (the full names in the legend)."""
CODES = (
    "ok = right first time, rN = recovered after N calls, fN = the variant's fallback, xN = raised to the caller, "
    "WN / EN = a WRONG / EMPTY answer handed to the user, LN = runaway at the call cap, T = timeout; "
    "per family the worst outcome any row reached, by the score's weights (* = not every row of that cell, "
    "+ = its scenarios ended differently)"
)
HTML_FILE = "report.html"


def score_line(pick: Pick) -> str:
    return (
        f"score = mean penalty per measured cell, lower is better, under weights {pick.weights.text()} "
        "(a cell pays its outcome's weight by its share of rows, plus extra_call per extra model call and "
        "extra_ktokens per 1,000 extra billed tokens over its control; set them in [tool.bench.pick] or --weight)"
    )


def _and(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def deciding_families(top: PickRow, other: PickRow, most: int = 3) -> list[str]:
    """The families that put ``top`` ahead of ``other``: those whose cells add less to its score
    than to the other's (mean penalty x the family's share of the row's cells), largest gap first."""

    def share(row: PickRow, family: str) -> float:
        result = row.families.get(family)
        return result.penalty * result.scenarios / row.cells if result else 0.0

    gaps = {f: share(other, f) - share(top, f) for f in {*top.families, *other.families}}
    return [f for f in sorted(gaps, key=lambda f: -gaps[f]) if gaps[f] > 0][:most]


def _versus(top: FamilyResult | None, other: FamilyResult | None) -> str:
    def side(result: FamilyResult | None) -> str:
        return f"{result.token} at {result.penalty:.2f}" if result else "none"

    return f"{side(top)} a cell against {side(other)}"


def lead_sentence(pick: Pick) -> str:
    """The one sentence ``bench pick``, report.md, report.html and ``bench view`` open with: the
    pick, the families that put it ahead of the next row the run tells apart from it, and the rows
    it cannot (:func:`bench.pick.table.tied_with_top`)."""
    if not pick.rows:
        return "Nothing to pick: no SDK x mode of this run measured a cell."
    top, tied = pick.rows[0], tied_with_top(pick)
    weights = "the default weights" if pick.weights == Weights() else f"weights {pick.weights.text()}"
    text = f"Pick {row_name(top)}: score {top.score:.2f} (lower is better), the lowest of {len(pick.rows)} rows"
    text += f" under {weights}"
    if rest := pick.rows[1 + len(tied) :]:
        other = rest[0]
        text += f", ahead of {row_name(other)} ({other.score:.2f})"
        if decided := deciding_families(top, other):
            text += " on " + _and([f"{f} ({_versus(top.families.get(f), other.families.get(f))})" for f in decided])
    if tied:
        names = _and([f"{row_name(r)} ({r.score:.2f})" for r in tied])
        text += f"; tied within the run's noise with {names}, which the run cannot tell from it"
    return text + "."


def _num(value: float | None, digits: int = 1, sign: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+,.{digits}f}" if sign else f"{value:,.{digits}f}"


LANGUAGE = {"python": "py", "typescript": "ts"}
"""The ``lang`` column: which language the row's SDK is used from."""


def _cells(pick: Pick, row: PickRow) -> list[str]:
    """The row's values, in the order of :func:`_header` (without raises / handed)."""
    key = [str(row.rank), row.sdk, LANGUAGE.get(row.language, row.language), row.mode]
    key += [row.variant] if pick.variants == "all" else []
    families = [row.families[f].token if f in row.families else "-" for f in pick.families]
    return [*key, f"{row.score:.2f}", *families, _num(row.mean_extra_calls), _num(row.mean_extra_tokens, 0)]


def _header(pick: Pick) -> list[str]:
    key = ["#", "sdk", "lang", "mode", *(["variant"] if pick.variants == "all" else [])]
    return [*key, "score", *(SHORT.get(f, f) for f in pick.families), "+calls", "+tokens"]


def render_terminal(pick: Pick, width: int = WIDTH) -> str:
    """Fixed columns one space apart (the whole default run fits 120), the exceptions each row
    raises listed under the table, the notes wrapped to ``width``."""
    import textwrap

    header, rows = _header(pick), [_cells(pick, r) for r in pick.rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    cut = sum(widths) + len(widths) - 1 > width  # every variant of a dozen SDKs: the cost columns go
    if cut:
        header, rows, widths = header[:-2], [r[:-2] for r in rows], widths[:-2]
    right = {i for i, h in enumerate(header) if h in ("#", "score", "+calls", "+tokens")}

    def line(values: list[str]) -> str:
        pairs = enumerate(zip(values, widths, strict=True))
        return " ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in pairs).rstrip()

    which = "every variant" if pick.variants == "all" else "default variants"
    out = [*textwrap.wrap(lead_sentence(pick), width, break_on_hyphens=False), ""]
    out += [f"Which SDK and output mode to pick: run {pick.suite_id}, {which}", "", line(header), *map(line, rows)]
    if cut:
        out.append(f"(+calls and +tokens left out to fit {width} columns: --markdown or --json holds them)")
    raising = [r for r in pick.rows if r.raises]
    if raising:
        out += ["", "What the caller must catch:"]
        for row in raising:
            key = " ".join([row.sdk, row.mode, *([row.variant] if pick.variants == "all" else [])])
            text = f"{row.rank:>2} {key}: {', '.join(row.raises)}"
            out.append(text if len(text) <= width else text[: width - 1] + "~")
    out += ["", *textwrap.wrap(CODES, width), *textwrap.wrap(score_line(pick), width)]
    if pick.families:
        legend = ", ".join(f"{SHORT.get(f, f)} = {f}" for f in pick.families)
        out += textwrap.wrap("families: " + legend, width)
    out += ["", "What the ranking cannot see:"]
    for note in pick.cannot_see:
        out += textwrap.wrap(note, width, initial_indent="- ", subsequent_indent="  ")
    return "\n".join(out)


def _md(text: object) -> str:
    return str(text).replace("|", "\\|")


def render_markdown(
    pick: Pick, html: str = HTML_FILE, title: str = "## Which SDK and mode to pick", sentence: bool = True
) -> list[str]:
    """The table with every exception and handed-on scenario, the notes under it; under the title
    the :func:`lead_sentence` unless ``sentence`` is False (report.md says it above everything)."""
    header = [*_header(pick), "raises", "handed to the user"]
    lines = [
        title,
        "",
        *([f"**{_md(lead_sentence(pick))}**", ""] if sentence else []),
        f"{score_line(pick)}. {CODES}. The cells behind a row: [the matrix]({html}#matrix), or "
        f"`bench view {pick.suite_id}`.",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---:" if h in ("#", "score", "+calls", "+tokens") else "---" for h in header) + " |",
    ]
    for row in pick.rows:
        extra = [", ".join(row.raises) or "-", ", ".join(row.handed) or "-"]
        lines.append("| " + " | ".join(_md(v) for v in [*_cells(pick, row), *extra]) + " |")
    if not pick.rows:
        lines.append("| " + " | ".join(["-"] * len(header)) + " |")
    return [*lines, "", "What the ranking cannot see:", "", *(f"- {note}" for note in pick.cannot_see)]


def render_html(pick: Pick) -> str:
    """The table for report.html: each row links to the matrix, the cell codes carry their label."""
    header = [*_header(pick), "raises", "handed to the user"]
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in pick.rows:
        values = _cells(pick, row)
        key_count = 3 + (pick.variants == "all")
        tds = "".join(f"<td>{escape(v)}</td>" for v in values[:key_count])
        tds = tds.replace(f"<td>{escape(row.sdk)}</td>", f'<td><a href="#matrix">{escape(row.sdk)}</a></td>', 1)
        tds += f"<td class=num>{escape(values[key_count])}</td>"
        for family in pick.families:
            result = row.families.get(family)
            title = f' title="{escape(result.label)} ({result.scenarios} scenarios)"' if result else ""
            tds += f"<td{title}>{escape(result.token if result else '-')}</td>"
        tds += "".join(f"<td class=num>{escape(v)}</td>" for v in values[-2:])
        lists = (", ".join(row.raises) or "-", ", ".join(row.handed) or "-")
        tds += "".join(f"<td class=list>{escape(text)}</td>" for text in lists)
        body.append(f"<tr>{tds}</tr>")
    notes = "".join(f"<li>{escape(note)}</li>" for note in pick.cannot_see)
    return (
        f"<p>{escape(score_line(pick))}. {escape(CODES)}.</p>"
        f'<table class="pick"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        f"<p><strong>What the ranking cannot see:</strong></p><ul>{notes}</ul>"
    )


def lead(weights: Weights) -> Lead:
    """What ``bench report`` opens report.md and report.html with: the default variants' pick, its
    sentence above everything, its table before the claims."""
    from bench.pick.table import pick as build_pick

    def sections(report: Report, html: str) -> LeadSections:
        chosen = build_pick(report, weights)
        return LeadSections(lead_sentence(chosen), render_markdown(chosen, html, sentence=False), render_html(chosen))

    return sections
