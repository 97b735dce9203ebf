"""The verdict on the field catalogue (scenarios/field.yaml): for each reported failure, what
each SDK does with it at its pinned release, with the cells behind it, and, where the run also
holds the release the failure was reported against (``bench run --release``), whether it is
fixed, still there, or different there.

Per SDK the text is the outcome most of its supported cells had (``raised 9/12
UnexpectedModelBehavior``); the scenario's ``source.failure`` says which outcomes are the
reported failure, so each verdict is ``still there`` (the majority ends so) or ``gone``.
``docs/field.md`` is this table rendered from the committed run ``results/field``
(:func:`write_doc`, ``make field-doc``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from bench.core.vocabulary import Outcome
from bench.scenarios.files import Scenario, Source, default_scenarios

PINNED = "pinned"


def sources_in(runs: pd.DataFrame, scenarios: list[Scenario] | None = None) -> list[Scenario]:
    """The field scenarios (those with a ``source``) the run holds, in the file's order."""
    present = set(runs["scenario"]) if "scenario" in runs else set()
    every = default_scenarios() if scenarios is None else scenarios
    return [s for s in every if s.source is not None and s.name in present]


def _environment(runs: pd.DataFrame) -> pd.Series:
    if "environment" in runs:
        return runs["environment"].fillna(PINNED).astype(str)
    return pd.Series(PINNED, index=runs.index)


def majority(cells: pd.DataFrame) -> tuple[str, str | None, int, int]:
    """The outcome most supported cells had (a tie goes to the outcome named first in
    :class:`Outcome`), the exception most of those raised, how many had it and how many ran
    (``("unsupported", None, 0, 0)`` when none ran)."""
    ran = cells[cells["outcome"] != Outcome.UNSUPPORTED]
    if ran.empty:
        return str(Outcome.UNSUPPORTED), None, 0, 0
    order = [str(outcome) for outcome in Outcome]
    counts = Counter(str(value) for value in ran["outcome"])
    outcome, n = min(counts.items(), key=lambda item: (-item[1], order.index(item[0])))
    raised = ran.loc[ran["outcome"] == outcome, "exception_type"].dropna()
    exception = str(raised.value_counts().index[0]) if not raised.empty else None
    return outcome, exception, n, len(ran)


def reproducing(cells: pd.DataFrame, source: Source) -> tuple[int, int]:
    """How many of the supported cells end as the reported failure, of how many ran."""
    ran = cells[cells["outcome"] != Outcome.UNSUPPORTED]
    hits = sum(
        source.reproduced_by(str(outcome), None if pd.isna(exception) else str(exception))
        for outcome, exception in zip(ran["outcome"], ran["exception_type"], strict=True)
    )
    return hits, len(ran)


def verdict(cells: pd.DataFrame, source: Source | None = None) -> str:
    """``raised 9/12 UnexpectedModelBehavior``, and with a ``source`` whose ``failure`` is
    given, how many cells show the reported failure: ``still there`` (most of them), ``partly``
    (some) or ``gone`` (none), with the count."""
    outcome, exception, n, ran = majority(cells)
    if not ran:
        return outcome
    text = f"{outcome} {n}/{ran}"
    if outcome == Outcome.RAISED and exception:
        text += " " + exception.rsplit(".", 1)[-1]
    if source is not None and source.failure:
        hits, _ = reproducing(cells, source)
        word = "gone" if not hits else "still there" if 2 * hits > ran else "partly"
        text += f": {word}" + (f" ({hits}/{ran})" if hits else "")
    return text


def at_reported_release(runs: pd.DataFrame, source: Source) -> str:
    """The reported SDK at the reported release against its pinned one: ``fixed`` (some cells
    show the failure there and none at the pinned release), ``still there`` (cells show it at
    both), ``different`` (no cell shows it at the reported release: the scenario does not
    reproduce the report there), ``not run`` when the run holds no such release, or ``not run:``
    with the scenario's reason when the reported release cannot be measured."""
    if source.version is None:
        return f"not run: {source.not_run}" if source.not_run else ""
    if not source.failure:
        return ""
    mine = runs[runs["sdk"] == source.sdk]
    environment = _environment(mine)
    old = mine[environment == f"{source.sdk}=={source.version}"]
    if old.empty:
        return "not run"
    pinned = mine[environment == PINNED]
    then, ran_then = reproducing(old, source)
    now, ran_now = reproducing(pinned, source)
    head = f"{source.version}: {verdict(old)}; {then}/{ran_then} show it"
    if not then:
        return f"{head}; different"
    if not ran_now:
        return f"{head}; pinned not run"
    return f"{head}; {'still there' if now else 'fixed'} ({now}/{ran_now} at the pinned release)"


