"""The report as markdown, for a PR comment or a CI job summary: deterministic (no timestamps,
no paths, stable order) so it can be golden-tested, and kept under GitHub's 1 MiB limit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from bench.core.vocabulary import USER_FAILURE, Outcome
from bench.report import field as field_module
from bench.report.build import ClaimResult, MatrixCell, Report
from bench.report.matrix import ROW_KEYS

HTML_FILE = "report.html"
"""Where the details live: the HTML report beside report.md (``--html-url`` for a hosted copy)."""
MAX_BYTES = 60_000
"""A GitHub PR comment stops at 65,536 characters (a job summary at 1 MiB): the default run's
summary is about half of this; past it the text is cut with a note pointing at the HTML."""
VERDICT_MARK = {
    "confirmed": "confirmed", "partial": "partly confirmed", "refuted": "**refuted**", "untested": "_untested_"
}  # fmt: skip
TOOL_CONTROL = ", `tool_ok` for order_lookup"
NO_TOOL_CELLS = "No tool cells in this run: the tool scenarios were unsupported throughout (see `bench list`)."
TOOL_INTRO = (
    "Task order_lookup: the agent must call the harness tool `lookup_order`, whose failures are scripted per "
    "scenario. Per SDK: of the runs with a retryable failure followed by a good call (`tool_bad_args_then_ok`, "
    "`tool_unknown_order_then_ok`, `tool_budget_shared`), those in which every failure went back to the model "
    "paired with its call id (a run that raised at the failure did not); of the runs whose tool error went back, "
    "those in which it was the tool's structured error (code, retryable, attempt, message); the most tool runs "
    "after a non-retryable error (permission, quota; should be 0); what `tool_budget_shared` (a tool-argument "
    "retry, then a malformed answer) says about the retry budget, with the number of cells."
)
BUDGET_INTRO = (
    "`tool_budget_shared` next to the same cell's `malformed_then_valid`: recovering means the output retry had "
    "budget left after the tool retry (separate budgets, or one larger than 1); failing where `malformed_then_valid` "
    "recovers means the malformed answer was not retried once a tool retry had been spent (one shared budget, "
    "or no output retry after a tool retry)."
)
LAYERS_INTRO = (
    "Who retried a transport fault (`http_*`), per SDK and scenario, with its modes, variants and protocols "
    "apart only where they read differently (`all` where they do not): `client` = requests the official client "
    "marked as its own retry (x-stainless-retry-count > 0), `framework` = the same request re-sent by the "
    "framework itself, `output` = a new model call (a model-level retry on top). Retries and wait (total time "
    "between failed responses and the next request, ms) are medians; the outcome is the majority with its "
    "requests in brackets, `*` = rows disagree."
)
NEGATIVE_INTRO = (
    "A negative mean +tokens is not a saving: those faults ended the run before it paid for a valid answer "
    "(a rejected request is billed nothing, a raise on the first bad answer bills a reply shorter than a valid "
    "one, a tool error raised at once saves the tool round trip) and the caller got no object."
)
PERSISTENT_HINT = (
    "No persistent transport fault in this run (add e.g. `bench run --suite full --scenario http_500_persistent`)."
)
SWEEP_HINT = (
    "No stochastic scenarios in this run. Run a sweep with e.g. `bench run --suite full --variant default "
    "--scenario sweep_malformed_00 --scenario sweep_malformed_01 --scenario sweep_malformed_05 "
    "--scenario sweep_malformed_15 --scenario sweep_malformed_30 --reps 50` (scenarios/sweep.yaml)."
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: Iterable[Sequence[object]], align: str | None = None) -> list[str]:
    """A GitHub markdown table; ``align`` is one letter per column (l or r)."""
    marks = [("---:" if a == "r" else "---") for a in (align or "l" * len(header))]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _num(value: float | None, digits: int = 0) -> str:
    if value is None or pd.isna(value):
        return "-"
    return f"{value:,.{digits}f}"


def _g(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:g}"


def share(part: int, whole: int) -> str:
    """``-`` when nothing was measured, ``yes``/``no`` when all or none, else ``k/n``."""
    if not whole:
        return "-"
    return "yes" if part == whole else "no" if part == 0 else f"{part}/{whole}"


def share_pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def header_section(report: Report, html: str = HTML_FILE, sentence: str = "") -> list[str]:
    """The title, the decision in one ``sentence`` (the pick's, when given), then the run."""
    versions = ", ".join(f"{k} {v or '?'}" for k, v in report.sdk_versions.items())
    totals = ", ".join(f"{k} {v}" for k, v in report.outcomes.items())
    return [
        "# misfit-bench report",
        "",
        *([f"**{sentence}**", ""] if sentence else []),
        f"Run `{report.suite_id}` (schema {report.schema_version}, seed {report.seed}, reps {report.reps}): "
        f"{report.rows} rows ({totals}).",
        "",
        f"SDKs: {versions}.",
        "",
        f"Details: [the HTML report]({html}) beside this file (every cell, plots); `bench view RUN` opens each "
        "cell's attempts: the request the SDK sent after a failure, and what it cost.",
    ]


def supported_rows(report: Report) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """Matrix rows with at least one cell that ran, and the rows that are unsupported throughout
    (listed in one line instead of a row of dashes)."""
    ran: dict[tuple[str, str, str], bool] = {}
    for cell in report.matrix:
        key = (cell.sdk, cell.mode, cell.variant)
        ran[key] = ran.get(key, False) or cell.outcome != Outcome.UNSUPPORTED
    return sorted(k for k, v in ran.items() if v), sorted(k for k, v in ran.items() if not v)


def unsupported_note(hidden: list[tuple[str, str, str]]) -> str:
    return "Unsupported throughout (not run, see `bench list`): " + ", ".join("/".join(k) for k in hidden) + "."


def cost_section(report: Report, scenarios: list[str], html: str = HTML_FILE) -> list[str]:
    lines = ["## The cost of failure", ""]
    tool_control = TOOL_CONTROL if report.tool_task_rows else ""
    if not report.cost_summary:
        return [*lines, "No fault cell has a `valid` control in this run, so there is nothing to compare."]
    lines += [
        "Extra model calls and extra billed tokens (input + output, every attempt) each fault costs against the "
        f"same cell's control (`valid` for task person, `expense_valid` for expense_report{tool_control}), "
        "paired by protocol, stream and rep.",
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
            COST_HEADER,
            rows,
            "llllrrrrrr",
        ),
    ]
    if report.negative_cost_notes:
        lines += ["", NEGATIVE_INTRO, "", *(f"- {note}" for note in report.negative_cost_notes)]
    lines += ["", f"Per fault (+calls / +billed tokens, median): {_link(html, 'cost', 'the cost of failure')}."]
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


