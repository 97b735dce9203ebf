"""The CI-facing renderings of a gate result (``bench.gate.compare.GateResult``): markdown for the job's
step summary, JUnit XML for test reporters, GitHub ``::error`` annotations, and JSON.

Kept apart from ``bench.gate.compare`` so the comparison (config, thresholds, cells, statistics) reads
without the formatting, and a new rendering does not touch the logic that decides the verdict.
This module depends on ``bench.gate.compare``, never the reverse.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.gate.compare import (
    KEY,
    LOAD_REASON,
    RATES,
    CellResult,
    GateResult,
    MetricResult,
    Threshold,
    option_change_text,
)
from bench.gate.power import MOST_REPS, reps_needed

SUMMARY_LIMIT = 1_000_000
"""GitHub refuses a step summary over 1 MiB; stay under it with room for what is already there."""
MAX_ANNOTATIONS = 10


def _rate(value: float) -> str:
    return f"{value * 100:.1f}".removesuffix(".0") + "%"


def metric_change(metric: str, m: MetricResult, threshold: Threshold) -> str:
    """``user_failure 0% -> 100% (+100pp, allowed +0pp)``: what moved, by how much, against what."""
    if metric in RATES:
        moved = (
            f"{_rate(m.before)} -> {_rate(m.after)} ({m.delta * 100:+.1f}".replace(".0 ", " ").removesuffix(".0") + "pp"
        )
    else:
        digits = 2 if metric == "model_calls" else 0
        moved = f"{m.before:.{digits}f} -> {m.after:.{digits}f} ({m.delta:+.{digits}f}"
    allowed = (
        "a deterministic cell newly there: a regression whatever the threshold"
        if m.whatever_threshold
        else (f"allowed +{threshold.amount:g}{threshold.unit}")
    )
    text = f"{metric} {moved}, {allowed})"
    if m.p_adjusted is not None:
        text += f", p={m.p_adjusted:.3g} (Holm)"
    return text


def _method_line(result: GateResult) -> str:
    counts = {method: sum(1 for c in result.cells if c.method == method) for method in ("exact", "paired", "unpaired")}
    parts = []
    if counts["exact"]:
        parts.append(f"{counts['exact']} deterministic cells compared exactly")
    if counts["paired"] or counts["unpaired"]:
        parts.append(
            f"{counts['paired']} stochastic cells paired by (seed, rep) (exact McNemar / sign test), "
            f"{counts['unpaired']} unpaired (Fisher's exact / Mann-Whitney); Holm over {result.tests} tests, "
            f"alpha {result.alpha:g}, one-sided"
        )
    return "; ".join(parts) or "no cell compared"


def _mde_line(result: GateResult) -> str:
    """The smallest change the run could have detected, stated, so a pass is not over-read."""
    stochastic = [c for c in result.cells if c.method != "exact"]
    lines = []
    exact = [c for c in result.cells if c.method == "exact"]
    if exact:
        n = min(c.n_current for c in exact)
        reps = f" (one rep in {n} = {_rate(1 / n)})" if n > 1 else ""
        lines.append(f"deterministic cells are compared exactly: every change is seen{reps}")
    if stochastic:
        mdes = [c.metrics["user_failure"].mde for c in stochastic]
        known = [m for m in mdes if m is not None]
        undetectable = len(mdes) - len(known)
        if known:
            lines.append(
                f"stochastic cells: smallest detectable rise of a failure rate {_rate(min(known))} "
                f"(median {_rate(sorted(known)[len(known) // 2])}) at n={min(c.n_current for c in stochastic)}, "
                f"level alpha/{max(1, result.tests)}"
            )
        if undetectable:
            lines.append(f"{undetectable} stochastic cell(s) too small to detect any rise at this alpha: add reps")
    return "; ".join(lines)


def render_markdown(result: GateResult, max_rows: int = 200) -> str:
    verdict = result.verdict.heading
    regressions = result.regressions
    lines = [
        f"## misfit-bench gate: {verdict}",
        "",
        *_options_banner(result),
        *_partial_banner(result),
        f"{len(regressions)} regressed of {len(result.cells)} cells compared; "
        f"{len(result.not_compared)} not compared; {len(result.harness_errors)} harness errors.",
        "",
        f"- current: `{result.current.manifest.get('suite_id', '?')}` ({result.current.directory})",
        f"- baseline: `{result.baseline.manifest.get('suite_id', '?')}` ({result.baseline.directory})",
        f"- thresholds: {', '.join(f'`{t}`' for t in result.thresholds.values())}",
        f"- method: {_method_line(result)}",
        f"- detectable: {_mde_line(result) or 'n/a'}",
    ]
    if any(c.method != "exact" for c in result.cells):
        lines.append(
            f"- power: each failure rate of a stochastic cell needs {_rate(result.target.power)} power to see a rise "
            f"of its threshold, at least +{_points(result.target.min_effect)}, at level alpha/{max(1, result.tests)}; "
            f"{len(result.inconclusive)} cell(s) inconclusive"
        )
    if result.outside_plan:
        lines.append(
            f"- outside the current run's plan (not compared): {sum(result.outside_plan.values())} baseline cells "
            f"({_per_sdk(result.outside_plan)})"
        )
    if result.version_changes:
        changes = ", ".join(
            f"{sdk} {a or 'absent'} -> {b or 'absent'}" for sdk, (a, b) in result.version_changes.items()
        )
        lines.append(f"- **SDK versions changed**: {changes}")
    lines += _table(
        "Regressions",
        ["cell", "baseline", "current", "what got worse"],
        [
            [
                c.name,
                c.baseline_text,
                c.current_text,
                "; ".join(metric_change(m, c.metrics[m], result.thresholds[m]) for m in c.regressed),
            ]
            for c in regressions
        ],
        max_rows,
    )
    lines += _table(
        "Inconclusive: too few reps to see a rise of the effect size",
        ["cell", "baseline", "current", "power"],
        [[c.name, c.baseline_text, c.current_text, underpowered(result, c)] for c in result.underpowered_cells],
        max_rows,
    )
    lines += _table(
        "Inconclusive: timed out where the baseline did not (may be machine load)",
        ["cell", "baseline", "current", "why"],
        [[c.name, c.baseline_text, c.current_text, timed_out(result, c)] for c in result.timed_out_cells],
        max_rows,
    )
    others = [c for c in result.cells if c.changed and not c.regressed and not c.withheld]
    lines += _table(
        "Changed within thresholds",
        ["cell", "baseline", "current"],
        [[c.name, c.baseline_text, c.current_text] for c in others],
        max_rows,
    )
    lines += _table(
        "Not compared: planned, but in one run only, or not run in one",
        ["sdk", "cells", "baseline -> current"],
        [
            [sdk, str(sum(why.values())), ", ".join(f"{b} -> {c}: {n}" for (b, c), n in sorted(why.items()))]
            for sdk, why in result.not_compared_by_sdk.items()
        ],
        max_rows,
        count=len(result.not_compared),
    )
    for title, errors in (
        ("Harness errors in the current run", result.harness_errors),
        ("Harness errors in the baseline (not compared)", result.baseline_harness_errors),
    ):
        if errors:
            lines += ["", f"### {title} ({len(errors)})", "", *(f"- {e}" for e in errors[:max_rows])]
    return "\n".join(lines) + "\n"


def timed_out(result: GateResult, cell: CellResult) -> str:
    """``timed out: may be machine load; re-run it (`bench run --rerun RUN --outcome timeout`);
    withheld: timeout 0% -> 100% (+100pp, allowed +0pp)``: why, what to do (RUN is the current
    run's folder), and what was not counted."""
    withheld = "; ".join(metric_change(m, cell.metrics[m], result.thresholds[m]) for m in cell.withheld)
    rerun = f"`bench run --rerun {result.current.directory} --outcome timeout`"
    return f"{LOAD_REASON} ({rerun}); withheld: {withheld}"


def inconclusive_reason(result: GateResult, cell: CellResult) -> str:
    """Every reason an inconclusive cell has: too little power, timeouts, or both."""
    reasons = [underpowered(result, cell)] if cell.underpowered else []
    return "; ".join([*reasons, *([timed_out(result, cell)] if cell.withheld else [])])


def underpowered(result: GateResult, cell: CellResult) -> str:
    """``raised, timeout: power 37% to see +10pp at n=40 (paired); 66 reps would give 80%``:
    failure rates with the same figures are named together."""
    groups: dict[tuple[float, float, float], list[str]] = {}
    for name in cell.underpowered:
        m = cell.metrics[name]
        assert m.power is not None and m.effect is not None
        groups.setdefault((m.power, m.effect, m.before), []).append(name)
    parts = []
    for (power, effect, before), names in groups.items():
        needed = reps_needed(cell.method == "paired", result.level, before, effect, result.target.power)
        would = f"{needed} reps" if needed else f"more than {MOST_REPS} reps"
        parts.append(
            f"{', '.join(names)}: power {_rate(power)} to see +{_points(effect)} at n={cell.n_current} "
            f"({cell.method}); {would} would give {_rate(result.target.power)}"
        )
    return "; ".join(parts)


def _points(fraction: float) -> str:
    return f"{fraction * 100:.1f}".removesuffix(".0") + "pp"


def _per_sdk(counts: dict[str, int]) -> str:
    return ", ".join(f"{sdk} {count}" for sdk, count in counts.items())


def _options_banner(result: GateResult) -> list[str]:
    """Runs made with different cell-deciding options, compared because the caller asked: said first."""
    if not result.option_changes:
        return []
    return [
        f"> **Options changed** (compared anyway, --allow-option-change): {option_change_text(result.option_changes)}; "
        "a cell that changed may have followed the option, not the SDK.",
        "",
    ]


def _partial_banner(result: GateResult) -> list[str]:
    """A run that did not finish what it planned is said to be partial before anything else."""
    reason = result.current.partial
    if reason is None:
        return []
    finish = f"Finish it with `bench run --resume {result.current.directory}`"
    if result.allow_partial:
        text = f"the cells it did not write are not compared (--allow-partial). {finish}."
    else:
        text = f"the cells it did not write are not compared. {finish}, or pass --allow-partial to gate what it has."
    return [f"> **Partial run**: {reason}; {text}", ""]


def _table(title: str, header: list[str], rows: list[list[str]], max_rows: int, count: int | None = None) -> list[str]:
    """A markdown table under ``### title (count)``; count defaults to the number of rows."""
    if not rows:
        return []
    escape = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = [
        "",
        f"### {title} ({len(rows) if count is None else count})",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    out += ["| " + " | ".join(escape(v) for v in row) + " |" for row in rows[:max_rows]]
    if len(rows) > max_rows:
        out.append(f"\n... and {len(rows) - max_rows} more (see the JUnit report or --json)")
    return out


def append_step_summary(markdown: str, path: Path, limit: int = SUMMARY_LIMIT) -> None:
    """Append to $GITHUB_STEP_SUMMARY, cut at a line so the file stays under GitHub's limit."""
    used = path.stat().st_size if path.exists() else 0
    room = max(0, limit - used)
    data = markdown.encode()
    if len(data) > room:
        note = b"\n\n... report truncated to fit the step summary limit; the full report is in the job log.\n"
        data = data[: max(0, room - len(note))]
        data = data[: data.rfind(b"\n") + 1] + note
    with path.open("ab") as handle:
        handle.write(data)


def write_junit(result: GateResult, path: Path) -> None:
    """One testcase per gated cell (classname sdk.mode.variant.protocol, name scenario); cells
    not compared are skipped testcases in a second suite, so CI shows them without failing."""
    root = ET.Element("testsuites", name="bench gate")
    gated = ET.SubElement(
        root,
        "testsuite",
        name="bench gate",
        tests=str(len(result.cells)),
        failures=str(len(result.regressions)),
        errors="0",
        skipped=str(len(result.inconclusive)),
    )
    for cell in result.cells:
        case = ET.SubElement(gated, "testcase", classname=_classname(cell.key), name=str(cell.key[-1]), time="0")
        if cell.regressed:
            detail = "; ".join(metric_change(m, cell.metrics[m], result.thresholds[m]) for m in cell.regressed)
            failure = ET.SubElement(case, "failure", message=detail, type="regression")
            failure.text = f"{cell.name}\nbaseline: {cell.baseline_text}\ncurrent: {cell.current_text}\n{detail}"
        elif cell.inconclusive:
            reason = inconclusive_reason(result, cell)
            ET.SubElement(case, "skipped", type="inconclusive", message=f"inconclusive: {reason}")
    missing = ET.SubElement(
        root,
        "testsuite",
        name="bench gate: not compared",
        tests=str(len(result.not_compared)),
        failures="0",
        errors="0",
        skipped=str(len(result.not_compared)),
    )
    for item in result.not_compared:
        case = ET.SubElement(missing, "testcase", classname=_classname(item.key), name=str(item.key[-1]), time="0")
        ET.SubElement(case, "skipped", message=f"baseline: {item.baseline}; current: {item.current}")
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _classname(key: tuple[Any, ...]) -> str:
    agent, sdk, mode, variant, protocol, stream, _ = key
    return ".".join([*([agent] if agent else []), sdk, mode, variant, protocol, *(["stream"] if stream else [])])


def workflow_annotations(result: GateResult) -> list[str]:
    """At most ten ``::error`` workflow commands, worst regression first."""
    lines = []
    for cell in result.regressions[:MAX_ANNOTATIONS]:
        detail = "; ".join(metric_change(m, cell.metrics[m], result.thresholds[m]) for m in cell.regressed)
        message = f"{cell.name}: {cell.baseline_text} -> {cell.current_text}: {detail}"
        lines.append(f"::error title=bench gate regression::{_escape_command(message)}")
    return lines


def _escape_command(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def to_json(result: GateResult, exit_code: int) -> dict[str, Any]:
    """The whole comparison; ``exit_code`` is the command's (the library does not decide exit codes)."""

    def metrics(cell: CellResult) -> dict[str, Any]:
        return {name: {k: v for k, v in vars(m).items() if k != "tested"} for name, m in cell.metrics.items()}

    return {
        "exit_code": exit_code,
        "current": str(result.current.directory),
        "baseline": str(result.baseline.directory),
        "thresholds": [str(t) for t in result.thresholds.values()],
        "alpha": result.alpha,
        "tests": result.tests,
        "sdk_version_changes": {k: list(v) for k, v in result.version_changes.items()},
        "option_changes": {k: {"baseline": b, "current": c} for k, (b, c) in result.option_changes.items()},
        "cells": [
            {
                **dict(zip(KEY, c.key, strict=True)),
                "method": c.method,
                "n_baseline": c.n_baseline,
                "n_current": c.n_current,
                "baseline": c.baseline_text,
                "current": c.current_text,
                "changed": c.changed,
                "regressed": c.regressed,
                "sdk_version_changed": c.sdk_version_changed,
                "metrics": metrics(c),
                "inconclusive": c.inconclusive,
                "withheld": c.withheld,
                "inconclusive_reason": inconclusive_reason(result, c) if c.inconclusive else None,
            }
            for c in result.cells
        ],
        "not_compared": [
            {**dict(zip(KEY, n.key, strict=True)), "baseline": n.baseline, "current": n.current}
            for n in result.not_compared
        ],
        "harness_errors": result.harness_errors,
        "verdict": str(result.verdict),
        "partial": result.current.partial,
        "outside_plan": result.outside_plan,
        "power": {"target": result.target.power, "min_effect": result.target.min_effect, "level": result.level},
    }


def json_default(value: object) -> object:
    """What json cannot write itself (a Path, an enum): its text. Floats never get here."""
    return str(value)


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as valid JSON: a float that is not finite (NaN, infinity) is written null, where
    ``json.dumps`` would write the invalid ``NaN`` (it writes floats itself, never asking
    ``default``)."""
    return json.dumps(_finite(data), indent=indent, default=json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
