"""``bench gate --plan``: how many reps each stochastic cell of the baseline needs, so that a pass
means "no regression of the threshold's size" rather than "too few reps to tell".

The computation is ``bench.gate.power``'s, turned around: for each failure rate of each stochastic
cell, the fewest reps per run at which the gate's test reaches the target power against a rise of
the effect size, from the baseline's observed rate. The level is alpha over every test the cells
could bring into the gate's Holm family (all five metrics of every stochastic cell: the three
failure rates and the two means, ``bench.gate.compare.METRICS``), the first and strictest Holm step, which
the gate's own power is never computed below, so the reps planned are never too few for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.gate.compare import (
    METRICS,
    RATES,
    GateConfig,
    Side,
    Threshold,
    cell_name,
    cells_of,
    gated_rows,
    stochastic_scenarios,
)
from bench.gate.power import MOST_REPS, PowerTarget, cell_power, reps_needed


@dataclass(frozen=True)
class MetricPlan:
    metric: str
    before: float
    effect: float
    power_now: float | None
    """Power at the baseline's own reps, paired (both runs the same seed and reps)."""
    paired: int | None
    """Reps per run needed when both runs have the same seed and reps (the gate pairs them)."""
    unpaired: int | None
    """Reps per run needed when they do not (different seeds)."""


@dataclass(frozen=True)
class CellPlan:
    key: tuple[Any, ...]
    reps: int
    metrics: list[MetricPlan]

    @property
    def name(self) -> str:
        return cell_name(self.key)

    def binding(self, design: str) -> MetricPlan:
        """The metric that needs the most reps in this design (None counts as the most)."""
        return max(self.metrics, key=lambda m: MOST_REPS + 1 if getattr(m, design) is None else getattr(m, design))


@dataclass(frozen=True)
class GatePlan:
    baseline: Side
    target: PowerTarget
    alpha: float
    level: float
    cells: list[CellPlan]
    tests: int
    """The largest Holm family the stochastic cells could bring: every metric of every cell."""


def plan(baseline: Side, thresholds: dict[str, Threshold], alpha: float, target: PowerTarget) -> GatePlan:
    """The reps each stochastic cell of ``baseline`` needs, per failure rate and design."""
    cells = cells_of(gated_rows(baseline.runs))
    randomised = stochastic_scenarios(baseline)
    live = bool(baseline.manifest.get("live"))
    stochastic = {key: cell for key, cell in cells.items() if live or key[-1] in randomised}
    tests = len(stochastic) * len(METRICS)
    level = alpha / max(1, tests)
    planned = []
    for key in sorted(stochastic, key=lambda k: tuple(map(str, k))):
        cell, metrics = stochastic[key], []
        n = len(cell.units)
        for metric in RATES:
            before = cell.mean(metric)
            if before >= 1.0:
                continue  # fails every rep already: cannot get worse
            effect = target.effect(thresholds[metric].limit(before, before))
            metrics.append(
                MetricPlan(
                    metric,
                    before,
                    effect,
                    cell_power(True, level, before, n, n, effect),
                    reps_needed(True, level, before, effect, target.power),
                    reps_needed(False, level, before, effect, target.power),
                )
            )
        if metrics:
            planned.append(CellPlan(key, n, metrics))
    return GatePlan(baseline, target, alpha, level, planned, tests)


def load_plan(baseline: Side, config: GateConfig, thresholds: dict[str, Threshold], alpha: float) -> GatePlan:
    """``alpha`` as ``bench.gate.compare.resolve_alpha`` gives it (checked, or the config's)."""
    target = PowerTarget(config.power, config.min_effect_pp / 100)
    return plan(baseline, thresholds, alpha, target)


def _rate(value: float) -> str:
    return f"{value * 100:.1f}".removesuffix(".0") + "%"


def _reps(value: int | None) -> str:
    return f"> {MOST_REPS}" if value is None else str(value)


def render_plan(result: GatePlan) -> str:
    """Markdown: one row per stochastic cell, the binding failure rate of each design named."""
    side = result.baseline
    lines = [
        "## misfit-bench gate plan",
        "",
        f"- baseline: `{side.manifest.get('suite_id', '?')}` ({side.directory})",
        f"- asks: {_rate(result.target.power)} power to see a rise of a failure rate by its threshold, at least "
        f"+{result.target.min_effect * 100:g}pp; one-sided, alpha {result.alpha:g} over "
        f"{result.tests} tests, every metric of every stochastic cell "
        f"(level {result.level:.3g}, Holm's strictest step)",
        "- paired: both runs with the same seed and reps (the gate pairs reps by (seed, rep)); "
        "unpaired: different seeds. Method: docs/ci.md",
        "",
    ]
    if not result.cells:
        return "\n".join([*lines, "No stochastic cell in the baseline: every cell is compared exactly."]) + "\n"
    lines += [
        "| cell | baseline rates (reps) | power now | reps needed, paired | reps needed, unpaired |",
        "|---|---|---|---|---|",
    ]
    for cell in result.cells:
        rates = ", ".join(f"{m.metric} {_rate(m.before)}" for m in cell.metrics)
        weakest = min(cell.metrics, key=lambda m: m.power_now if m.power_now is not None else 0.0)
        paired, unpaired = cell.binding("paired"), cell.binding("unpaired")
        lines.append(
            f"| {cell.name} | {rates} ({cell.reps}) | {_rate(weakest.power_now or 0.0)} ({weakest.metric}) "
            f"| {_reps(paired.paired)} ({paired.metric}) | {_reps(unpaired.unpaired)} ({unpaired.metric}) |"
        )
    return "\n".join(lines) + "\n"


def plan_json(result: GatePlan) -> dict[str, Any]:
    return {
        "baseline": str(result.baseline.directory),
        "power": result.target.power,
        "min_effect": result.target.min_effect,
        "alpha": result.alpha,
        "level": result.level,
        "tests": result.tests,
        "cells": [{"cell": c.name, "reps": c.reps, "metrics": [vars(m) for m in c.metrics]} for c in result.cells],
    }
