"""The decision table: per SDK x mode x variant, per fault family, what the caller gets and what
a fault costs, one score under the user's weights, ranked; and what the ranking cannot see.

Everything comes from a :class:`bench.report.build.Report` (its matrix cells, their costs and the
scenario families), so the pick, the report and ``bench view`` never disagree about a cell.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench.core.vocabulary import USER_FAILURE, Outcome
from bench.pick.weights import Weights
from bench.report.build import CostCell, MatrixCell, Report
from bench.report.matrix import family_rank, label, outcome_rank
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
_WEIGHT_NAMES: dict[str, str] = {str(outcome): name for outcome, name in PENALISED.items()}
NOT_SCORED = {Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR}
"""Cells that say nothing about the SDK: not run, or the harness failed."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FamilyResult(_Model):
    """One fault family of one row: the worst outcome any of its rows reached (by :func:`severity`)."""

    token: str
    """The terminal matrix's code of that outcome (``r2``, ``x1``, ``E1``, ``L12``); ``*`` when not
    every row of its cell reached it, ``+`` when the family's scenarios did not all end the same way."""
    outcome: str
    label: str
    """The outcome's label and where it was reached (``EMPTY (1) in 1 of 2 rows of truncated_persistent``)."""
    scenarios: int
    penalty: float
    """Mean :func:`cell_penalty` of the family's cells (what the family adds to the score, per cell)."""


class PickRow(_Model):
    rank: int
    sdk: str
    language: str = "python"
    """What the row's SDK is used from (``python`` or ``typescript``): a pick may need the other one."""
    mode: str
    variant: str
    score: float
    """Mean penalty per measured cell under the weights (lower is better)."""
    noise: float
    """The score's standard error from the cells whose rows (reps, protocols, streams) disagree:
    how far it moves with the rows a run happens to hold; 0 when every cell's rows agree."""
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
    """Scenarios whose answer reached the caller WRONG or EMPTY (in any row of the cell)."""


def row_name(row: PickRow) -> str:
    """``pydantic-ai native`` (``langchain tool hardened`` for a variant other than the default):
    a row in sentences and figures."""
    return " ".join([row.sdk, row.mode, *([row.variant] if row.variant != "default" else [])])


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


def outcome_weight(outcome: str, weights: Weights) -> float:
    """What one row that ended in ``outcome`` costs the user: the weight :data:`PENALISED` names
    for it, nothing for ok, recovered and fallback (they pay only their calls). The one reading of
    the weights: the score adds it up (:func:`cell_penalty`), the glyph ranks by it (:func:`severity`)."""
    name = _WEIGHT_NAMES.get(str(outcome))
    return float(getattr(weights, name)) if name else 0.0


def severity(outcome: str, weights: Weights) -> tuple[float, int]:
    """How bad ``outcome`` is for the user, worst last: by what the score charges a row of it
    (:func:`outcome_weight`), the matrix's order (:data:`bench.report.matrix.OUTCOME_ORDER`)
    among outcomes charged alike (an EMPTY answer before a runaway under the default weights)."""
    return outcome_weight(outcome, weights), outcome_rank(outcome)


def measured_rows(cell: MatrixCell) -> int:
    """The cell's rows that say something of the SDK (not :data:`NOT_SCORED`)."""
    return sum(n for o, n in cell.outcomes.items() if o not in NOT_SCORED)


def cell_penalty(cell: MatrixCell, cost: CostCell | None, weights: Weights) -> float:
    """What one cell costs the user: each outcome's weight by its share of the cell's rows (a
    mixed cell pays in part), plus its extra calls and tokens over the control."""
    measured = measured_rows(cell) or 1
    penalty = sum(outcome_weight(o, weights) * n / measured for o, n in cell.outcomes.items() if o not in NOT_SCORED)
    if cost is not None:
        penalty += weights.extra_call * max(cost.extra_calls, 0.0)
        penalty += weights.extra_ktokens * max(cost.extra_tokens, 0.0) / 1000
    return penalty


