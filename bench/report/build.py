"""A run turned into one :class:`Report`: the data every format renders (markdown, HTML,
``--json``) and the notebook shows. The JSON form is this model dumped, so it validates
against :func:`json_schema` by construction and a test checks it does."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from bench.report import claims as claims_module
from bench.report import cost, layers, matrix, sweep, tools
from bench.report import field as field_module
from bench.results.labels import agent_column, label_agents
from bench.results.store import read_manifest, read_table

REPORT_VERSION: Literal[1] = 1


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MatrixCell(_Row):
    sdk: str
    mode: str
    variant: str
    scenario: str
    outcome: str
    label: str
    model_calls: float | None
    exception_type: str | None
    mixed: bool
    """Protocols, streams or reps of this cell disagree; ``outcome`` is the majority."""
    n: int
    outcomes: dict[str, int]
    """Every outcome the cell's supported rows reached, with how many did (the score's shares)."""
    outcome_calls: dict[str, float | None]
    """The median model calls of the rows of each of ``outcomes`` (a minority's glyph: ``E1``)."""


class CostCell(_Row):
    sdk: str
    mode: str
    variant: str
    scenario: str
    extra_calls: float
    extra_tokens: float
    n: int


class CostSummary(_Row):
    sdk: str
    mode: str
    variant: str
    faults: int
    control_calls: float
    control_tokens: float
    mean_extra_calls: float
    max_extra_calls: float
    mean_extra_tokens: float
    max_extra_tokens: float


class TokenGap(_Row):
    sdk: str
    result: Literal["success", "failure"]
    cells: int
    no_usage: int
    billed: float
    reported: float
    unreported: float
    unreported_pct: float | None


class FamilyGap(_Row):
    family: str
    sdk: str
    cells: int
    billed_mean: float
    reported_mean: float


class CheckResult(_Row):
    says: str
    verdict: claims_module.Verdict
    cells: int
    evidence: list[str]
    counter: list[str]


class ClaimResult(_Row):
    id: str
    sdk: str
    claim: str
    source: str
    verdict: claims_module.Verdict
    checks: list[CheckResult]


class SweepRow(_Row):
    faults: str
    sdk: str
    mode: str
    variant: str
    rate: float
    n: int
    """Distinct reps: the sample size of the intervals (protocols share a rep's draws)."""
    rows: int
    success: int
    raised: int
    user_visible: int
    failure_rate: float
    failure_lo: float
    failure_hi: float
    success_rate: float
    success_lo: float
    success_hi: float
    mean_calls: float
    tokens_per_success: float | None


class ToolCell(_Row):
    sdk: str
    mode: str
    variant: str
    scenario: str
    outcome: str
    label: str
    mixed: bool
    n: int
    model_calls: float | None
    tool_calls: float | None
    """Median runs of the harness tool (a call whose arguments fail its schema never runs it)."""
    failed_runs: int
    """Rows with a failed call the run went on after (``tool_error_to_model`` not null)."""
    to_model: int
    """Of ``failed_runs``: every failure went back to the model paired with its call id."""
    structured_runs: int
    structured: int
    """Of ``structured_runs``: the error paired back was the tool's structured error."""
    after_fatal: int | None
    """Most tool runs after a non-retryable error; None: no such error."""


class ToolSummary(_Row):
    sdk: str
    cells: int
    failed_runs: int
    to_model: int
    structured_runs: int
    structured: int
    max_after_fatal: int | None
    budget: str | None
    """Budget readings of the SDK's cells on tool_budget_shared, ``reading count; ...``."""


class BudgetRow(_Row):
    sdk: str
    mode: str
    variant: str
    budget_outcome: str
    budget_label: str
    output_outcome: str | None
    output_label: str | None
    """The same cell on malformed_then_valid (an output retry on its own)."""
    reading: str


class RetryLayerRow(_Row):
    sdk: str
    mode: str
    """A mode, or ``all`` when every mode of the SDK reads the same (likewise variant, protocol)."""
    variant: str
    protocol: str
    scenario: str
    layers: str
    client: float | None
    framework: float | None
    output: float | None
    wait_ms: float | None
    """Median total time between failed responses and the next request."""
    outcome: str
    label: str
    mixed: bool
    n: int


class PersistentRow(_Row):
    sdk: str
    mode: str
    variant: str
    protocol: str
    scenario: str
    requests: int | None
    """The most requests one run took (``model_calls``)."""
    ended: str
    outcome: str
    label: str
    time_limit_s: float | None
    n: int


class GateChange(_Row):
    cell: str
    baseline: str
    current: str
    worse: str
    """What got worse, as ``bench gate`` words it; empty for a change within thresholds."""


class BaselineChanges(_Row):
    """``bench gate``'s comparison of this run with a baseline, for the PR summary."""

    baseline_suite_id: str
    verdict: str
    compared: int
    regressions: list[GateChange]
    changed: list[GateChange]
    """Cells that changed within the thresholds."""
    not_compared: int
    version_changes: dict[str, str]
    option_changes: str = ""
    """The cell-deciding options the two runs differ in (``bench gate --allow-option-change``'s
    words), compared anyway; empty when they match."""


class ReleaseChange(_Row):
    before: str
    after: str
    cell: str
    scenario: str
    was: str
    now: str


class ReleaseGrid(_Row):
    """One SDK run in several releases (``bench run --release``): release x scenario, and what
    changed from each release to the next (``bench changelog``)."""

    sdk: str
    scenarios: list[str]
    releases: list[str]
    cells: list[list[str]]
    """One row per release, one text per scenario (the behaviour most supported cells had)."""
    changes: list[ReleaseChange]


class Report(_Row):
    report_version: Literal[1] = REPORT_VERSION
    suite_id: str
    schema_version: str
    sdk_versions: dict[str, str | None]
    languages: dict[str, str] = {}
    """The language each SDK (or user's agent) of the run is used from: ``python`` or ``typescript``."""
    seed: int | None
    reps: int | None
    rows: int
    outcomes: dict[str, int]
    matrix: list[MatrixCell]
    cost: list[CostCell]
    cost_summary: list[CostSummary]
    uncontrolled_scenarios: list[str]
    """Scenarios whose task has no ``valid`` control (ticket_triage): not in the cost tables."""
    token_gap: list[TokenGap]
    claims: list[ClaimResult]
    sweep: list[SweepRow]
    tool_task_rows: int = 0
    """Rows of the tool task (order_lookup), supported or not."""
    tool_cells: list[ToolCell] = []
    tool_summary: list[ToolSummary] = []
    tool_budget: list[BudgetRow] = []
    retry_layers: list[RetryLayerRow] = []
    persistent_faults: list[PersistentRow] = []
    mode_matrix: list[MatrixCell] = []
    """The matrix over variants: one cell per (sdk, mode, scenario), variant ``all``."""
    families: dict[str, str] = {}
    """Scenario -> fault family (``bench.report.matrix.fault_family``)."""
    baseline: BaselineChanges | None = None
    token_gap_families: list[FamilyGap] = []
    """Billed against reported tokens per fault family and SDK (means per cell)."""
    negative_cost_notes: list[str] = []
    releases: list[ReleaseGrid] = []
    """Per SDK the run holds several releases of (empty otherwise)."""
    field: list[dict[str, Any]] = []
    """The field catalogue's rows (``bench.report.field.field_table``): empty for a run without
    field scenarios."""
    """Why a cost summary row's mean +tokens is negative (``cost.negative_means``)."""


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as plain dicts, NaN as None (JSON has no NaN)."""
    out = []
    for record in frame.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in record.items()})
    return out


def _languages(runs: pd.DataFrame) -> dict[str, str]:
    """``sdk -> language`` (runs before schema 4 hold no ``language`` column: all Python)."""
    if "language" not in runs.columns:
        return {str(sdk): "python" for sdk in sorted(set(runs["sdk"]))}
    pairs = runs[["sdk", "language"]].drop_duplicates()
    return {
        str(sdk): str(language or "python") for sdk, language in sorted(zip(pairs.sdk, pairs.language, strict=True))
    }


def build(runs: pd.DataFrame, manifest: dict[str, Any], claims_path: Path = claims_module.CLAIMS_FILE) -> Report:
    """The report of one run (``runs`` as read by ``bench.results.store.read_table``)."""
    claims = claims_module.load_claims(claims_path)
    versions = manifest.get("sdk_versions") or {}
    present = set(runs["sdk"]) | set(agent_column(runs))  # own agents' versions are by agent name
    runs = label_agents(runs)  # a user's agent is grouped on its own, "support (pydantic-ai)"
    tool_cells = tools.tool_cells(runs)
    return Report(
        suite_id=str(manifest.get("suite_id", "")),
        schema_version=str(manifest.get("schema_version", "")),
        sdk_versions={k: v for k, v in sorted(versions.items()) if k in present},
        languages=_languages(runs),
        seed=manifest.get("seed"),
        reps=manifest.get("reps"),
        rows=len(runs),
        outcomes=matrix.outcome_totals(runs),
        matrix=[MatrixCell(**r) for r in _records(matrix.landing(runs))],
        cost=[CostCell(**r) for r in _records(cost.cost_cells(runs))],
        cost_summary=[CostSummary(**r) for r in _records(cost.cost_summary(runs))],
        uncontrolled_scenarios=cost.uncontrolled_scenarios(runs),
        token_gap=[TokenGap(**r) for r in _records(cost.token_gap(runs))],
        claims=[ClaimResult(**r) for r in claims_module.evaluate(claims, runs)],
        sweep=[SweepRow(**r) for r in _records(sweep.sweep_table(runs))],
        tool_task_rows=int((runs["task"] == tools.TOOL_TASK).sum()),
        tool_cells=[ToolCell(**r) for r in _records(tool_cells)],
        tool_summary=[ToolSummary(**r) for r in _records(tools.tool_summary(runs))],
        tool_budget=[BudgetRow(**r) for r in _records(tools.budget_rows(tool_cells, runs))],
        retry_layers=[RetryLayerRow(**r) for r in _records(layers.retry_layers(runs))],
        persistent_faults=[PersistentRow(**r) for r in _records(layers.persistent_faults(runs))],
        mode_matrix=[MatrixCell(**r) for r in _records(matrix.landing_by_mode(runs))],
        families=matrix.scenario_families(runs),
        token_gap_families=[FamilyGap(**r) for r in _records(cost.token_gap_by_family(runs))],
        negative_cost_notes=cost.negative_means(cost.cost_summary(runs), cost.cost_cells(runs)),
        releases=release_grids(runs),
        field=field_module.field_table(runs),
    )


def release_grids(runs: pd.DataFrame) -> list[ReleaseGrid]:
    """Per SDK that ran in more than one release: its grid and changes (empty otherwise)."""
    from bench.report import changelog

    sdks = changelog.multi_release_sdks(runs) if "environment" in runs.columns else []
    steps = changelog.steps(runs) if sdks else []
    grids = []
    for sdk in sdks:
        table = changelog.grid(runs, sdk)
        changed = [c for step in steps if step.sdk == sdk for c in step.changes]
        changes = [
            ReleaseChange(
                before=c.before, after=c.after, cell=c.cell, scenario=c.scenario, was=str(c.was), now=str(c.now)
            )
            for c in changed
        ]
        cells = [[str(v) for v in row] for row in table.to_numpy()]
        releases = [str(i) for i in table.index]
        scenarios = list(table.columns)
        grids.append(ReleaseGrid(sdk=sdk, scenarios=scenarios, releases=releases, cells=cells, changes=changes))
    return grids


def build_from_run(
    directory: Path, claims_path: Path = claims_module.CLAIMS_FILE, baseline: Path | None = None
) -> tuple[Report, pd.DataFrame]:
    """The report of the run in ``directory``; with ``baseline``, ``bench gate``'s comparison
    with that run too (thresholds from ./pyproject.toml, as the gate reads them)."""
    runs = read_table(directory, "runs").to_pandas()
    report = build(runs, read_manifest(directory), claims_path)
    if baseline is not None:
        report.baseline = baseline_changes(directory, baseline)
    return report, runs


def baseline_changes(directory: Path, baseline: Path) -> BaselineChanges:
    """The gate's verdict, regressions and other changed cells, ready to render. Raises
    ``bench.gate.compare.GateInputError`` (exit 2) when the baseline is not a run."""
    from bench.gate.compare import option_change_text, run_gate
    from bench.gate.output import metric_change

    result = run_gate(
        str(directory), str(baseline), directory.parent, [], None, None, Path.cwd(), allow_option_change=True
    )  # a summary says what differs (``option_changes``) rather than refuse
    regressions = [
        GateChange(
            cell=c.name,
            baseline=c.baseline_text,
            current=c.current_text,
            worse="; ".join(metric_change(m, c.metrics[m], result.thresholds[m]) for m in c.regressed),
        )
        for c in result.regressions
    ]
    changed = [
        GateChange(cell=c.name, baseline=c.baseline_text, current=c.current_text, worse="")
        for c in result.cells
        if c.changed and not c.regressed
    ]
    return BaselineChanges(
        baseline_suite_id=str(result.baseline.manifest.get("suite_id", "")),
        verdict=str(result.verdict),
        compared=len(result.cells),
        regressions=regressions,
        changed=changed,
        not_compared=len(result.not_compared),
        version_changes={sdk: f"{a or 'absent'} -> {b or 'absent'}" for sdk, (a, b) in result.version_changes.items()},
        option_changes=option_change_text(result.option_changes),
    )


def json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "misfit-bench report"
    return schema