def tool_summary_rows(report: Report) -> list[list[object]]:
    """One row per SDK of the tool failure summary, shared with the HTML report."""
    return [
        [
            t.sdk,
            t.cells,
            share_pct(t.to_model, t.failed_runs),
            share_pct(t.structured, t.structured_runs),
            _g(t.max_after_fatal),
            t.budget or "-",
        ]
        for t in report.tool_summary
    ]


TOOL_SUMMARY_HEADER = [
    "sdk",
    "cells",
    "failures back with call id",
    "structured",
    "most tool runs after a fatal error",
    "budget (tool_budget_shared)",
]
BUDGET_HEADER = [*ROW_KEYS, "tool_budget_shared", "malformed_then_valid", "reading"]
TOOL_CELL_HEADER = [
    *ROW_KEYS,
    "scenario",
    "outcome",
    "tool runs",
    "model calls",
    "error to model with id",
    "structured",
    "tool runs after fatal",
]
COST_HEADER = [
    *ROW_KEYS,
    "faults",
    "control calls",
    "control tokens",
    "mean +calls",
    "worst +calls",
    "mean +tokens",
    "worst +tokens",
]
"""The cost summary's columns, shared with the HTML report."""

LAYER_HEADER = [
    "sdk",
    "mode",
    "variant",
    "protocol",
    "scenario",
    "layers",
    "client",
    "framework",
    "output",
    "wait ms",
    "outcome",
]
PERSISTENT_HEADER = [
    "sdk",
    "mode",
    "variant",
    "protocol",
    "scenario",
    "requests (max)",
    "ended",
    "outcome",
    "time limit s",
]


def budget_rows(report: Report) -> list[list[object]]:
    """One row per SDK x mode x variant that ran tool_budget_shared, shared with the HTML report."""
    return [[b.sdk, b.mode, b.variant, b.budget_label, b.output_label or "-", b.reading] for b in report.tool_budget]


def tool_cell_rows(report: Report) -> list[list[object]]:
    """One row per SDK x mode x variant x tool scenario, shared with the HTML report."""
    return [
        [
            c.sdk,
            c.mode,
            c.variant,
            c.scenario,
            c.label + ("*" if c.mixed else ""),
            _g(c.tool_calls),
            _g(c.model_calls),
            share(c.to_model, c.failed_runs),
            share(c.structured, c.structured_runs),
            _g(c.after_fatal),
        ]
        for c in report.tool_cells
    ]


