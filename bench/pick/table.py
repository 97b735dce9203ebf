"""The decision table: per SDK x mode x variant, per fault family, what the caller gets and what
a fault costs, one score under the user's weights, ranked; and what the ranking cannot see.

Everything comes from a :class:`bench.report.build.Report` (its matrix cells, their costs and the
scenario families), so the pick, the report and ``bench view`` never disagree about a cell.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench.core.vocabulary import USER_FAILURE, Outcome
from bench.pick.weights import Weights
from bench.report.build import CostCell, MatrixCell, Report
from bench.report.matrix import family_rank, outcome_rank
from bench.report.terminal import token

Variants = Literal["default", "all"]
PENALISED = {
    Outcome.WRONG: "wrong",
    Outcome.EMPTY: "empty",
    Outcome.RUNAWAY: "runaway",
    Outcome.TIMEOUT: "timeout",
    Outcome.RAISED: "raised",
}
"""Outcome -> the weight it pays; ok, recovered and the variant's fallback pay only their calls."""
NOT_SCORED = {Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR}
"""Cells that say nothing about the SDK: not run, or the harness failed."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FamilyResult(_Model):
    """One fault family of one row: its worst cell (by the matrix's outcome order)."""

    token: str
    """The terminal matrix's code of the worst cell (``r2``, ``x1``, ``W1``, ``L12``); ``+`` when
    the family's scenarios did not all end the same way."""
    outcome: str
    label: str
    scenarios: int


class PickRow(_Model):
    rank: int
    sdk: str
    mode: str
    variant: str
    score: float
    """Mean penalty per measured cell under the weights (lower is better)."""
    cells: int
    """Measured cells (supported, no harness error), controls included."""
    unmeasured: list[str]
    """Scenarios of the run this row did not measure (unsupported or a harness error)."""
    families: dict[str, FamilyResult]
    mean_extra_calls: float | None
    """Mean over the row's fault cells with a control; None when none has one."""
    mean_extra_tokens: float | None
    raises: list[str]
    """Short names of the exceptions that reached the caller."""
    handed: list[str]
    """Scenarios whose answer reached the caller WRONG or EMPTY (majority of the cell)."""


class Pick(_Model):
    suite_id: str
    variants: Variants
    weights: Weights
    families: list[str]
    rows: list[PickRow]
    unsupported: list[str]
    """``sdk/mode/variant`` rows unsupported throughout: not ranked."""
    cannot_see: list[str]
    """What the ranking cannot see, in sentences."""


def cell_penalty(cell: MatrixCell, cost: CostCell | None, weights: Weights) -> float:
    """What one cell costs the user: each outcome's weight by its share of the cell's rows (a
    mixed cell pays in part), plus its extra calls and tokens over the control."""
    values = weights.model_dump()
    measured = sum(n for o, n in cell.outcomes.items() if o not in NOT_SCORED) or 1
    penalty: float = sum(values[PENALISED[o]] * n / measured for o, n in cell.outcomes.items() if o in PENALISED)  # type: ignore[index]
    if cost is not None:
        penalty += weights.extra_call * max(cost.extra_calls, 0.0)
        penalty += weights.extra_ktokens * max(cost.extra_tokens, 0.0) / 1000
    return penalty


def _family(cells: list[MatrixCell]) -> FamilyResult:
    worst = max(cells, key=lambda c: (outcome_rank(c.outcome), c.model_calls or 0))
    tokens = {token(c.model_dump()) for c in cells}
    return FamilyResult(
        token=token(worst.model_dump()) + ("+" if len(tokens) > 1 else ""),
        outcome=worst.outcome,
        label=worst.label,
        scenarios=len(cells),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _row(key: tuple[str, str, str], cells: list[MatrixCell], report: Report, weights: Weights) -> PickRow:
    costs = {(c.sdk, c.mode, c.variant, c.scenario): c for c in report.cost}
    measured = [c for c in cells if c.outcome not in NOT_SCORED]
    by_family: dict[str, list[MatrixCell]] = defaultdict(list)
    for cell in measured:
        by_family[report.families.get(cell.scenario, "other")].append(cell)
    row_costs = [costs[k] for k in ((*key, c.scenario) for c in measured) if k in costs]
    penalties = [cell_penalty(c, costs.get((*key, c.scenario)), weights) for c in measured]
    return PickRow(
        rank=0,
        sdk=key[0],
        mode=key[1],
        variant=key[2],
        score=round(sum(penalties) / len(penalties), 4),
        cells=len(measured),
        unmeasured=sorted(c.scenario for c in cells if c.outcome in NOT_SCORED),
        families={f: _family(by_family[f]) for f in sorted(by_family, key=family_rank)},
        mean_extra_calls=_mean([c.extra_calls for c in row_costs]),
        mean_extra_tokens=_mean([c.extra_tokens for c in row_costs]),
        raises=sorted({c.exception_type for c in measured if c.outcome == Outcome.RAISED and c.exception_type}),
        handed=sorted(c.scenario for c in measured if c.outcome in USER_FAILURE),
    )


def pick(report: Report, weights: Weights | None = None, variants: Variants = "default") -> Pick:
    """The ranked decision table of ``report``'s run: the default variants, or every variant."""
    weights = weights or Weights()
    grouped: dict[tuple[str, str, str], list[MatrixCell]] = defaultdict(list)
    for cell in report.matrix:
        if variants == "all" or cell.variant == "default":
            grouped[(cell.sdk, cell.mode, cell.variant)].append(cell)
    ranked = [_row(key, cells, report, weights) for key, cells in grouped.items() if any_measured(cells)]
    ranked.sort(key=lambda r: (r.score, r.sdk, r.mode, r.variant))
    rows = [r.model_copy(update={"rank": i}) for i, r in enumerate(ranked, 1)]
    families = sorted({f for r in rows for f in r.families}, key=family_rank)
    unsupported = sorted("/".join(k) for k, cells in grouped.items() if not any_measured(cells))
    return Pick(
        suite_id=report.suite_id,
        variants=variants,
        weights=weights,
        families=families,
        rows=rows,
        unsupported=unsupported,
        cannot_see=cannot_see(report, rows, unsupported, variants),
    )


def any_measured(cells: list[MatrixCell]) -> bool:
    return any(c.outcome not in NOT_SCORED for c in cells)


def cannot_see(report: Report, rows: list[PickRow], unsupported: list[str], variants: Variants) -> list[str]:
    """The ranking's blind spots, said with this run's numbers."""
    wrong = [r for r in rows if "wrong" in r.families]
    handed = [r for r in wrong if r.families["wrong"].outcome in USER_FAILURE]
    notes = [
        "Semantic wrongness: a schema-valid answer with wrong values is caught only by a validator of your own "
        f"(the hardened variants add one); here {len(handed)} of {len(wrong)} rows hand a scripted wrong answer "
        "on as if right, and a wrong answer the scenarios do not script is invisible to every row."
    ]
    if unsupported:
        notes.append("Unsupported throughout, not ranked (see `bench list`): " + ", ".join(unsupported) + ".")
    partial = [f"{r.sdk}/{r.mode}/{r.variant} ({len(r.unmeasured)})" for r in rows if r.unmeasured]
    if partial:
        notes.append(
            "Scored on fewer scenarios (unsupported or harness error; a mean over what ran): "
            + ", ".join(partial)
            + "."
        )
    if report.uncontrolled_scenarios:
        notes.append(
            "No control, so no extra calls or tokens counted: " + ", ".join(report.uncontrolled_scenarios) + "."
        )
    if variants == "default":
        notes.append("Default variants only; `--variants all` ranks the hardened ones (retries, validators) too.")
    return notes