def _family(cells: list[MatrixCell], penalties: list[float], weights: Weights) -> FamilyResult:
    """The family's glyph: the worst outcome any row of its cells reached, by :func:`severity`
    (the score's weights), not each cell's majority: one protocol's EMPTY answer shows as ``E``;
    ``penalties`` are the cells' :func:`cell_penalty`."""
    reached = [(cell, o) for cell in cells for o, n in cell.outcomes.items() if n and o not in NOT_SCORED]
    cell, outcome = max(reached, key=lambda at: (*severity(at[1], weights), at[0].outcome_calls.get(at[1]) or 0))
    calls, share, rows = cell.outcome_calls.get(outcome), cell.outcomes[outcome], measured_rows(cell)
    exception = cell.exception_type if outcome == cell.outcome else None
    said = label(outcome, calls, exception or "")
    said += f" in {share} of {rows} rows of {cell.scenario}" if share < rows else f" in {cell.scenario}"
    tokens = {token(c.model_dump()) for c in cells}
    glyph = token({"outcome": outcome, "model_calls": calls, "mixed": share < rows})
    return FamilyResult(
        token=glyph + ("+" if len(tokens) > 1 else ""),
        outcome=outcome,
        label=said,
        scenarios=len(cells),
        penalty=round(sum(penalties) / len(penalties), 4),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def cell_variance(cell: MatrixCell, weights: Weights) -> float:
    """The variance of the cell's penalty as a mean over its rows: the spread of what its rows
    pay (:func:`outcome_weight`) over their count; 0 when they agree."""
    rows = measured_rows(cell)
    if rows < 2:
        return 0.0
    shares = {o: n / rows for o, n in cell.outcomes.items() if o not in NOT_SCORED}
    mean = sum(outcome_weight(o, weights) * share for o, share in shares.items())
    return sum(share * (outcome_weight(o, weights) - mean) ** 2 for o, share in shares.items()) / rows


def _row(key: tuple[str, str, str], cells: list[MatrixCell], report: Report, weights: Weights) -> PickRow:
    costs = {(c.sdk, c.mode, c.variant, c.scenario): c for c in report.cost}
    measured = [c for c in cells if c.outcome not in NOT_SCORED]
    penalty = {c.scenario: cell_penalty(c, costs.get((*key, c.scenario)), weights) for c in measured}
    by_family: dict[str, list[MatrixCell]] = defaultdict(list)
    for cell in measured:
        by_family[report.families.get(cell.scenario, "other")].append(cell)
    row_costs = [costs[k] for k in ((*key, c.scenario) for c in measured) if k in costs]
    families = {
        f: _family(by_family[f], [penalty[c.scenario] for c in by_family[f]], weights)
        for f in sorted(by_family, key=family_rank)
    }
    return PickRow(
        rank=0,
        sdk=key[0],
        language=report.languages.get(key[0], "python"),
        mode=key[1],
        variant=key[2],
        score=round(sum(penalty.values()) / len(penalty), 4),
        noise=round(math.sqrt(sum(cell_variance(c, weights) for c in measured)) / len(measured), 4),
        cells=len(measured),
        unmeasured=sorted(c.scenario for c in cells if c.outcome in NOT_SCORED),
        families=families,
        mean_extra_calls=_mean([c.extra_calls for c in row_costs]),
        mean_extra_tokens=_mean([c.extra_tokens for c in row_costs]),
        raises=sorted({c.exception_type for c in measured if c.outcome == Outcome.RAISED and c.exception_type}),
        handed=sorted(c.scenario for c in measured if any(c.outcomes.get(o) for o in USER_FAILURE)),
    )


def tied_with_top(table: Pick) -> list[PickRow]:
    """The rows next after the first whose score the run cannot tell from the first's: within twice
    the standard error of the difference (:attr:`PickRow.noise`), or the same to the two decimals
    shown; the first row apart ends them."""
    tied: list[PickRow] = []
    for row in table.rows[1:]:
        top = table.rows[0]
        apart = row.score - top.score > 2 * math.sqrt(row.noise**2 + top.noise**2)
        if apart and f"{row.score:.2f}" != f"{top.score:.2f}":
            break
        tied.append(row)
    return tied


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
