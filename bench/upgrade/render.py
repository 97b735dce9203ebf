"""A :class:`~bench.upgrade.decision.Decision` as the terminal shows it, as a markdown summary
for a PR comment (under 60 KB, no line over 120 columns) and as a JUnit file for CI. The
terminal's first lines are the answer: the verdict, then the handlers that stop catching (the
user's own first), then what changes per behaviour, then the cost."""

from __future__ import annotations

import textwrap
from xml.sax.saxutils import escape, quoteattr

from bench.upgrade.decision import Decision, Verdict

WIDTH = 120
MARKDOWN_LIMIT = 60_000
EXIT = {Verdict.SAFE: 0, Verdict.WORSE: 1, Verdict.INCONCLUSIVE: 5}
"""The gate's codes (``bench.cli.exit_codes``): this module sits below the CLI, which maps them."""


def headline(decision: Decision) -> str:
    d = decision
    changed = sum(1 for b in d.behaviours if b.changed)
    stops = sum(1 for b in d.breaks if b.stops_catching)
    mine = sum(1 for b in d.blocks if b.stops_catching)
    parts = [f"{changed} of {len(d.behaviours)} behaviours change", f"{d.worse_cells} cells worse"]
    if stops:
        parts.append(f"{stops} exception change(s) an except for the old class no longer catches")
    if mine:
        parts.append(f"{mine} of your handlers no longer catch what the release raises")
    if d.uncompared:
        parts.append(f"{d.uncompared} cells not compared (one side only, or a harness error)")
    return f"{d.sdk} {d.old} -> {d.new}, {d.subject}: {d.verdict} (exit {EXIT[d.verdict]}); " + "; ".join(parts)


def sections(decision: Decision) -> list[tuple[str, list[str]]]:
    """(title, lines) in the order they are shown."""
    d = decision
    handlers = d.handler_lines()
    families: dict[str, list[str]] = {}
    for change in d.behaviours:
        if change.changed:
            families.setdefault(change.family, []).append(change.line())
    changes = [f"{family}: {line}" for family, lines in families.items() for line in lines]
    unchanged = [b.scenario for b in d.behaviours if not b.changed]
    if unchanged:
        changes.append(f"unchanged ({len(unchanged)}): {', '.join(unchanged)}")
    cost = [
        f"{b.scenario}: model calls {b.cost['old'][0]:.1f} -> {b.cost['new'][0]:.1f}, "
        f"billed tokens {b.cost['old'][1]:.0f} -> {b.cost['new'][1]:.0f}"
        for b in d.behaviours
    ]
    return [
        ("handler compatibility", handlers or ["no exception class changed"]),
        ("changes per behaviour", changes or ["no behaviour was measured on both releases"]),
        ("cost per behaviour (old -> new, means per cell)", cost),
    ]


def _clip(line: str, width: int = WIDTH) -> str:
    """A line within ``width``, wrapped (continuation indented), never cut: a handler's
    ``file:line`` and its reason must both be read."""
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip(" -")) + 2)
    return textwrap.fill(line, width, subsequent_indent=indent, break_on_hyphens=False)


def text(decision: Decision) -> str:
    lines = [_clip(headline(decision))]
    for title, body in sections(decision):
        lines += ["", f"{title}:", *(_clip(f"  {line}") for line in body)]
    lines += ["", f"results: {decision.directory}"]
    return "\n".join(lines) + "\n"


def markdown(decision: Decision) -> str:
    """A PR comment: the headline, then each section as a list; cut (and said so) at the limit."""
    out = [f"## bench upgrade: {decision.sdk} {decision.old} -> {decision.new}", "", _clip(headline(decision))]
    size = sum(len(line) + 1 for line in out)
    for title, body in sections(decision):
        for line in ["", f"### {title}", "", *(_clip(f"- {escape_md(line)}") for line in body)]:
            if size + len(line) + 1 > MARKDOWN_LIMIT - 200:
                out += ["", f"(cut at {MARKDOWN_LIMIT // 1000} KB; the whole decision: bench upgrade in the terminal)"]
                return "\n".join(out) + "\n"
            out.append(line)
            size += len(line) + 1
    return "\n".join(out) + "\n"


def escape_md(line: str) -> str:
    return line.replace("|", "\\|").replace("<", "&lt;")


def junit(decision: Decision) -> str:
    """One test case per behaviour (failed when a cell got worse), per handler of the user's
    (failed when what the release raises escapes it) and per exception change (failed when an
    except for the old class no longer catches the new one)."""
    cases = []
    for b in decision.behaviours:
        failure = f"<failure message={quoteattr(b.line())}/>" if b.worse else ""
        cases.append(f'<testcase classname="behaviour" name={quoteattr(b.scenario)}>{failure}</testcase>')
    for block in decision.blocks:
        message = escape(" | ".join(block.lines()))
        failure = f"<failure message={quoteattr(message)}/>" if block.stops_catching else ""
        cases.append(f'<testcase classname="handler" name={quoteattr(block.where)}>{failure}</testcase>')
    for brk in decision.breaks:
        name = f"except {brk.compatibility.old} -> {brk.compatibility.new}"
        message = escape(" | ".join(brk.lines()) or f"{name}: {brk.compatibility.verdict}")
        failure = f"<failure message={quoteattr(message)}/>" if brk.stops_catching else ""
        cases.append(f'<testcase classname="handler" name={quoteattr(name)}>{failure}</testcase>')
    failures = sum(1 for case in cases if "<failure" in case)
    suite = quoteattr(f"bench upgrade {decision.sdk} {decision.old} -> {decision.new}")
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuites><testsuite name={suite} tests="{len(cases)}" failures="{failures}">\n'
        + "\n".join(cases)
        + "\n</testsuite></testsuites>\n"
    )
