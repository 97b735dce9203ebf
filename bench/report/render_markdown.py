"""The report as markdown, for a PR comment or a CI job summary: deterministic (no timestamps,
no paths, stable order) so it can be golden-tested, and kept under GitHub's 1 MiB limit."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from bench.report.build import Report
from bench.report.matrix import ROW_KEYS

MAX_BYTES = 1024 * 1024 - 4096
"""GitHub's job summary and comment limit is 1 MiB; leave room for a caller's own lines."""
EVIDENCE_SHOWN = 3
COUNTER_SHOWN = 12
VERDICT_MARK = {"confirmed": "confirmed", "refuted": "**refuted**", "untested": "_untested_"}
SWEEP_HINT = (
    "No stochastic scenarios in this run. Run a sweep with e.g. `bench run --suite full --variant default "
    "--scenario sweep_malformed_00 --scenario sweep_malformed_01 --scenario sweep_malformed_05 "
    "--scenario sweep_malformed_15 --scenario sweep_malformed_30 --reps 50` (scenarios/sweep.yaml)."
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: Iterable[list[object]], align: str | None = None) -> list[str]:
    """A GitHub markdown table; ``align`` is one letter per column (l or r)."""
    marks = [("---:" if a == "r" else "---") for a in (align or "l" * len(header))]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _num(value: float | None, digits: int = 0) -> str:
    if value is None or pd.isna(value):
        return "-"
    return f"{value:,.{digits}f}"


def header_section(report: Report) -> list[str]:
    versions = ", ".join(f"{k} {v or '?'}" for k, v in report.sdk_versions.items())
    totals = ", ".join(f"{k} {v}" for k, v in report.outcomes.items())
    return [
        "# misfit-bench report",
        "",
        f"Run `{report.suite_id}` (schema {report.schema_version}, seed {report.seed}, reps {report.reps}): "
        f"{report.rows} rows ({totals}).",
        "",
        f"SDKs: {versions}.",
    ]


def supported_rows(report: Report) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """Matrix rows with at least one cell that ran, and the rows that are unsupported throughout
    (listed in one line instead of a row of dashes)."""
    ran: dict[tuple[str, str, str], bool] = {}
    for cell in report.matrix:
        key = (cell.sdk, cell.mode, cell.variant)
        ran[key] = ran.get(key, False) or cell.outcome != "unsupported"
    return sorted(k for k, v in ran.items() if v), sorted(k for k, v in ran.items() if not v)


def unsupported_note(hidden: list[tuple[str, str, str]]) -> str:
    return "Unsupported throughout (not run, see `bench list`): " + ", ".join("/".join(k) for k in hidden) + "."


def matrix_section(report: Report, scenarios: list[str]) -> list[str]:
    by_row: dict[tuple[str, str, str], dict[str, str]] = {}
    for cell in report.matrix:
        by_row.setdefault((cell.sdk, cell.mode, cell.variant), {})[cell.scenario] = cell.label + (
            "*" if cell.mixed else ""
        )
    shown, hidden = supported_rows(report)
    rows = [[*key, *(by_row[key].get(s, "") for s in scenarios)] for key in shown]
    note = ["", unsupported_note(hidden)] if hidden else []
    return [
        "## Where the failure landed",
        "",
        "Rows SDK x mode x variant, columns scenario. Each cell is the majority outcome over protocols, "
        "streaming and reps, with its model calls in brackets; `*` = they disagree. `recovered` = correct "
        "after retries (paid on the token bill), `raised X` = the caller's exception handler, `fallback` = "
        "the variant's error handler, `WRONG`/`EMPTY` = handed to the user, `RUNAWAY` = still calling at the "
        "call cap, `-` = unsupported.",
        "",
        *table([*ROW_KEYS, *scenarios], rows),
        *note,
    ]


def cost_section(report: Report, scenarios: list[str]) -> list[str]:
    lines = ["## The cost of failure", ""]
    if not report.cost_summary:
        return [*lines, "No fault cell has a `valid` control in this run, so there is nothing to compare."]
    lines += [
        "Extra model calls and extra billed tokens (input + output, every attempt) each fault costs against the "
        "same cell's control (`valid` for task person, `expense_valid` for expense_report), paired by protocol, "
        "stream and rep.",
    ]
    if report.uncontrolled_scenarios:
        lines += [
            "",
            "Not compared (their task, ticket_triage, has no control in the library): "
            + ", ".join(f"`{s}`" for s in report.uncontrolled_scenarios)
            + ".",
        ]
    rows = cost_rows(report)
    lines += [
        "",
        *table(
            [
                *ROW_KEYS,
                "faults",
                "control calls",
                "control tokens",
                "mean +calls",
                "worst +calls",
                "mean +tokens",
                "worst +tokens",
            ],
            rows,
            "llllrrrrrr",
        ),
    ]
    shown = [s for s in scenarios if any(c.scenario == s for c in report.cost)]
    by_row: dict[tuple[str, str, str], dict[str, str]] = {}
    for c in report.cost:
        by_row.setdefault((c.sdk, c.mode, c.variant), {})[c.scenario] = f"{c.extra_calls:+g} / {c.extra_tokens:+,.0f}"
    detail = [[*key, *(cells.get(s, "") for s in shown)] for key, cells in sorted(by_row.items())]
    lines += [
        "",
        "<details><summary>Per fault: +calls / +billed tokens (median)</summary>",
        "",
        *table([*ROW_KEYS, *shown], detail),
        "",
        "</details>",
    ]
    return lines


def gap_section(report: Report) -> list[str]:
    rows = gap_rows(report)
    return [
        "## Billed vs SDK-reported tokens",
        "",
        "What the provider billed (its ledger: every attempt, failed ones included) against what the SDK's own "
        "usage object told its caller; `no usage` = cells where the SDK reported nothing (counted as 0).",
        "",
        *table(
            ["sdk", "result", "cells", "no usage", "billed", "reported", "unreported", "unreported %"], rows, "llrrrrrr"
        ),
    ]


def claims_section(report: Report) -> list[str]:
    lines = ["## Published claims, checked", ""]
    lines += table(["claim", "sdk", "verdict"], [[f"`{c.id}`", c.sdk, VERDICT_MARK[c.verdict]] for c in report.claims])
    for claim in report.claims:
        lines += ["", f"### `{claim.id}`: {VERDICT_MARK[claim.verdict]}", "", f"> {claim.claim}"]
        if claim.source:
            lines += [">", f"> Source: {claim.source}"]
        lines.append("")
        for check in claim.checks:
            lines.append(f"- {VERDICT_MARK[check.verdict]} ({check.cells} cells): {check.says}")
            shown = check.counter[:COUNTER_SHOWN] if check.counter else check.evidence[:EVIDENCE_SHOWN]
            lines += [f"  - {'measured' if check.counter else 'e.g.'}: `{line}`" for line in shown]
            hidden = len(check.counter) - COUNTER_SHOWN if check.counter else len(check.evidence) - EVIDENCE_SHOWN
            if hidden > 0:
                lines.append(f"  - and {hidden} more {'contradicting' if check.counter else 'agreeing'}")
    return lines


def gap_rows(report: Report) -> list[list[object]]:
    """One table row per (sdk, result) billed-vs-reported summary, shared with the HTML report."""
    return [
        [
            g.sdk,
            g.result,
            g.cells,
            g.no_usage,
            _num(g.billed),
            _num(g.reported),
            _num(g.unreported),
            _num(g.unreported_pct, 1),
        ]
        for g in report.token_gap
    ]


def cost_rows(report: Report) -> list[list[object]]:
    """One table row per (sdk, mode, variant, faults) cost summary, shared with the HTML report."""
    return [
        [
            c.sdk,
            c.mode,
            c.variant,
            c.faults,
            _num(c.control_calls),
            _num(c.control_tokens),
            _num(c.mean_extra_calls, 2),
            _num(c.max_extra_calls),
            _num(c.mean_extra_tokens),
            _num(c.max_extra_tokens),
        ]
        for c in report.cost_summary
    ]


def sweep_rows(report: Report) -> list[list[object]]:
    """One table row per sweep point, shared by the markdown and HTML reports."""
    return [
        [
            s.faults,
            s.sdk,
            s.mode,
            s.variant,
            f"{s.rate * 100:g}%",
            s.n,
            s.rows,
            f"{s.failure_rate * 100:.1f}% [{s.failure_lo * 100:.1f}, {s.failure_hi * 100:.1f}]",
            f"{s.success_rate * 100:.1f}% [{s.success_lo * 100:.1f}, {s.success_hi * 100:.1f}]",
            _num(s.mean_calls, 2),
            _num(s.tokens_per_success),
        ]
        for s in report.sweep
    ]


def sweep_section(report: Report) -> list[str]:
    lines = ["## Fault-rate sweep", ""]
    if not report.sweep:
        return [*lines, SWEEP_HINT]
    lines += [
        "Per attempt, the fake model draws a fault at the given rate (the rest is valid), with the same draws "
        "for every SDK. User-visible = `wrong` or `empty` (handed to the user); success = `ok` or `recovered`; "
        "intervals are 95% Wilson over n = reps (every protocol of a row sees the same draws, so protocols add rows, "
        "not independent samples); tokens per success = all billed tokens / successful answers.",
        "",
    ]
    rows = sweep_rows(report)
    return lines + table(
        [
            "faults",
            *ROW_KEYS,
            "fault rate",
            "n (reps)",
            "rows",
            "user-visible failure",
            "success",
            "calls/cell",
            "tokens/success",
        ],
        rows,
        "llllrrrrrrr",
    )


def render(report: Report, scenarios: list[str]) -> str:
    """The whole report; ``scenarios`` is the column order (``matrix.scenario_order``)."""
    sections = [
        header_section(report),
        matrix_section(report, scenarios),
        cost_section(report, scenarios),
        gap_section(report),
        claims_section(report),
        sweep_section(report),
    ]
    text = "\n\n".join("\n".join(section) for section in sections) + "\n"
    if len(text.encode()) > MAX_BYTES:
        note = "\n\n_(report cut at 1 MiB; the HTML and JSON reports in the run folder have everything)_\n"
        text = text.encode()[: MAX_BYTES - len(note)].decode("utf-8", "ignore") + note
    return text