def field_table(runs: pd.DataFrame, scenarios: list[Scenario] | None = None) -> list[dict[str, Any]]:
    """One row per field scenario in the run: its source, per SDK the verdict at the pinned
    release (``sdks``), the cells behind each (``cells``: per SDK, outcome -> cell ids), and the
    comparison at the reported release (``release``)."""
    pinned = runs[_environment(runs) == PINNED]
    sdks = sorted(set(pinned["sdk"]))
    rows = []
    for scenario in sources_in(runs, scenarios):
        source = scenario.source
        assert source is not None
        mine = _in_modes(pinned[pinned["scenario"] == scenario.name], source)
        per_sdk = {sdk: mine[mine["sdk"] == sdk] for sdk in sdks}
        rows.append(
            {
                "scenario": scenario.name,
                "source": source.label,
                "url": source.url,
                "reported": f"{source.sdk} {source.release}",
                "symptom": source.symptom,
                "fix": source.fix or "",
                "failure": list(source.failure),
                "sdks": {sdk: verdict(cells, _judged(source, sdk, sdks)) for sdk, cells in per_sdk.items()},
                "cells": {sdk: _cells(cells) for sdk, cells in per_sdk.items()},
                "modes": [str(mode) for mode in source.modes],
                "release": at_reported_release(_in_modes(runs[runs["scenario"] == scenario.name], source), source),
            }
        )
    return rows


def _in_modes(cells: pd.DataFrame, source: Source) -> pd.DataFrame:
    return cells[cells["mode"].isin([str(mode) for mode in source.modes])] if source.modes else cells


def _judged(source: Source, sdk: str, sdks: list[str]) -> Source | None:
    """The source to judge ``sdk``'s cells by: a report against one of the benchmarked SDKs
    names that SDK's failure (its exception classes), so only its column says ``still there`` or
    ``gone``; a report against another SDK or client is about the reply, so every column does."""
    return source if source.sdk not in sdks or sdk == source.sdk else None


def _cells(cells: pd.DataFrame) -> dict[str, list[str]]:
    ran = cells[cells["outcome"] != Outcome.UNSUPPORTED]
    grouped: dict[str, list[str]] = {}
    for outcome, cell in zip(ran["outcome"], ran["cell_id"], strict=True):
        grouped.setdefault(str(outcome), []).append(str(cell))
    return {outcome: sorted(ids) for outcome, ids in sorted(grouped.items())}