def layer_rows(report: Report) -> list[list[object]]:
    """One row per SDK (x protocol) x transport scenario, shared with the HTML report."""
    return [
        [
            r.sdk,
            r.mode,
            r.variant,
            r.protocol,
            r.scenario,
            r.layers,
            _g(r.client),
            _g(r.framework),
            _g(r.output),
            _num(r.wait_ms),
            r.label + ("*" if r.mixed else ""),
        ]
        for r in report.retry_layers
    ]


def persistent_rows(report: Report) -> list[list[object]]:
    """One row per SDK (x protocol) x persistent transport fault, shared with the HTML report."""
    return [
        [p.sdk, p.mode, p.variant, p.protocol, p.scenario, _g(p.requests), p.ended, p.label, _g(p.time_limit_s)]
        for p in report.persistent_faults
    ]


def tool_section(report: Report, html: str = HTML_FILE) -> list[str]:
    lines = ["## Tool failures", ""]
    if not report.tool_cells:
        return [*lines, NO_TOOL_CELLS]
    lines += [TOOL_INTRO, "", *table(TOOL_SUMMARY_HEADER, tool_summary_rows(report), "lrllrl")]
    if report.tool_budget:
        lines += ["", BUDGET_INTRO, "", *table(BUDGET_HEADER, budget_rows(report))]
    return [*lines, "", f"Per cell and tool scenario: {_link(html, 'tools', 'tool failures in the HTML report')}."]


def layers_section(report: Report) -> list[str]:
    lines = ["## Retry layers", "", LAYERS_INTRO, "", *table(LAYER_HEADER, layer_rows(report), "llllllrrrrl")]
    lines += ["", "### Persistent transport faults", ""]
    if not report.persistent_faults:
        return [*lines, PERSISTENT_HINT]
    return [
        *lines,
        "The most requests one run took, and what ended it: the SDK itself (the outcome says how), the cell's "
        "time limit, or its call cap.",
        "",
        *table(PERSISTENT_HEADER, persistent_rows(report), "lllllrllr"),
    ]


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


COSTLIEST_SHOWN = 10
GATE_SHOWN = 15


def _link(html: str, anchor: str, text: str) -> str:
    return f"[{text}]({html}#{anchor})"


def decisions_section(report: Report, html: str, lead: Sequence[str] = ()) -> list[str]:
    """What a reviewer decides from, first: which SDK and mode to pick (``lead``, from
    :mod:`bench.pick`), the claims in their own words, the failures the user gets (one SDK's
    apart from every SDK's), what retries cost at worst, and what changed against the baseline."""
    return [
        *([*lead, ""] if lead else []),
        "## Decisions",
        "",
        *claims_verdicts(report, html),
        "",
        *handed_to_user(report, html),
        "",
        *costliest(report, html),
        "",
        *baseline_section(report),
    ]


def _absent(report: Report, claim: ClaimResult) -> bool:
    """A claim on an SDK this run does not hold: nothing of the run could check it, so the summary
    names it in one line instead of a row (it is still in the HTML report and ``report.json``)."""
    return claim.verdict == "untested" and claim.sdk != "all" and claim.sdk not in report.sdk_versions


def claims_verdicts(report: Report, html: str) -> list[str]:
    rows = []
    absent = [claim.id for claim in report.claims if _absent(report, claim)]
    for claim in (claim for claim in report.claims if not _absent(report, claim)):
        counter = [line for check in claim.checks for line in check.counter]
        cells = sum(check.cells for check in claim.checks)
        if claim.verdict == "refuted" and counter:
            decided = f"`{counter[0]}`" + (f" and {len(counter) - 1} more" if len(counter) > 1 else "")
        elif claim.verdict == "confirmed":
            decided = f"{cells} cells agree"
        elif claim.verdict == "partial":
            untested = sum(check.verdict == "untested" for check in claim.checks)
            decided = f"{cells} cells agree; {untested} of {len(claim.checks)} checks untested"
        else:
            decided = "no cell of this run tests it"
        rows.append([_link(html, claim.id, claim.id), claim.sdk, VERDICT_MARK[claim.verdict], claim.claim, decided])
    return [
        "### Published claims",
        "",
        f"Each claim in its own words, checked against the measured cells; the checks and every deciding cell: "
        f"{_link(html, 'claims', 'claims in the HTML report')}.",
        "",
        *table(["claim", "sdk", "verdict", "says", "decided by"], rows),
        *(["", f"Not checked by this run (its SDK is not in it): {', '.join(absent)}."] if absent else []),
    ]


