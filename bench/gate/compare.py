"""``bench gate``: compare a run with a baseline cell by cell and fail CI when failure handling
got worse (after an SDK upgrade in a lock file, or a change to one's own agent configuration).

A cell is (sdk, mode, variant, protocol, stream, scenario), aggregated over its reps. Six
metrics, higher is worse for all of them:

- ``user_failure``: share of reps whose outcome reached the user (``wrong`` + ``empty``);
- ``raised``: share of reps that raised; ``timeout``: share of reps that stalled past the time limit;
- ``runaway``: share of reps the call cap stopped;
- ``model_calls``: mean model calls, the runs table's column of that name (its thresholds are
  rises, so ``model_calls:+0.5`` allows half a call more per rep);
- ``billed_tokens``: mean extra billed tokens (input + output, from the provider's ledger) over
  the same cell's control in the same run: the mean of its scenarios with no fault (``valid``,
  ``expense_valid``) on the same task. A cell with no control in its run is compared on its
  whole bill. Extra, not total, so a longer system prompt in a new SDK version does not read
  as worse failure handling; it is still seen on the control cells' own model_calls and outcome.

Deterministic cells (scripted scenarios) are compared exactly, and one that newly reaches an
outcome of :data:`NEVER_WITHIN` (a rise of its rate) is a regression whatever the thresholds:
nothing scripted moves there by chance. Stochastic ones (``stochastic:``
scenarios, fault label ``mix:...``) with one-sided exact tests (``bench.gate.stats``), Holm-corrected
over every test that could reach significance, and a regression must be both beyond its
threshold and significant.

Two runs made with different cell-deciding options (:data:`CELL_OPTIONS`: the call cap, the time
limit, reps, seed, the task and answer source) are not comparable: a cell capped at one call is a
runaway for the cap, not for the SDK. The gate refuses them naming the option, unless asked to
compare anyway (``allow_option_change``), and then says so first.

A timeout is not trusted as a regression: a cell that timed out more often than in the baseline
may have met a loaded machine (a stall of one step past the limit), not a worse SDK, so what a
timeout moves (the timeout rate, and the calls and tokens of reps it cut short) is withheld and
the cell is INCONCLUSIVE with :data:`LOAD_REASON`. The other rates still count: a timed-out rep
is neither ``raised`` nor a user failure, so a rise there came from reps that finished.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.core.vocabulary import USER_FAILURE, Outcome
from bench.gate import stats
from bench.gate.power import DEFAULT_MIN_EFFECT, DEFAULT_POWER, PowerTarget, cell_power
from bench.results import labels
from bench.results.labels import agent_column, row_label
from bench.results.manifest import type_mismatch
from bench.results.store import ResultsError, read_manifest, read_table, resolve_run
from bench.run.runplan import RunPlan, partial_reason

KEY = ["agent", "sdk", "mode", "variant", "protocol", "stream", "scenario"]
"""A gated cell: ``agent`` is the user's own agent ("" for a built-in adapter), so two agents of
one SDK in one repo are gated apart."""
RATES = {
    "user_failure": USER_FAILURE,
    "raised": frozenset({Outcome.RAISED}),
    "timeout": frozenset({Outcome.TIMEOUT}),
    "runaway": frozenset({Outcome.RUNAWAY}),
}
NEVER_WITHIN = ("user_failure", "timeout", "runaway")
"""The rates of the outcomes a deterministic cell may not newly reach whatever the thresholds
(``wrong``, ``empty``, ``timeout``, ``runaway``): their thresholds are for stochastic cells, where
a rise can be chance. A timeout still goes to :data:`LOAD_REASON` (inconclusive, never a pass)."""
MEANS = ("model_calls", "billed_tokens")
METRICS = (*RATES, *MEANS)
EXTRA_COLUMNS = ("tokens_total", "tokens_raw")
"""Per-rep columns besides the metrics: the scale of ``billed_tokens:+N%``, and the whole bill (a
``model_calls:+N%`` threshold is a percent of the cell's own calls)."""
LOAD_REASON = "timed out: may be machine load; re-run it"
"""Why a cell whose timeouts rose is inconclusive rather than regressed (``bench run --rerun RUN
--outcome timeout`` re-runs exactly those cells)."""
MOVED_BY_TIMEOUTS = ("timeout", "model_calls", "billed_tokens")
"""The metrics a timed-out rep moves: its own rate, and the calls and tokens it was cut short at."""
TOKEN_NOISE = 0
"""Billed tokens by which two runs of the same cell differ on one machine, as measured (docs/ci.md,
"Token noise"): two runs of the default matrix, 5289 cells and 6924 requests each, billed and
reported tokens equal in every cell and request. Every id the provider draws is a function of the
cell (bench.provider.wire.IdSource), and no SDK's own random ids reach a billed field. The default
``billed_tokens`` threshold allows exactly this much: any extra token is a change to look at."""
DEFAULT_THRESHOLDS = (
    "user_failure:+0pp", "raised:+0pp", "timeout:+0pp", "runaway:+0pp",
    "model_calls:+0.5", f"billed_tokens:+{TOKEN_NOISE}",
)  # fmt: skip


class GateInputError(Exception):
    """Bad thresholds, config or runs: a usage error, one line naming the file and field."""


class EmptyRunError(Exception):
    """The current run or the baseline has no cell at all (a job cancelled before its first cell
    finished): nothing to gate, said in one line with its own exit code."""


class Verdict(StrEnum):
    """The gate's answer; the CLI maps each to its exit code (``bench.cli.exit_codes``)."""

    PASS = "pass"
    FAIL = "regression"
    HARNESS_ERROR = "harness error"
    NOTHING_TO_COMPARE = "nothing to compare"
    PARTIAL = "partial run"
    INCONCLUSIVE = "inconclusive"

    @property
    def heading(self) -> str:
        """The word in the report's heading: ``## misfit-bench gate: PASS``."""
        return "FAIL" if self is Verdict.FAIL else self.value.upper()


# --- thresholds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    """How much worse a metric may get: ``+2pp`` (rates, percentage points), ``+10%`` (relative to
    the baseline: its rate, or the cell's whole calls or bill for means), ``+0.5`` (means, absolute)."""

    metric: str
    amount: float
    unit: Literal["pp", "%", ""]

    def limit(self, before: float, scale: float) -> float:
        if self.unit == "pp":
            return self.amount / 100
        if self.unit == "%":
            return self.amount / 100 * (before if self.metric in RATES else scale)
        return self.amount

    def exceeded(self, before: float, after: float, scale: float) -> bool:
        return after - before > self.limit(before, scale) + 1e-9

    def __str__(self) -> str:
        return f"{self.metric}:+{self.amount:g}{self.unit}"


_THRESHOLD = re.compile(r"^\s*([a-z_]+)\s*:\s*\+?\s*(\d+(?:\.\d+)?)\s*(pp|%)?\s*$")


def parse_threshold(text: str) -> Threshold:
    """``metric:+AMOUNT[pp|%]``; the error says what is expected."""
    match = _THRESHOLD.match(text)
    if not match:
        raise GateInputError(f"threshold {text!r}: expected METRIC:+AMOUNT[pp|%], e.g. user_failure:+2pp")
    metric, amount, unit = match.group(1), float(match.group(2)), match.group(3) or ""
    if metric not in METRICS:
        raise GateInputError(f"threshold {text!r}: unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if metric in RATES and unit == "":
        raise GateInputError(f"threshold {text!r}: {metric} is a rate; give pp or %, e.g. {metric}:+2pp")
    if metric in MEANS and unit == "pp":
        raise GateInputError(f"threshold {text!r}: {metric} is a mean; give a number or %, e.g. {metric}:+10%")
    return Threshold(metric, amount, unit)  # type: ignore[arg-type]


class GateConfig(BaseModel):
    """``[tool.bench.gate]`` in the pyproject.toml of the working directory."""

    model_config = ConfigDict(extra="forbid")

    thresholds: list[str] = Field(default_factory=list)
    """Same syntax as ``--threshold``, e.g. ["user_failure:+2pp", "billed_tokens:+10%"]."""
    alpha: float = Field(0.05, gt=0, lt=1)
    """Family-wise error rate for stochastic cells (Holm over the tests)."""
    fail_on_missing: bool = False
    """Fail (exit 1) when a baseline cell is missing from the current run."""
    power: float = Field(DEFAULT_POWER, gt=0, lt=1)
    """The chance a stochastic cell's reps must give of detecting a rise of the effect size;
    below it the cell is INCONCLUSIVE (``bench gate --plan`` says how many reps it needs)."""
    min_effect_pp: float = Field(DEFAULT_MIN_EFFECT * 100, gt=0, le=100)
    """The smallest rise of a failure rate, in percentage points, a stochastic cell must be able
    to detect (its threshold when that is larger)."""


def load_config(directory: Path) -> GateConfig:
    path = directory / "pyproject.toml"
    if not path.is_file():
        return GateConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise GateInputError(f"{path}: cannot read: {error}") from None
    section = data.get("tool", {}).get("bench", {}).get("gate", {})
    try:
        config = GateConfig.model_validate(section)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GateInputError(f"{path}: [tool.bench.gate] {where}: {first['msg']}") from None
    for index, text in enumerate(config.thresholds):
        try:
            parse_threshold(text)
        except GateInputError as error:
            raise GateInputError(f"{path}: [tool.bench.gate] thresholds[{index}]: {error}") from None
    return config


def resolve_thresholds(config: GateConfig, overrides: list[str]) -> dict[str, Threshold]:
    """Defaults, then pyproject, then the command line; the last word per metric wins."""
    chosen = {t.metric: t for t in map(parse_threshold, DEFAULT_THRESHOLDS)}
    for text in [*config.thresholds, *overrides]:
        threshold = parse_threshold(text)
        chosen[threshold.metric] = threshold
    return chosen


def resolve_alpha(config: GateConfig, alpha: float | None) -> float:
    """``--alpha`` when given (checked here, as pyproject's is by GateConfig), else the config's:
    the one check the comparison and ``--plan`` both go through."""
    if alpha is None:
        return config.alpha
    if not 0 < alpha < 1:
        raise GateInputError(f"--alpha {alpha}: expected a number between 0 and 1")
    return alpha


# --- loading ------------------------------------------------------------------------------


@dataclass
class Side:
    label: str
    directory: Path
    manifest: dict[str, Any]
    runs: pd.DataFrame

    @property
    def plan(self) -> RunPlan:
        return RunPlan.from_manifest(self.manifest)

    @property
    def partial(self) -> str | None:
        """Why this run is not all it planned (interrupted, a partial merge), or None."""
        return partial_reason(self.manifest, len(self.runs))


def load_side(label: str, reference: str | None, results_root: Path) -> Side:
    try:
        directory = resolve_run(reference, results_root)
        manifest = read_manifest(directory)
        table = read_table(directory, "runs")
    except ResultsError as error:
        raise GateInputError(f"{label} run: {error}") from None
    if table.num_rows == 0:
        status = manifest.get("status") or "unknown"
        raise EmptyRunError(
            f"the {label} run {directory} has no cells (status {status}; cancelled before its first cell "
            "finished?): nothing to gate"
        )
    runs = table.to_pandas()
    runs = runs.assign(agent=agent_column(runs))
    if several := _environments_per_adapter(runs):
        raise GateInputError(
            f"the {label} run {directory} ran {several} in more than one environment, and a gate cell has "
            "no environment to tell them apart: gate one environment per SDK (compare releases with bench changelog)"
        )
    return Side(label, directory, manifest, runs)


def _environments_per_adapter(runs: pd.DataFrame) -> str:
    """``langchain (langchain==1.3.18, pinned)`` for each SDK (or own agent) whose rows ran in more
    than one environment (``bench run --release a --release b``); "" when none did."""
    if "environment" not in runs.columns:
        return ""
    frame = runs[["agent", "sdk", "environment"]].dropna(subset=["environment"]).drop_duplicates()
    found: dict[str, list[str]] = {}
    for agent, sdk, environment in frame.itertuples(index=False, name=None):
        found.setdefault(adapter_name((agent, sdk)), []).append(str(environment))
    return ", ".join(f"{name} ({', '.join(sorted(envs))})" for name, envs in sorted(found.items()) if len(envs) > 1)


def gated_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows that enter the comparison (not unsupported, not harness errors), with one column
    per metric, per rep."""
    rows = runs[~runs["outcome"].isin([Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR])].copy()
    rows["stream"] = rows["stream"].astype(bool)
    for metric, outcomes in RATES.items():
        rows[metric] = rows["outcome"].isin(outcomes).astype(float)
    rows["model_calls"] = rows["model_calls"].astype(float)
    billed = rows["input_tokens_billed"].fillna(0) + rows["output_tokens_billed"].fillna(0)
    rows["tokens_total"] = rows["tokens_raw"] = billed.astype(float)
    control_key = [*KEY[:-1], "task"]
    control = rows[rows["fault"] == "none"].groupby(control_key)["tokens_total"].mean().rename("control")
    rows = rows.join(control, on=control_key)
    rows["has_control"] = rows["control"].notna()
    rows["billed_tokens"] = rows["tokens_total"] - rows["control"].fillna(0)
    # The scale a ``billed_tokens:+10%`` threshold is a percent of: the cell's whole bill, or what a
    # clean answer costs when that is more (a rejected request bills nothing at all).
    rows["tokens_total"] = rows[["tokens_total", "control"]].max(axis=1)
    return rows


def adapter_name(key: tuple[Any, ...]) -> str:
    """The name SDK versions and plans are keyed by (:func:`bench.results.labels.adapter_name`)."""
    return labels.adapter_name(key[0], key[1])


def _cell_ids(runs: pd.DataFrame) -> dict[tuple[Any, ...], list[str]]:
    ids: dict[tuple[Any, ...], list[str]] = {}
    frame = runs[[*KEY, "cell_id"]].assign(stream=runs["stream"].astype(bool))
    for *key, cell_id in frame.itertuples(index=False, name=None):
        ids.setdefault(tuple(key), []).append(cell_id)
    return ids


def cell_name(key: tuple[Any, ...]) -> str:
    agent, sdk, mode, variant, protocol, stream, scenario = key
    return f"{row_label(agent, sdk)}/{mode}/{variant}/{protocol}{'/stream' if stream else ''} x {scenario}"


@dataclass
class CellData:
    """One cell of one run, as plain lists (one entry per rep): per-cell pandas is too slow for
    a matrix of thousands of cells."""

    units: list[tuple[int, int]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in (*METRICS, *EXTRA_COLUMNS)})
    controlled: bool = True
    """Every rep had a no-fault control in its run (so ``billed_tokens`` is extra, not whole)."""

    def mean(self, column: str) -> float:
        known = [v for v in self.values[column] if not math.isnan(v)]
        return sum(known) / len(known) if known else 0.0

    def text(self) -> str:
        """``fallback(4)``, or with reps ``raised(2) x3, ok(1) x7``: what a reader recognises."""
        if len(self.labels) == 1:
            return self.labels[0]
        counts: dict[str, int] = {}
        for label in self.labels:
            counts[label] = counts.get(label, 0) + 1
        return ", ".join(f"{label} x{count}" for label, count in sorted(counts.items(), key=lambda kv: -kv[1]))

    def on_whole_bill(self) -> CellData:
        """The same cell with ``billed_tokens`` as the whole bill: when only one run has the
        control, extra in one and whole in the other would not compare."""
        return replace(self, values=self.values | {"billed_tokens": self.values["tokens_raw"]}, controlled=False)

    def signature(self) -> dict[tuple[str, str], Fraction]:
        """The share of reps per (outcome and calls, exception): two runs that differ only in
        their number of reps have the same signature."""
        counts = Counter(zip(self.labels, self.exceptions, strict=True))
        return {key: Fraction(count, len(self.labels)) for key, count in counts.items()}


def cells_of(rows: pd.DataFrame) -> dict[tuple[Any, ...], CellData]:
    cells: dict[tuple[Any, ...], CellData] = {}
    value_columns = [*METRICS, *EXTRA_COLUMNS]
    frame = rows[[*KEY, "seed", "rep", "outcome", "exception_type", "has_control", *value_columns]]
    for record in frame.itertuples(index=False, name=None):
        width = len(KEY)
        key, (seed, rep, outcome, exception, controlled), values = (
            record[:width],
            record[width : width + 5],
            record[width + 5 :],
        )
        cell = cells.setdefault(key, CellData())
        cell.controlled = cell.controlled and bool(controlled)
        cell.units.append((int(seed), int(rep)))
        calls = values[value_columns.index("model_calls")]
        cell.labels.append(f"{outcome}({'' if math.isnan(calls) else int(calls)})")
        cell.exceptions.append(exception if isinstance(exception, str) else "")
        for column, value in zip(value_columns, values, strict=True):
            cell.values[column].append(float(value))
    return cells


def presence_of(runs: pd.DataFrame) -> dict[tuple[Any, ...], str]:
    """Per cell of a whole runs table: ``run``, ``unsupported`` or ``harness_error``."""
    frame = runs[[*KEY, "outcome"]].assign(stream=runs["stream"].astype(bool))
    outcomes: dict[tuple[Any, ...], set[str]] = {}
    for *key, outcome in frame.itertuples(index=False, name=None):
        outcomes.setdefault(tuple(key), set()).add(outcome)
    return {key: _presence(found) for key, found in outcomes.items()}


def _presence(outcomes: set[str]) -> str:
    if outcomes == {Outcome.UNSUPPORTED}:
        return Outcome.UNSUPPORTED.value
    if outcomes <= {Outcome.UNSUPPORTED, Outcome.HARNESS_ERROR}:
        return Outcome.HARNESS_ERROR.value
    return "run"


# --- comparison ---------------------------------------------------------------------------


@dataclass
class MetricResult:
    before: float
    after: float
    scale: float
    exceeded: bool
    whatever_threshold: bool = False
    """Exceeded only because a deterministic cell newly reached a :data:`NEVER_WITHIN` outcome:
    within its threshold, a regression all the same."""
    p: float | None = None
    p_adjusted: float | None = None
    mde: float | None = None
    tested: bool = False
    power: float | None = None
    """Stochastic cells, failure rates: the chance the test had of detecting a rise of the effect size."""
    effect: float | None = None
    """The rise that power is against (the threshold, at least the minimum effect)."""

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass
class CellResult:
    key: tuple[Any, ...]
    method: Literal["exact", "paired", "unpaired"]
    n_baseline: int
    n_current: int
    baseline_text: str
    current_text: str
    changed: bool
    metrics: dict[str, MetricResult]
    regressed: list[str] = field(default_factory=list)
    sdk_version_changed: bool = False
    underpowered: list[str] = field(default_factory=list)
    """Failure rates whose test had less than the target power: the cell is inconclusive."""
    withheld: list[str] = field(default_factory=list)
    """Metrics beyond their threshold in a cell that timed out more often than the baseline, not
    counted as regressions (:data:`LOAD_REASON`): the cell is inconclusive."""

    @property
    def name(self) -> str:
        return cell_name(self.key)

    @property
    def inconclusive(self) -> bool:
        return bool(self.underpowered or self.withheld) and not self.regressed

    def severity(self) -> tuple[float, float, float]:
        rate = max((self.metrics[m].delta for m in self.regressed if m in RATES), default=0.0)
        calls = self.metrics["model_calls"].delta if "model_calls" in self.regressed else 0.0
        tokens = self.metrics["billed_tokens"]
        relative = tokens.delta / tokens.scale if "billed_tokens" in self.regressed and tokens.scale else 0.0
        return rate, calls, relative


@dataclass
class NotCompared:
    key: tuple[Any, ...]
    baseline: str
    current: str


@dataclass
class GateResult:
    current: Side
    baseline: Side
    thresholds: dict[str, Threshold]
    alpha: float
    cells: list[CellResult]
    not_compared: list[NotCompared]
    version_changes: dict[str, tuple[str | None, str | None]]
    harness_errors: list[str]
    baseline_harness_errors: list[str]
    tests: int
    fail_on_missing: bool
    target: PowerTarget = field(default_factory=PowerTarget)
    outside_plan: dict[str, int] = field(default_factory=dict)
    """Baseline cells the current run did not plan (other SDKs, filtered out, another shard), per SDK."""
    allow_partial: bool = False
    option_changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Cell-deciding options that differ, compared anyway (``--allow-option-change``): option ->
    (baseline, current)."""

    @property
    def regressions(self) -> list[CellResult]:
        return sorted((c for c in self.cells if c.regressed), key=lambda c: c.severity(), reverse=True)

    @property
    def missing_from_current(self) -> list[NotCompared]:
        return [n for n in self.not_compared if n.baseline != "absent" and n.current in ("absent", Outcome.UNSUPPORTED)]

    @property
    def verdict(self) -> Verdict:
        if self.harness_errors:
            return Verdict.HARNESS_ERROR
        if self.regressions or (self.fail_on_missing and self.missing_from_current):
            return Verdict.FAIL
        if self.current.partial and not self.allow_partial:
            return Verdict.PARTIAL
        if not self.cells:
            return Verdict.NOTHING_TO_COMPARE
        if self.inconclusive:
            return Verdict.INCONCLUSIVE
        return Verdict.PASS

    @property
    def inconclusive(self) -> list[CellResult]:
        return [c for c in self.cells if c.inconclusive]

    @property
    def underpowered_cells(self) -> list[CellResult]:
        """Inconclusive for too few reps (``bench gate --plan`` says how many)."""
        return [c for c in self.inconclusive if c.underpowered]

    @property
    def timed_out_cells(self) -> list[CellResult]:
        """Inconclusive for timeouts the baseline did not have (:data:`LOAD_REASON`)."""
        return [c for c in self.inconclusive if c.withheld]

    @property
    def level(self) -> float:
        """The first Holm step's level, which the detectable sizes and the power are stated at."""
        return self.alpha / max(1, self.tests)

    @property
    def not_compared_by_sdk(self) -> dict[str, Counter[tuple[str, str]]]:
        """Per SDK, how many cells were not compared and why (baseline presence, current presence)."""
        counts: dict[str, Counter[tuple[str, str]]] = {}
        for item in self.not_compared:
            counts.setdefault(adapter_name(item.key), Counter())[(item.baseline, item.current)] += 1
        return dict(sorted(counts.items()))


def stochastic_scenarios(*sides: Side) -> set[str]:
    """Scenarios drawn at random: the fault label a ``stochastic:`` scenario gets (``mix:...``),
    or a ``stochastic:`` scenario of that name in the scenario files each run's manifest records
    (``request.scenario_paths``; relative ones are the project's, as ``bench run --resume`` reads
    them), whose label may be custom. A file that does not load is an input error naming it, never
    a silent fall-back to an exact comparison. A run whose manifest says ``"live": true`` (a real
    model) is stochastic in every cell (``compare``)."""
    names: set[str] = set()
    for side in sides:
        runs = side.runs[["scenario", "fault"]].drop_duplicates()
        labelled = set(runs.loc[runs["fault"].astype(str).str.startswith("mix:"), "scenario"])
        names |= labelled | _stochastic_by_definition(side, set(runs["scenario"]) - labelled)
    return names


def scenario_paths(manifest: dict[str, Any]) -> list[Path]:
    """The scenario files and folders a run was planned from, as its manifest records them; the
    shipped library for a run whose manifest predates the record."""
    from bench.scenarios.files import SCENARIO_DIR

    recorded = (manifest.get("request") or {}).get("scenario_paths")
    if not isinstance(recorded, list) or not recorded:
        return [SCENARIO_DIR]
    return [SCENARIO_DIR.parent / str(path) for path in recorded]  # an absolute path is kept as is


def _stochastic_by_definition(side: Side, wanted: set[str]) -> set[str]:
    from bench.scenarios.files import SCENARIO_DIR, ScenarioError, load_paths

    paths = scenario_paths(side.manifest)
    here, gone = [p for p in paths if p.exists()], [p for p in paths if not p.exists()]
    where = f"{side.label} run {side.directory}"
    try:
        defined = {s.name: s for s in load_paths(here)} if here else {}
        unknown = wanted - set(defined)
        if gone and unknown:  # recorded on another machine: the shipped library may define them
            defined |= {s.name: s for s in load_paths([SCENARIO_DIR]) if s.name in unknown}
    except ScenarioError as error:
        problems = "; ".join(str(error).splitlines())
        raise GateInputError(f"{where}: cannot tell which scenarios are stochastic: {problems}") from None
    if gone and (missing := sorted(wanted - set(defined))):
        raise GateInputError(
            f"{where}: scenario file(s) {', '.join(map(str, gone))} recorded in its manifest are not here: cannot "
            f"tell whether {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} are stochastic"
        )
    return {name for name in wanted if name in defined and defined[name].stochastic is not None}


def _exact_cell(
    key: tuple[Any, ...], base: CellData, cur: CellData, thresholds: dict[str, Threshold], exact: bool = True
) -> CellResult:
    """A deterministic cell (``exact``): each metric against its threshold, and a rise of a
    :data:`NEVER_WITHIN` rate whatever its threshold. The point estimates of a stochastic cell
    (``exact`` False), whose significance :func:`_stochastic_cell` adds."""
    metrics = {}
    for metric in METRICS:
        before, after = base.mean(metric), cur.mean(metric)
        scale = base.mean(metric if metric == "model_calls" else "tokens_total") if metric in MEANS else before
        beyond = thresholds[metric].exceeded(before, after, scale)
        newly = exact and metric in NEVER_WITHIN and after - before > 1e-9
        metrics[metric] = MetricResult(before, after, scale, beyond or newly, newly and not beyond)
    result = CellResult(
        key,
        "exact",
        len(base.units),
        len(cur.units),
        base.text(),
        cur.text(),
        base.signature() != cur.signature(),
        metrics,
    )
    result.regressed = [m for m, r in metrics.items() if r.exceeded]
    return result


def _stochastic_cell(
    key: tuple[Any, ...], base: CellData, cur: CellData, thresholds: dict[str, Threshold]
) -> CellResult:
    """Point estimates and raw one-sided p-values; Holm and MDE come once every cell is known.

    Paired when both runs ran exactly the same (seed, rep) units of the cell: the provider draws
    the same behaviours for the same unit, so the pairs share their luck and the test is sharper."""
    result = _exact_cell(key, base, cur, thresholds, exact=False)
    unique = len(set(base.units)) == len(base.units) and len(set(cur.units)) == len(cur.units)
    paired = unique and set(base.units) == set(cur.units)
    result.method = "paired" if paired else "unpaired"
    result.changed = False
    for metric, m in result.metrics.items():
        b = [v for v in base.values[metric] if not math.isnan(v)]
        c = [v for v in cur.values[metric] if not math.isnan(v)]
        if paired:
            after = dict(zip(cur.units, cur.values[metric], strict=True))
            diff = [after[u] - v for u, v in zip(base.units, base.values[metric], strict=True)]
            diff = [d for d in diff if not math.isnan(d)]
            m.tested = any(d != 0 for d in diff)
            m.p = stats.sign_test_greater(diff)  # on 0/1 rates this is the exact McNemar test
        elif metric in RATES:
            m.tested = sum(b) + sum(c) > 0
            m.p = stats.fisher_greater(int(sum(c)), len(c), int(sum(b)), len(b))
        else:
            m.tested = len(set(b) | set(c)) > 1
            m.p = stats.mann_whitney_greater(c, b)
    return result


def _finish_stochastic(
    cells: list[CellResult], alpha: float, thresholds: dict[str, Threshold], target: PowerTarget
) -> int:
    """Holm over every test that could reach significance (a table with no discordant pair or
    no failure at all has p = 1 whatever happens, so it is left out of the family, after Tarone),
    then a regression is a metric beyond its threshold *and* significant, and a failure rate
    whose test had too little power to see a rise of the effect size makes the cell
    inconclusive (``bench.gate.power``). Returns the family size."""
    family = [(c, name) for c in cells if c.method != "exact" for name, m in c.metrics.items() if m.tested]
    # p can be exactly 0.0 (Fisher and the sign test underflow from about a thousand reps): not None.
    adjusted = stats.holm([1.0 if (p := c.metrics[name].p) is None else p for c, name in family])
    for (cell, name), p_adj in zip(family, adjusted, strict=True):
        cell.metrics[name].p_adjusted = p_adj
    level = alpha / max(1, len(family))
    for cell in cells:
        if cell.method == "exact":
            continue
        for name, m in cell.metrics.items():
            if name in RATES:
                base_fails = round(m.before * cell.n_baseline)
                m.mde = (
                    stats.mde_paired(level, cell.n_baseline)
                    if cell.method == "paired"
                    else stats.mde_unpaired(level, base_fails, cell.n_baseline, cell.n_current)
                )
                m.effect = target.effect(thresholds[name].limit(m.before, m.scale))
                m.power = cell_power(
                    cell.method == "paired", level, m.before, cell.n_baseline, cell.n_current, m.effect
                )
        significant = [n for n, m in cell.metrics.items() if m.p_adjusted is not None and m.p_adjusted <= alpha]
        cell.changed = bool(significant)
        cell.regressed = [n for n in significant if cell.metrics[n].exceeded]
        cell.underpowered = [n for n, m in cell.metrics.items() if m.power is not None and m.power < target.power]
    return len(family)


def _withhold_timeouts(cell: CellResult) -> None:
    """A cell that timed out more often than in the baseline: what the timeouts moved is withheld
    from its regressions (it is inconclusive, :data:`LOAD_REASON`, unless another rate rose)."""
    if cell.metrics["timeout"].delta <= 0:
        return
    cell.withheld = [m for m in cell.regressed if m in MOVED_BY_TIMEOUTS]
    cell.regressed = [m for m in cell.regressed if m not in MOVED_BY_TIMEOUTS]


def _recorded_options(manifest: dict[str, Any]) -> dict[str, Any]:
    options = manifest.get("options") or (manifest.get("request") or {}).get("options")
    return options if isinstance(options, dict) else {}


def _call_cap(manifest: dict[str, Any]) -> Any:
    if "call_cap" in (options := _recorded_options(manifest)):
        return options["call_cap"]
    from bench.run.runner import DEFAULT_CALL_CAP  # the runner (and the provider) only for an old manifest

    return DEFAULT_CALL_CAP


CELL_OPTIONS: dict[str, Any] = {
    "--call-cap": _call_cap,
    "--time-limit": lambda m: _recorded_options(m).get("time_limit_s") or "each adapter's own",
    "--reps": lambda m: int(m.get("reps") or 1),
    "--seed": lambda m: int(m.get("seed") or 0),
    "--tasks": lambda m: (m.get("request") or {}).get("tasks", "builtin"),
    "--cassettes": lambda m: _recorded_options(m).get("cassettes") or "none (synthesised answers)",
}
"""The ``bench run`` options that decide what a cell's outcome is, as each run's manifest records
them (what an older manifest does not record is the option's default): two runs that differ in
one are not comparable cell by cell. Not here: how a run was executed (``--concurrency``,
``--procs``, the executor), which never changes an outcome."""


def option_changes(current: dict[str, Any], baseline: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{"--call-cap": ("12", "1")}``: each cell-deciding option whose value differs, baseline first."""
    shown = lambda value: f"{value:g}" if isinstance(value, float) else str(value)  # noqa: E731
    changes = {}
    for option, value in CELL_OPTIONS.items():
        before, after = shown(value(baseline)), shown(value(current))
        if before != after:
            changes[option] = (before, after)
    return changes


def option_change_text(changes: dict[str, tuple[str, str]]) -> str:
    """``--call-cap 12 in the baseline, 1 in the current run``, joined by ``; ``."""
    return "; ".join(f"{o} {b} in the baseline, {c} in the current run" for o, (b, c) in changes.items())


def sdk_versions(side: Side) -> dict[str, str | None]:
    versions: dict[str, str | None] = {
        sdk: str(v) for sdk, v in side.runs.dropna(subset=["sdk_version"]).groupby("sdk")["sdk_version"].first().items()
    }
    versions.update({k: v for k, v in (side.manifest.get("sdk_versions") or {}).items()})
    return versions


def compare(
    current: Side,
    baseline: Side,
    thresholds: dict[str, Threshold],
    alpha: float,
    fail_on_missing: bool = False,
    allow_partial: bool = False,
    target: PowerTarget | None = None,
    allow_option_change: bool = False,
) -> GateResult:
    """Every cell the current run planned ends up compared or counted as not compared, never
    dropped; baseline cells outside that plan are counted apart, per SDK. Runs whose
    cell-deciding options differ are refused unless ``allow_option_change``."""
    if (typed := type_mismatch(current.manifest, baseline.manifest)) is not None:
        raise GateInputError(f"{current.directory} and {baseline.directory}: {typed}")
    options = option_changes(current.manifest, baseline.manifest)
    if options and not allow_option_change:
        raise GateInputError(
            f"{current.directory} and {baseline.directory} are not comparable: {option_change_text(options)} "
            "(an outcome may follow the option, not the SDK); run both alike, or pass --allow-option-change "
            "to compare them anyway"
        )
    gated = {side.label: cells_of(gated_rows(side.runs)) for side in (current, baseline)}
    present = {side.label: presence_of(side.runs) for side in (current, baseline)}
    randomised = stochastic_scenarios(current, baseline)
    live = bool(current.manifest.get("live") or baseline.manifest.get("live"))
    plan = current.plan
    ids = _cell_ids(baseline.runs) if plan.shard else {}
    planned = {key for key in present["baseline"] if key in present["current"] or plan.covers(key, ids.get(key, ()))}
    outside = Counter(adapter_name(key) for key in present["baseline"] if key not in planned)
    changed_versions = _version_changes(baseline, current, plan)
    cells, not_compared = [], []
    keys = set(present["current"]) | planned
    for key in sorted(keys, key=lambda k: tuple(map(str, k))):
        base, cur = gated["baseline"].get(key), gated["current"].get(key)
        if base is None or cur is None:
            presence = (present["baseline"].get(key, "absent"), present["current"].get(key, "absent"))
            if presence != (Outcome.UNSUPPORTED, Outcome.UNSUPPORTED):
                not_compared.append(NotCompared(key, *presence))
            continue
        if base.controlled != cur.controlled:
            base, cur = base.on_whole_bill(), cur.on_whole_bill()
        judge = _stochastic_cell if live or key[-1] in randomised else _exact_cell
        cell = judge(key, base, cur, thresholds)
        cell.sdk_version_changed = adapter_name(key) in changed_versions
        cells.append(cell)
    target = target or PowerTarget()
    tests = _finish_stochastic(cells, alpha, thresholds, target)
    for cell in cells:
        _withhold_timeouts(cell)
    return GateResult(
        current,
        baseline,
        thresholds,
        alpha,
        cells,
        not_compared,
        changed_versions,
        _harness_lines(current.runs),
        _harness_lines(baseline.runs),
        tests,
        fail_on_missing,
        target,
        dict(sorted(outside.items())),
        allow_partial,
        options,
    )


def _version_changes(baseline: Side, current: Side, plan: RunPlan) -> dict[str, tuple[str | None, str | None]]:
    """SDK versions that differ, for the SDKs the current run planned (an SDK it did not run is
    not "absent now", it is outside the comparison)."""
    base_versions, cur_versions = sdk_versions(baseline), sdk_versions(current)
    sdks = set(base_versions) | set(cur_versions)
    if plan.sdks is not None:
        sdks &= plan.sdks | set(cur_versions)
    return {
        sdk: (base_versions.get(sdk), cur_versions.get(sdk))
        for sdk in sorted(sdks)
        if base_versions.get(sdk) != cur_versions.get(sdk)
    }


def _harness_lines(runs: pd.DataFrame) -> list[str]:
    lines = []
    for _, row in runs[runs["outcome"] == Outcome.HARNESS_ERROR].iterrows():
        detail = " ".join(str(row[c])[:200] for c in ("exception_type", "exception_message") if isinstance(row[c], str))
        lines.append(f"{cell_name(tuple(row[k] for k in KEY))}: {detail}".rstrip())
    return lines


# --- entry point ------------------------------------------------------------------------------


def run_gate(
    current: str | None,
    baseline: str,
    results_root: Path,
    overrides: list[str],
    alpha: float | None,
    fail_on_missing: bool | None,
    config_dir: Path,
    allow_partial: bool = False,
    allow_option_change: bool = False,
) -> GateResult:
    """The library entry point; raises GateInputError for bad input (a usage error)."""
    config = load_config(config_dir)
    thresholds = resolve_thresholds(config, overrides)
    level = resolve_alpha(config, alpha)
    cur = load_side("current", current, results_root)
    base = load_side("baseline", baseline, results_root)
    missing = config.fail_on_missing if fail_on_missing is None else fail_on_missing
    target = PowerTarget(config.power, config.min_effect_pp / 100)
    return compare(cur, base, thresholds, level, missing, allow_partial, target, allow_option_change)
