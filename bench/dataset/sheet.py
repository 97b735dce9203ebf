"""The datasheet and the citation of a dataset version, written from its provenance: what a reader
of a public benchmark asks before trusting a figure (what was measured, how, on which releases,
with which seeds, what the fake model fakes, what each column means, how to cite it)."""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from bench.results import columns

HOW_CELLS_ARE_MADE = """\
Each row is one cell: one SDK (at one release), one output mode, one variant (the SDK's default
configuration, or a hardened one: validators, retry budgets), one wire protocol, streamed or not,
one scenario, one repetition. The cell drives the SDK's real code, as its users write it, against
a local fake model provider on loopback. The provider answers as the real APIs do (OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages; JSON and server-sent events, parsed by the
official clients' strict parsers) but injects the scenario's fault: a malformed, truncated,
refused, out-of-range, wrong or schema-violating answer, an HTTP error, a slow answer, a tool
failure; once (`*_then_valid`: the SDK may recover) or on every call (`*_persistent`). The outcome
is what the SDK's caller got: `ok`, `recovered` (after retries), `raised` (and which exception),
`wrong` or `empty` (an object handed on that does not fit), `runaway` (the call cap was hit),
`timeout`, `unsupported` (the SDK cannot express the cell; never invented), `harness_error`.
Every id the provider makes is drawn from the cell's seed, so tokens are reproducible."""

WHAT_IS_FAKED = """\
The model. Nothing else: the SDKs, their official HTTP clients and their retry, validation and
repair code are the released packages, unchanged. The provider's answers are checked against the
official clients' strict parsers and against recorded real traffic; the model's words are the
scenario's, so the dataset says how an SDK handles an answer, never how often a real model gives it."""


def datasheet(provenance: dict[str, Any]) -> str:
    """datasheet.md of one version."""
    lines = [
        f"# misfit-bench dataset {provenance['version']}",
        "",
        f"{provenance['rows']:,} cells, released {provenance['released']}, results schema "
        f"{provenance['schema_version']}. The version is a digest of every cell's deciding values: "
        "it changes when any cell does.",
        "",
        "## How cells are made",
        "",
        HOW_CELLS_ARE_MADE,
        "",
        "## What the provider fakes",
        "",
        WHAT_IS_FAKED,
        "",
        "## What is in it",
        "",
        "| part | rows | SDK releases | seed | reps | finished |",
        "|---|---|---|---|---|---|",
    ]
    for name, part in provenance["parts"].items():
        measured = {(env["sdk"], env["version"]) for env in part["environments"] if "sdk" in env}
        releases = [f"{sdk} {version}" for sdk, version in sorted(measured, key=_by_release)]
        pinned = ", ".join(f"{sdk} {version}" for sdk, version in sorted((part.get("sdk_versions") or {}).items()))
        shown = ", ".join([*releases, f"pinned: {pinned}"] if pinned else releases)
        lines.append(
            f"| {name} | {part['rows']:,} | {shown} | {part.get('seed')} | {part.get('reps')} "
            f"| {(part.get('finished_at') or '')[:10]} |"
        )
    lines += ["", "## The official clients each release ran with", "", "| SDK | release | clients |", "|---|---|---|"]
    for entry in provenance["clients"]:
        clients = ", ".join(f"{name} {version}" for name, version in sorted((entry.get("clients") or {}).items()))
        lines.append(f"| {entry.get('sdk')} | {entry.get('release')} | {clients} |")
    lines += [
        "",
        "## Left out",
        "",
        "Request and response bodies (prompts included) are not published: only the runs table, whose "
        "columns the run's own report shows. Absolute paths of the machine that made a run are "
        "replaced by `<path>/` and their last part.",
        "",
        "## Columns",
        "",
        "`part` names the committed run a row comes from (`baseline`: the latest default matrix; "
        "`releases/<sdk>`: that SDK's release history). The others:",
        "",
        *columns.markdown().split("\n## attempts.parquet")[0].splitlines()[2:],
        "",
        "## Load it",
        "",
        "```python",
        "from bench import dataset",
        f'runs = dataset.load("PATH_OR_URL", version="{provenance["version"]}")',
        "```",
        "",
    ]
    return "\n".join(lines)


def _by_release(release: tuple[str, str]) -> tuple[str, int, Version, str]:
    """SDK, then its version as a version (0.2.11 before 0.14.8), not as a string; a version
    that is none sorts last, by its text."""
    sdk, version = release
    try:
        return sdk, 0, Version(version), ""
    except InvalidVersion:
        return sdk, 1, Version("0"), version


def citation(provenance: dict[str, Any]) -> str:
    """CITATION.cff of one version (Citation File Format 1.2.0)."""
    return "\n".join(
        [
            "cff-version: 1.2.0",
            "message: If you cite a figure from this dataset, cite it at this version.",
            "type: dataset",
            'title: "misfit-bench: what agent SDKs do when the model\'s answer does not fit the type"',
            f'version: "{provenance["version"]}"',
            f"date-released: {provenance['released']}",
            "license: MIT",
            "authors:",
            "  - name: misfit-bench contributors",
            "keywords:",
            "  - structured output",
            "  - agent SDK",
            "  - fault injection",
            "",
        ]
    )