def _failing(cell: MatrixCell) -> int:
    return sum(cell.outcomes.get(o, 0) for o in USER_FAILURE)


def shared_failures(report: Report) -> dict[str, list[str]]:
    """Scenarios every SDK of the run (two or more) hands to the user in each default-variant
    cell that ran it: what no SDK tells apart on its own. Scenario -> the cells (any variant)
    that did not hand it on."""
    ran = [c for c in report.matrix if c.outcome not in (Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR)]
    shared = {}
    for scenario in sorted({c.scenario for c in ran}):
        cells = [c for c in ran if c.scenario == scenario]
        defaults = [c for c in cells if c.variant == "default"]
        sdks = {c.sdk for c in cells}
        if len(sdks) > 1 and {c.sdk for c in defaults} == sdks and all(_failing(c) for c in defaults):
            shared[scenario] = ["/".join((c.sdk, c.mode, c.variant)) for c in cells if not _failing(c)]
    return shared


def handed_to_user(report: Report, html: str) -> list[str]:
    """Behaviour shared by every SDK first, in one line per scenario; then, per SDK x mode
    (variants with the same list merged), the scenarios only some SDKs or modes hand on, with
    ``k/n`` rows where only some protocols, streams or reps did."""
    shared = shared_failures(report)
    by_key: dict[tuple[str, str, str], list[str]] = {}
    for cell in report.matrix:
        bad = _failing(cell)
        if bad and cell.scenario not in shared:
            share_text = "" if bad == cell.n else f" ({bad}/{cell.n})"
            by_key.setdefault((cell.sdk, cell.mode, cell.variant), []).append(cell.scenario + share_text)
    merged: dict[tuple[str, str, str], list[str]] = {}
    for (sdk, mode, variant), scenarios in sorted(by_key.items()):
        merged.setdefault((sdk, mode, ", ".join(scenarios)), []).append(variant)
    rows = [[sdk, mode, ", ".join(variants), scenarios] for (sdk, mode, scenarios), variants in merged.items()]
    lines = [
        "### Failures handed to the user",
        "",
        "Cells where the caller got a WRONG or EMPTY answer with no exception (the failures nobody handles); "
        f"`(k/n)` = only k of the cell's n rows. Per cell: {_link(html, 'matrix', 'the matrix in the HTML report')}.",
        "",
        "Specific to some SDKs or modes:",
        "",
        *(table(["sdk", "mode", "variants", "scenarios"], rows) if rows else ["None in this run."]),
    ]
    if shared:
        lines += ["", "Shared by every SDK (each default variant hands it on; no SDK tells it apart on its own):", ""]
        for scenario, escaped in shared.items():
            but = f"; not handed on by {', '.join(escaped)}" if escaped else ""
            lines.append(f"- `{scenario}`{but}")
    return lines


def costliest(report: Report, html: str) -> list[str]:
    labels = {(c.sdk, c.mode, c.variant, c.scenario): c.label + ("*" if c.mixed else "") for c in report.matrix}
    ranked = sorted(report.cost, key=lambda c: (-c.extra_tokens, -c.extra_calls, c.sdk, c.mode, c.variant))
    rows = [
        [c.sdk, c.mode, c.variant, c.scenario, labels.get((c.sdk, c.mode, c.variant, c.scenario), ""),
         f"{c.extra_calls:+g}", f"{c.extra_tokens:+,.0f}"]
        for c in ranked[:COSTLIEST_SHOWN]
    ]  # fmt: skip
    head = ["### Costliest retries", ""]
    if not rows:
        return [*head, "No fault cell has a control to compare with in this run."]
    return [
        *head,
        f"The {len(rows)} cells whose faults cost the most billed tokens over their control (median over "
        f"protocols, streams and reps). Every cell: {_link(html, 'cost', 'the cost of failure')}.",
        "",
        *table([*ROW_KEYS, "scenario", "outcome", "+calls", "+tokens"], rows, "lllllrr"),
    ]


