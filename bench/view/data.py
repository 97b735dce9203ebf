"""What ``bench view`` shows, as plain JSON-ready dicts: the runs, one run's matrix (led by the
run's pick: :func:`pick_lead`), one cell's reps and attempts, the cells that changed between two
runs, and a run's release changelog.

The web app and the static export both serve exactly these documents (one per URL), so what a
CI artefact shows is what the live app shows. A cell here is one (sdk, release, mode, variant,
protocol, scenario): ``release`` is the SDK's version as :func:`bench.report.changelog.with_release`
labels it, so a run of several releases never votes over two of them in one cell; ``sdk`` is
labelled as the report labels it (:func:`bench.results.labels.label_agents`: a user's own agent is
``support (pydantic-ai)``, a row of its own); its outcome is the report's majority vote over reps
(:func:`bench.report.matrix.summarise_cell`), its token the terminal's (:func:`bench.report.terminal.token`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bench.core.vocabulary import WHITE_TEXT
from bench.report import changelog
from bench.report.matrix import (
    OUTCOME_ORDER,
    family_rank,
    fault_family,
    is_sweep,
    label,
    scenario_order,
    short_exception,
    summarise_cell,
)
from bench.report.plots import COLOURS
from bench.report.terminal import token
from bench.results.labels import label_agents
from bench.results.store import read_manifest, read_table
from bench.run.runs import list_runs

if TYPE_CHECKING:
    from bench.pick import Weights

ROW_KEYS = ["sdk", "release", "mode", "variant", "protocol"]
CELL_KEYS = [*ROW_KEYS, "scenario"]
BODY_LIMIT = 200_000
"""Characters of one request or response body shown; the rest is cut with a note (a stream of
hundreds of events is still readable, and one cell's document stays small)."""
REP_COLUMNS = [
    "rep", "cell_id", "outcome", "exception_type", "exception_message", "model_calls", "output_retries",
    "transport_retries", "client_retries", "input_tokens_billed", "output_tokens_billed", "input_tokens_reported",
    "output_tokens_reported", "latency_ms", "returned_valid", "returned_correct", "realistic", "detected_mode",
    "tool_calls", "tool_errors", "tool_retries", "details", "note",
]  # fmt: skip
ATTEMPT_COLUMNS = [
    "attempt", "path", "behaviour", "status_code", "input_tokens", "output_tokens", "request_bytes", "response_bytes",
    "first_byte_ms", "duration_ms", "detected_mode", "enforcement", "realistic", "client_retry_count", "tool_call_id",
    "tool_result_ids",
]  # fmt: skip


def _plain(value: Any) -> Any:
    """A parquet value as JSON: NaN and NA as None, numpy scalars as Python ones, a struct
    (``details``) as an object of its noted fields, a list as a list."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if _plain(v) is not None}
    if isinstance(value, list | tuple) or getattr(value, "ndim", 0) == 1:
        return [_plain(v) for v in value]
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def discover(results_root: Path) -> tuple[list[Path], dict[str, str]]:
    """Every run folder under ``results_root`` (``latest`` names one of them), newest first; and
    the runs that cannot be read, by id, with the status ``bench runs`` lists them with
    (``unreadable: ...``), so one broken manifest does not keep every other run from the view."""
    found = list_runs(results_root)[::-1]
    unreadable = {
        run.id: run.status for run in found if run.status.startswith("unreadable")
    }  # bench.run.runs.summarise
    return [run.path for run in found if run.id not in unreadable], unreadable


@dataclass
class Run:
    """One run folder, its tables read once (the app keeps a Run per folder while it serves)."""

    directory: Path
    _cells: dict[str, Any] = field(default_factory=dict, repr=False)

    @cached_property
    def manifest(self) -> dict[str, Any]:
        return read_manifest(self.directory)

    @property
    def id(self) -> str:
        return self.directory.name

    @cached_property
    def runs(self) -> pd.DataFrame:
        table = read_table(self.directory, "runs").to_pandas()
        # Every own agent has variant "own": unlabelled, two agents of one SDK would be one cell.
        return changelog.with_release(label_agents(table[~is_sweep(table)].reset_index(drop=True)))

    @cached_property
    def attempts(self) -> dict[str, pd.DataFrame]:
        """Attempts by cell_id, in the order they were served."""
        table = read_table(self.directory, "attempts").to_pandas()
        table = table.sort_values(["started_at", "attempt"], na_position="last", kind="stable")
        return {cell_id: group for cell_id, group in table.groupby("cell_id", sort=False)}

    @cached_property
    def groups(self) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
        """(cell key, its rows), in matrix order: the index of a cell in the matrix document."""
        return [(tuple(key), rows) for key, rows in self.runs.groupby(CELL_KEYS, sort=True)]

    def summary(self) -> dict[str, Any]:
        manifest, runs = self.manifest, self.runs
        counts = runs["outcome"].value_counts()
        return {
            "id": self.id,
            "suite_id": manifest.get("suite_id", self.id),
            "started_at": manifest.get("started_at"),
            "status": manifest.get("status"),
            "suite": manifest.get("suite"),
            "rows": len(runs),
            "sdks": manifest.get("sdk_versions") or {},
            "releases": {sdk: changelog.releases_of(runs, sdk) for sdk in sorted(set(runs["sdk"]))},
            "outcomes": {o: int(counts[o]) for o in OUTCOME_ORDER if o in counts},
            "bodies": bool((manifest.get("options") or {}).get("record_bodies")),
        }


def _summary(group: pd.DataFrame) -> dict[str, Any]:
    """``summarise_cell``, with the one-rep case (every cell of a default run) done without
    pandas: the same fields, ten times faster over a 4,644-cell run."""
    if len(group) != 1:
        return summarise_cell(group)
    row = group.iloc[0]
    calls = None if pd.isna(row["model_calls"]) else float(row["model_calls"])
    exception = short_exception(row["exception_type"]) if isinstance(row["exception_type"], str) else ""
    outcome = str(row["outcome"])
    return {
        "outcome": outcome,
        "label": label(outcome, calls, exception),
        "model_calls": calls,
        "exception_type": exception or None,
        "mixed": False,
        "n": 1,
        "outcomes": {outcome: 1},
        "outcome_calls": {outcome: calls},
    }


def _realism(rows: pd.DataFrame) -> str:
    values = set(rows["realistic"].dropna())
    return "?" if not values else "realistic" if values == {True} else "unrealistic" if values == {False} else "mixed"


def matrix(run: Run, weights: Weights | None = None) -> dict[str, Any]:
    """Rows SDK x mode x variant x protocol, columns scenario (grouped by fault family), and
    every cell with its filterable facets; cell ``i`` is opened by :func:`cell`. Led by the run's
    pick under ``weights`` (:func:`pick_lead`); releases in version order (the release filter's)."""
    runs = run.runs
    faults = dict(zip(runs["scenario"], runs["fault"], strict=True))
    order = scenario_order(runs) if len(runs) else []
    scenarios = sorted(order, key=lambda s: (family_rank(fault_family(faults[s])), order.index(s)))
    width = len(ROW_KEYS)
    rows = sorted({key[:width] for key, _ in run.groups}, key=lambda k: (k[0], changelog.release_key(k[1]), k))
    row_index = {key: i for i, key in enumerate(rows)}
    cells = []
    for i, (key, group) in enumerate(run.groups):
        summary = _summary(group)
        cells.append(
            {
                "i": i,
                "row": row_index[key[:width]],
                "scenario": key[width],
                "outcome": summary["outcome"],
                "token": token(summary),
                "label": summary["label"] + ("*" if summary["mixed"] else ""),
                "outcomes": summary["outcomes"],
                "realism": _realism(group),
                "reps": len(group),
            }
        )
    return {
        "run": run.summary(),
        "rows": [dict(zip(ROW_KEYS, key, strict=True)) for key in rows],
        "scenarios": [{"name": s, "family": fault_family(faults[s])} for s in scenarios],
        "cells": cells,
        "colours": COLOURS,
        "dark": sorted(WHITE_TEXT),
        "outcome_order": OUTCOME_ORDER,
        "release_order": sorted({key[1] for key in rows}, key=changelog.release_key),
        "changelog": bool(changelog.multi_release_sdks(runs)) if len(runs) else False,
        "pick": pick_lead(run, weights),
    }


def pick_lead(run: Run, weights: Weights | None = None) -> dict[str, Any]:
    """The run's pick, as ``bench pick RUN`` ranks it under ``weights`` (:func:`bench.pick.pick`
    over the run's report, default variants): its sentence (:func:`bench.pick.lead_sentence`, the
    one ``bench pick`` and the reports open with), the ranked rows with the worst
    outcome of each fault family, and what the ranking cannot see; ``error`` when the run has no
    report to rank (its one line)."""
    from bench.pick import lead_sentence, pick
    from bench.report.build import build_from_run
    from bench.report.claims import ClaimsError
    from bench.results.store import ResultsError

    try:
        report, _ = build_from_run(run.directory)
    except (ResultsError, ClaimsError) as error:
        return {"error": str(error).splitlines()[0]}
    table = pick(report, weights)
    return table.model_dump(mode="json") | {"lead": lead_sentence(table), "command": f"bench pick {run.id}"}


def cell(run: Run, index: int) -> dict[str, Any]:
    """One cell: each rep's runs row, and its attempts in order with what was sent and served."""
    key, group = run.groups[index]
    reps = []
    for row in group.sort_values("rep").to_dict(orient="records"):
        attempts = run.attempts.get(row["cell_id"])
        reps.append(
            {c: _plain(row.get(c)) for c in REP_COLUMNS}
            | {"attempts": _attempts(attempts) if attempts is not None else []}
        )
    return {"run": run.id, "i": index, "key": dict(zip(CELL_KEYS, key, strict=True)), "reps": reps}


def _attempts(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Attempts in order; each model call's request body, the conversation items it added since
    the previous model call (the re-ask, the tool result carried back) and the response served."""
    out, previous = [], None
    for record in frame.to_dict(orient="records"):
        body = _json(record.get("request_body"))
        items = _conversation(body)
        item = {c: _plain(record.get(c)) for c in ATTEMPT_COLUMNS}
        if record.get("started_at") is not None and not pd.isna(record.get("started_at")):
            item["started_at"] = pd.Timestamp(record["started_at"]).isoformat()
        item["request"] = _cut(json.dumps(body, indent=2, ensure_ascii=False)) if body is not None else None
        item["response"] = _cut(_pretty(record.get("response_body")))
        if items is not None and previous is not None and _plain(record.get("attempt")) is not None:
            added = items[_common_prefix(previous, items) :]
            item["added"] = _cut(json.dumps(added, indent=2, ensure_ascii=False)) if added else None
            item["same_request"] = not added
        if items is not None and _plain(record.get("attempt")) is not None:
            previous = items
        out.append(item)
    return out


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _conversation(body: Any) -> list[Any] | None:
    """The request's conversation: Chat and Anthropic ``messages``, Responses ``input``."""
    if not isinstance(body, dict):
        return None
    items = body.get("messages", body.get("input"))
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return items if isinstance(items, list) else None


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _pretty(text: Any) -> str | None:
    """A JSON response indented; a stream (SSE) as it was sent."""
    if not isinstance(text, str):
        return None
    parsed = _json(text)
    return json.dumps(parsed, indent=2, ensure_ascii=False) if parsed is not None else text


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= BODY_LIMIT:
        return text
    return text[:BODY_LIMIT] + f"\n... ({len(text) - BODY_LIMIT:,} more characters not shown)"


def compare(before: Run, after: Run) -> dict[str, Any]:
    """Cells of both runs whose outcome, model calls or exception changed, before and after; like
    with like only: a cell is compared with the cell of the same SDK and release (the key holds
    both), and the (SDK, release) pairs compared, and those found in one run only, are listed."""
    old = {key: (i, _summary(rows)) for i, (key, rows) in enumerate(before.groups)}
    new = {key: (i, _summary(rows)) for i, (key, rows) in enumerate(after.groups)}
    changed = []
    for key in sorted(set(old) & set(new)):
        (i, a), (j, b) = old[key], new[key]
        if any(a[k] != b[k] for k in ("outcome", "model_calls", "exception_type")):
            changed.append(
                dict(zip(CELL_KEYS, key, strict=True))
                | {
                    "family": fault_family(str(after.runs.loc[after.runs["scenario"] == key[-1], "fault"].iloc[0])),
                    "before": {"i": i, "outcome": a["outcome"], "token": token(a), "label": a["label"]},
                    "after": {"i": j, "outcome": b["outcome"], "token": token(b), "label": b["label"]},
                }
            )
    return {
        "before": before.summary(),
        "after": after.summary(),
        "compared": len(set(old) & set(new)),
        "changed": changed,
        "only_before": len(set(old) - set(new)),
        "only_after": len(set(new) - set(old)),
        "pairs": _pairs(set(old) & set(new)),
        "pairs_only_before": _pairs(set(old) - set(new)),
        "pairs_only_after": _pairs(set(new) - set(old)),
        "colours": COLOURS,
        "dark": sorted(WHITE_TEXT),
    }


def _pairs(keys: set[tuple[str, ...]]) -> list[dict[str, Any]]:
    """(SDK, release) with how many of ``keys`` (cell keys) it holds, in SDK and release order."""
    counts: dict[tuple[str, str], int] = {}
    for key in keys:
        counts[(key[0], key[1])] = counts.get((key[0], key[1]), 0) + 1
    ordered = sorted(counts, key=lambda pair: (pair[0], changelog.release_key(pair[1])))
    return [{"sdk": sdk, "release": release, "cells": counts[(sdk, release)]} for sdk, release in ordered]


def release_changelog(run: Run) -> dict[str, Any]:
    """Per SDK the run holds several releases of: the release x scenario grid (each (release,
    scenario) the tally of its cells, split when they disagree, what its ``N other`` stands for, and
    the matrix cells behind it) and each release step's changes by behaviour, each group marked
    worse, better or neutral and the worse first, every changed cell with its matrix cell before and
    after, so the page drills down as the matrix does (``bench changelog``'s grouping)."""
    runs = run.runs
    index = {key: i for i, (key, _) in enumerate(run.groups)}
    by_scenario: dict[tuple[str, str, str], list[int]] = {}
    for key, i in index.items():
        by_scenario.setdefault((key[0], key[1], key[-1]), []).append(i)
    family = changelog.families(runs)
    told = [(step, changelog.groups(step, family)) for step in changelog.steps(runs)]
    sdks = []
    for sdk in changelog.multi_release_sdks(runs):
        tallied = changelog.tallies(runs, sdk)
        letters = changelog.exception_letters(tallied)
        releases = [r for r in changelog.releases_of(runs, sdk) if any(k[0] == r for k in tallied)]
        grid = [
            {"release": release, "scenario": scenario, "text": tally.tokens(letters),
             "others": tally.others_tokens(letters), "outcome": tally.counts[0][0].outcome, "split": tally.split,
             "tied": tally.tied,
             "cells": sorted(by_scenario.get((sdk, release, scenario), []))}
            for (release, scenario), tally in tallied.items()
        ]  # fmt: skip
        steps = [_step(step, found, index) for step, found in told if step.sdk == sdk]
        exceptions = [{"letter": tag, "name": name} for name, tag in letters.items()]
        sdks.append({"sdk": sdk, "releases": releases, "grid": grid, "steps": steps, "exceptions": exceptions})
    scenarios = [s for s in scenario_order(runs) if s in family] if len(runs) else []
    scenarios.sort(key=lambda s: family_rank(family[s]))
    return {
        "run": run.summary(),
        "sdks": sdks,
        "direction_legend": changelog.DIRECTION_LEGEND,
        "scenarios": [{"name": s, "family": family[s]} for s in scenarios],
        "colours": COLOURS,
        "dark": sorted(WHITE_TEXT),
    }


def _step(step: changelog.Step, found: list[changelog.Group], index: dict[tuple, int]) -> dict[str, Any]:
    def cell(change: changelog.Change, release: str) -> int | None:
        mode, variant, protocol, _, scenario = change.key
        return index.get((step.sdk, release, mode, variant, protocol, scenario))

    groups = [
        {"family": g.family, "scenario": g.scenario, "line": g.line(), "renamed_only": g.renamed_only,
         "direction": g.direction,
         "cells": [{"cell": c.cell, "before": cell(c, step.before), "after": cell(c, step.after),
                    "was": str(c.was), "now": str(c.now), "was_outcome": c.was.outcome,
                    "now_outcome": c.now.outcome} for c in g.changes]}
        for g in found
    ]  # fmt: skip
    return {
        "before": step.before,
        "after": step.after,
        "changed": len(step.changes),
        "compared": sum(len(cells) for cells in step.compared.values()),
        "newly_expressible": step.newly_expressible,
        "no_longer_expressible": step.no_longer_expressible,
        "directions": {d: sum(len(g.changes) for g in found if g.direction == d) for d in changelog.DIRECTIONS},
        "groups": groups,
    }
