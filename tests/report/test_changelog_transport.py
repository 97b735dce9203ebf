"""The changelog's transport retries (issue 23, point 3): per release, how often and how long an
SDK's transport layer sent a request again, which a release can change without changing the
outcome or the model calls the grid shows (the Claude Agent SDK's bundled CLI retries on its
own); and the committed history holds the CLI's retries in each of its releases."""

from __future__ import annotations

import pandas as pd

from bench.report import changelog
from bench.upgrade import history
from tests.report.test_changelog_groups import no_check, rows


def with_retries(version: str, scenario: str, retries: int, wait_ms: float) -> list[dict[str, object]]:
    out = rows(version, scenario, "http_error", lambda i: ("recovered", retries + 1, None))
    return [row | {"transport_retries": retries, "retry_wait_ms": wait_ms} for row in out]


def block(text: str) -> list[str]:
    start = text.index("transport retries ")
    return text[start : text.index("```", start)].strip().splitlines()


def test_retries_and_waits_per_release_and_scenarios_that_never_retried_left_out() -> None:
    runs = pd.DataFrame([
        *with_retries("1.0.0", "http_429_persistent", 10, 174_000.0),
        *with_retries("2.0.0", "http_429_persistent", 3, 2_400.0),
        *with_retries("1.0.0", "http_429_should_not_retry", 0, 0.0),
        *with_retries("2.0.0", "http_429_should_not_retry", 0, 0.0),
    ])  # fmt: skip
    lines = block(changelog.markdown(runs, "t", handlers=no_check))
    assert lines[0].split() == ["transport", "retries", "1.0.0", "2.0.0"]
    assert lines[1:] == ["http_429_persistent  10 retries, 174 s  3 retries, 2.4 s"]


def test_no_block_when_no_release_retried() -> None:
    runs = pd.DataFrame([*with_retries("1.0.0", "x", 0, 0.0), *with_retries("2.0.0", "x", 0, 0.0)])
    assert "transport retries" not in changelog.markdown(runs, "t", handlers=no_check)


def test_the_published_history_holds_the_bundled_clis_retries_in_every_release() -> None:
    """Read from the committed runs, not the rendered text: each Claude Agent SDK release retried
    a persistent 429 ten times (eleven calls) and a single 529 once, and the changelog says so."""
    runs = history.history_runs()
    claude = runs[(runs["sdk"] == "claude-agent-sdk") & runs["scenario"].isin(history.TRANSPORT["claude-agent-sdk"])]
    assert claude["environment"].nunique() == len(history.PUBLISHED["claude-agent-sdk"])
    by_release = claude.groupby(["sdk_version", "scenario"])["transport_retries"].median()
    for release in claude["sdk_version"].unique():
        assert by_release[(release, "http_429_persistent")] == 10
        assert by_release[(release, "http_529_then_valid")] == 1
    told = block(history.CHANGELOG.read_text(encoding="utf-8").split("## claude-agent-sdk")[1])
    assert any(line.startswith("http_429_persistent") and line.count("10 retries") == 3 for line in told), told