def markdown(rows: list[dict[str, Any]], versions: dict[str, str | None]) -> list[str]:
    """The "Reported in the field" section: per row the report, then each SDK's verdict."""
    if not rows:
        return []
    sdks = list(rows[0]["sdks"])
    head = ["scenario", "reported", "symptom", *(f"{sdk} {versions.get(sdk) or ''}".strip() for sdk in sdks)]
    with_release = any(row["release"] for row in rows)
    if with_release:
        head.append("at the reported release")
    lines = [
        "## Reported in the field",
        "",
        "Each row is a failure users filed (scenarios/field.yaml); each SDK column is what the SDK did "
        "at its pinned release: the outcome most of its supported cells had, out of how many, and whether "
        "that is the reported failure (`still there`) or not (`gone`). The last column, with `--release` "
        "runs, compares the reported SDK at the reported release with its pinned one.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in rows:
        modes = f" ({', '.join(row['modes'])} mode)" if row["modes"] else ""
        cells = [
            f"`{row['scenario']}`{modes}",
            f"[{row['source']}]({row['url']}) {row['reported']}",
            row["symptom"].replace("|", "\\|"),
            *(row["sdks"][sdk] for sdk in sdks),
            *([row["release"] or "-"] if with_release else []),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


NOTES_FILE = "notes.yaml"
"""In the committed field run's folder: why each SDK does what it does, from its source or the
PR that changed it (``scenario``, ``sdk``, ``why``, ``source``), rendered under the table."""


class FieldDocError(Exception):
    """The notes file is unreadable or names a scenario or SDK the run does not hold."""


def read_notes(run: Path, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The run's notes, each naming a scenario and an SDK of the table (a typo is an error, not
    a note silently left out)."""
    import yaml

    path = run / NOTES_FILE
    if not path.exists():
        return []
    notes = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    known = {(row["scenario"], sdk) for row in rows for sdk in row["sdks"]}
    for index, note in enumerate(notes):
        if not isinstance(note, dict) or set(note) != {"scenario", "sdk", "why", "source"}:
            raise FieldDocError(f"{path}: entry {index}: needs exactly scenario, sdk, why and source")
        if (note["scenario"], note["sdk"]) not in known:
            raise FieldDocError(f"{path}: entry {index}: no row for {note['scenario']!r} x {note['sdk']!r}")
    return notes


def write_doc(run: Path, target: Path) -> Path:
    """docs/field.md from the run in ``run`` and its notes (``make field-doc``)."""
    from bench.results.store import read_manifest, read_table

    runs = read_table(run, "runs").to_pandas()
    manifest = read_manifest(run)
    rows = field_table(runs)
    notes = read_notes(run, rows)
    releases = sorted({str(e) for e in _environment(runs)} - {PINNED})
    intro = [
        "# Reported in the field",
        "",
        f"Generated by `make field-doc` from the committed run `results/{run.name}` "
        f"(suite id `{manifest.get('suite_id', '')}`: {_how_run(manifest, releases)}); do not edit by hand, "
        f"edit scenarios/field.yaml and results/{run.name}/{NOTES_FILE}.",
        "",
        "Each scenario reproduces one failure from a public tracker with the provider's behaviours "
        '(docs/design.md, "Behaviours"); every SDK runs every scenario, whichever SDK the report names. '
        "A verdict is the outcome most of the SDK's supported cells had (modes x variants x protocols x "
        "streams); `still there` when that outcome is the reported failure (the scenario's "
        "`source.failure`), `gone` when it is not. The provider answers every request as the API would "
        "answer a well-formed one: it does not reject a conversation whose history the real API would "
        "refuse (a tool call left unanswered, a duplicated call id, an assistant message with null "
        "content), so a failure that is the API's 400 on the next request shows only as what the SDK "
        "did with the reply.",
        "",
        "The last column compares the reported SDK at the release given as the scenario's `source.version` "
        "(`bench run --release SDK==VERSION`) with its pinned release: the release the thread names, or where "
        "it names none the release that was latest on the report's date (the package index's upload dates). "
        "No later release stands in for it: where the reported release cannot be measured (older than the "
        "releases the adapter drives, a JavaScript SDK, a client that is not one of the five), the column says "
        "why; `different` there means the scenario does not show the report at its own release.",
        "",
    ]
    body = markdown(rows, manifest.get("sdk_versions") or {})[4:]
    why = ["", "## Why, from the SDK source or the PR", ""]
    for row in rows:
        mine = [note for note in notes if note["scenario"] == row["scenario"]]
        fix = [f"- tracker: {row['fix']}"] if row["fix"] else []
        if mine or fix:
            why += [f"### `{row['scenario']}` ([{row['source']}]({row['url']}))", "", *fix]
            why += [f"- {note['sdk']}: {' '.join(note['why'].split())} ({note['source']})" for note in mine]
            why.append("")
    cells = ["## The cells behind each verdict", ""]
    for row in rows:
        cells.append(f"- `{row['scenario']}`: " + "; ".join(
            f"{sdk} " + ", ".join(f"{outcome} {len(ids)}" for outcome, ids in row["cells"][sdk].items())
            for sdk in row["sdks"] if row["cells"][sdk]
        ))  # fmt: skip
    text = "\n".join([*intro, *body, *why, *cells, *NOT_REPRODUCED]) + "\n"
    target.write_text(text, encoding="utf-8")
    return target


def _how_run(manifest: dict[str, Any], releases: list[str]) -> str:
    """The commands behind the run: one ``bench run``, or the runs ``bench merge`` joined (the
    pinned releases on every scenario, each reported release on the scenarios that name it)."""
    if not manifest.get("merged_from"):
        flags = "".join(f" `--release {r}`" for r in releases)
        return f"`bench run --suite field`{flags} with each SDK's pinned release"
    return (
        "`bench merge` of `bench run --suite field` (each SDK's pinned release) and one "
        "`bench run --suite field --sdk SDK --release SDK==VERSION --scenario ...` per reported release, on the "
        "scenarios whose `source.version` names it: " + ", ".join(f"`{r}`" for r in releases)
    )


NOT_REPRODUCED = [
    "",
    "## Reported but not reproduced",
    "",
    "- anthropics/claude-code #20693, #21089 (Claude CLI 2.1.19): the CLI itself writes duplicate `tool_use` "
    "ids into its history; a fault of the client's bookkeeping, not of the model's reply, and the provider "
    "does not reject the next request as the API does (400 `tool_use ids must be unique`).",
    "- anthropics/claude-agent-sdk-python #27 (June 2025): thinking blocks dropped by the SDK's own message "
    "parser (`content: []`); what the SDK hands over is not an outcome the harness reads (the adapter takes the "
    "structured output), and the June 2025 release (claude-code-sdk 0.0.x, before the rename) is older than the "
    "releases the adapter drives (>=0.2.108).",
    "- pydantic/pydantic-ai #5146 (April 2026): a thinking-only reply accepted when the output type allows "
    "`None`; every task's output is a required object, so no cell can take that path.",
    "- deepset-ai/haystack #12300: a reasoning model cut by `max_output_tokens` before any text: haystack is "
    "not benchmarked, and a reasoning-only reply with a length stop is not a primitive yet.",
    "- pydantic/pydantic-ai #2600's first symptom (a 400 for a `web_search` call without its result) needs a "
    "server tool's blocks (`server_tool_use`, `web_search_tool_result`), which the provider does not render; "
    "the scenarios send `pause_turn` with text only.",
    "- langchain-ai/langchainjs #11020's 400 `INVALID_TOOL_RESULTS` and HKUDS/nanobot #4473's `tool call id "
    "is duplicated`: the API's rejection of the next request, which the provider does not check (above); "
    "the scenarios show what each SDK does with the reply itself.",
    "- openai/openai-agents-js #261, langchain-ai/langchainjs #9015: JavaScript SDKs; the catalogue drives "
    "the Python SDKs.",
]