def baseline_section(report: Report) -> list[str]:
    head = ["### Against the baseline", ""]
    changes = report.baseline
    if changes is None:
        return [*head, "Not compared (`bench report RUN --baseline results/baseline` adds `bench gate`'s verdict)."]
    lines = [
        *head,
        f"`bench gate` against `{changes.baseline_suite_id}`: **{changes.verdict}**, "
        f"{len(changes.regressions)} regressed and {len(changes.changed)} changed within thresholds of "
        f"{changes.compared} cells compared; {changes.not_compared} not compared.",
    ]
    if changes.option_changes:
        lines += ["", f"**Options changed**, compared anyway: {changes.option_changes}."]
    if changes.version_changes:
        versions = ", ".join(f"{k} {v}" for k, v in changes.version_changes.items())
        lines += ["", f"SDK versions changed: {versions}."]
    for title, rows, worse in (
        ("Regressions", changes.regressions, True),
        ("Changed within thresholds", changes.changed, False),
    ):
        if rows:
            shown = [[r.cell, r.baseline, r.current, *([r.worse] if worse else [])] for r in rows[:GATE_SHOWN]]
            header = ["cell", "baseline", "current", *(["what got worse"] if worse else [])]
            more = ["", f"and {len(rows) - GATE_SHOWN} more (`bench gate`)"] if len(rows) > GATE_SHOWN else []
            lines += ["", f"{title}:", "", *table(header, shown), *more]
    return lines


def matrix_by_mode_section(report: Report, scenarios: list[str], html: str) -> list[str]:
    """Scenarios as rows grouped by fault family, SDK x mode as columns (the terminal's shape)."""
    from bench.report.matrix import family_rank
    from bench.report.terminal import token

    columns = sorted({(c.sdk, c.mode) for c in report.mode_matrix if c.outcome != Outcome.UNSUPPORTED})
    cells = {(c.sdk, c.mode, c.scenario): c for c in report.mode_matrix}
    order = sorted(scenarios, key=lambda s: (family_rank(report.families.get(s, "")), scenarios.index(s)))
    rows, last = [], None
    for scenario in order:
        family = report.families.get(scenario, "")
        texts = []
        for sdk, mode in columns:
            cell = cells.get((sdk, mode, scenario))
            text = token(cell.model_dump()) if cell else ""
            texts.append(f"**{text}**" if cell and cell.outcome in USER_FAILURE else text)
        rows.append([family if family != last else "", scenario, *texts])
        last = family
    _, hidden = supported_rows(report)
    return [
        "## Where the failure landed",
        "",
        "Each cell is the majority over variants, protocols, streams and reps, with its model calls: `ok` right "
        "first time, `rN` recovered after N calls, `fN` the variant's fallback, `xN` raised to the caller, "
        "**`WN`** / **`EN`** a WRONG / EMPTY answer handed to the user, `LN` runaway at the call cap, `T` timeout, "
        "`-` unsupported; `*` = they disagree. One row per variant, with each cell's outcome counts: "
        f"{_link(html, 'matrix', 'the full matrix')}.",
        "",
        *table(["family", "scenario", *(f"{sdk} {mode}" for sdk, mode in columns)], rows),
        *(["", unsupported_note(hidden)] if hidden else []),
    ]


def claims_details(report: Report, html: str) -> list[str]:
    """Each claim's checks with two deciding cells; all of them in the HTML report."""
    lines = [
        "<details><summary>The claims' checks (two deciding cells each; all in the HTML report)</summary>",
        "",
    ]
    for claim in (claim for claim in report.claims if not _absent(report, claim)):
        lines += [f"**{_link(html, claim.id, claim.id)}** ({claim.verdict}): {claim.claim}", ""]
        for check in claim.checks:
            shown = (check.counter or check.evidence)[:2]
            lines.append(f"- {VERDICT_MARK[check.verdict]} ({check.cells} cells): {check.says}")
            lines += [f"  - `{line}`" for line in shown]
        lines.append("")
    return [*lines, "</details>"]


def render(
    report: Report, scenarios: list[str], html: str = HTML_FILE, lead: Sequence[str] = (), sentence: str = ""
) -> str:
    """The PR summary: decisions first (the pick's ``sentence`` under the title, ``lead``, the pick
    table, before the claims), then short tables, each linked to its details in the HTML report at
    ``html``; ``scenarios`` is the column order (``matrix.scenario_order``)."""
    sections = [
        header_section(report, html, sentence),
        decisions_section(report, html, lead),
        matrix_by_mode_section(report, scenarios, html),
        cost_section(report, scenarios, html),
        gap_section(report),
        *([tool_section(report, html)] if report.tool_task_rows else []),
        *([layers_section(report)] if report.retry_layers else []),
        *([field_module.markdown(report.field, report.sdk_versions)] if report.field else []),
        ["## Published claims, checked", "", *claims_details(report, html)],
        sweep_section(report),
    ]
    text = "\n\n".join("\n".join(section) for section in sections) + "\n"
    if len(text.encode()) > MAX_BYTES:
        note = f"\n\n_(report cut at 60 KB; [the HTML report]({html}) and report.json have everything)_\n"
        text = text.encode()[: MAX_BYTES - len(note)].decode("utf-8", "ignore") + note
    return text
