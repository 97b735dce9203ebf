"""``bench run --release``, ``bench releases``, ``bench changelog`` and ``bench bisect``, through
the CLI (issue 16). The environments are built from the package index and cached
(``bench.releases.envs.cache_root``); a second run of these tests reuses them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.results.store import latest_run, load_run
from tests.paths import GOLDEN_DIR

pytestmark = pytest.mark.slow  # each test builds or reuses release environments with uv and runs their workers

runner = CliRunner()
GOLDEN = GOLDEN_DIR / "changelog_issue16.md"
ISSUE_CELLS = [
    "--mode", "native", "--protocol", "openai-chat", "--variant", "default",
    "--scenario", "refusal_then_valid", "--scenario", "refusal_persistent", "--scenario", "truncated_then_valid",
]  # fmt: skip
ISSUE_RELEASES = [
    "pydantic-ai==1.0.18", "pydantic-ai==2.0.0", "pydantic-ai@pinned",
    "openai-agents==0.2.11", "openai-agents==0.6.9", "openai-agents@pinned",
]  # fmt: skip


def bench(*args: object, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _releases(*specs: str) -> list[str]:
    return [part for spec in specs for part in ("--release", spec)]


def test_issue_table_and_changelog(tmp_path: Path) -> None:
    """The issue's table (native mode, Chat Completions), measured through release environments
    and the pinned SDKs in-process, and its changelog (golden)."""
    code, _, stderr = bench("run", *_releases(*ISSUE_RELEASES), *ISSUE_CELLS, "--out", tmp_path)
    assert code == 0, stderr
    run = load_run(tmp_path / "latest")
    runs = run["runs"]
    assert set(runs["environment"]) == {"pydantic-ai==1.0.18", "pydantic-ai==2.0.0", "openai-agents==0.2.11",
                                        "openai-agents==0.6.9", "pinned"}  # fmt: skip
    old = runs[runs["environment"] == "pydantic-ai==1.0.18"]
    assert set(old["sdk_version"]) == {"1.0.18"}
    envs = {env["name"]: env for env in run["manifest"]["environments"]}
    assert "pydantic-ai-slim==1.0.18" in envs["pydantic-ai==1.0.18"]["freeze"]
    assert envs["pydantic-ai==1.0.18"]["exclude_newer"] == "2025-10-14T16:03:13Z"
    code, stdout, _ = bench("changelog", tmp_path / "latest")
    assert code == 0
    body = stdout.split("\n", 1)[1]  # the title names the run
    assert body == GOLDEN.read_text(encoding="utf-8"), stdout
    assert (latest_run(tmp_path) / "changelog.md").read_text(encoding="utf-8") == stdout
    code, _, stderr = bench("report", tmp_path / "latest")
    assert code == 0, stderr
    html = (latest_run(tmp_path) / "report.html").read_text(encoding="utf-8")
    grid = html.split('<h2 id="releases">', 1)[1]
    assert "<h3>openai-agents</h3>" in grid and "<th>0.6.9</th>" in grid
    assert "raised ModelRefusalError (1)" in grid and "raised OutputTokenLimitExceeded (1)" in grid


def test_worker_killed_mid_cell_leaves_timeout(tmp_path: Path) -> None:
    """A cell past its time limit kills its worker by pid and is ``timeout``; the cells before
    and after it are intact, the next one in a fresh worker."""
    scenarios = tmp_path / "stall.yaml"
    scenarios.write_text(
        "version: 1\nscenarios:\n"
        "  - {name: before, task: person, script: [valid]}\n"
        "  - {name: stall, task: person, script: [{slow: 120}]}\n"
        "  - {name: after, task: person, script: [malformed, valid]}\n",
        encoding="utf-8",
    )
    code, _, stderr = bench(
        "run", *_releases("openai-agents==0.15.0"), "--scenarios", scenarios, "--mode", "native",
        "--protocol", "openai-chat", "--variant", "default", "--time-limit", "5", "--concurrency", "1",
        "--out", tmp_path / "results",
    )  # fmt: skip
    assert code == 0, stderr
    run = load_run(tmp_path / "results" / "latest")
    outcomes = dict(zip(run["runs"]["scenario"], run["runs"]["outcome"], strict=True))
    assert outcomes == {"before": "ok", "stall": "timeout", "after": "raised"}  # ModelBehaviorError, no re-ask
    assert run["manifest"]["workers_started"] == {"openai-agents==0.15.0": 2}


def test_failed_build_is_one_line_and_the_rest_runs(tmp_path: Path) -> None:
    """A release the resolver cannot satisfy (here: a constraint the user set for uv) is one
    line naming it and uv's reason, exit 2, and the other release's cells are in the run."""
    constraint = tmp_path / "constraints.txt"
    constraint.write_text("pydantic-graph<1\n", encoding="utf-8")
    code, _, stderr = bench(
        "run", *_releases("pydantic-ai==1.0.17", "openai-agents==0.2.11"), "--scenario", "valid",
        "--mode", "native", "--protocol", "openai-chat", "--variant", "default", "--out", tmp_path / "results",
        env={"UV_CONSTRAINT": str(constraint)},
    )  # fmt: skip
    assert code == 2, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("error: pydantic-ai==1.0.17: cannot build the environment: Because ")
    assert "pydantic-graph" in errors[0]
    runs = load_run(tmp_path / "results" / "latest")["runs"]
    assert list(runs["environment"]) == ["openai-agents==0.2.11"]
    assert list(runs["outcome"]) == ["ok"]


def test_bisect_names_the_first_release() -> None:
    """openai-agents stopped re-asking after a refusal in 0.15.0 (ModelRefusalError)."""
    code, stdout, stderr = bench(
        "bisect", "openai-agents", "refusal_then_valid", "--good", "0.14.0", "--bad", "0.15.0",
        "--mode", "native", "--protocol", "openai-chat", "--variant", "default",
    )  # fmt: skip
    assert code == 0, stderr
    assert "first changed in 0.15.0 (last alike: 0.14.8" in stdout
    assert "recovered (2) -> raised ModelRefusalError (1)" in stdout
    tested = int(stdout.split("; ")[1].split(" of ")[0])
    assert tested <= 6


def test_releases_build_list_prune(tmp_path: Path) -> None:
    cache = ["--cache", tmp_path / "cache"]
    code, stdout, stderr = bench("releases", "build", "openai-agents==0.2.11", *cache)
    assert code == 0, stderr
    assert stdout.startswith("openai-agents==0.2.11: ") and "as of 2025-09-04" in stdout
    code, stdout, _ = bench("releases", "list", "--json", *cache)
    listed = json.loads(stdout)
    assert [env["name"] for env in listed] == ["openai-agents==0.2.11"]
    assert listed[0]["packages"] > 5
    code, stdout, _ = bench("releases", "prune", *cache)
    assert stdout.startswith("removed openai-agents==0.2.11")
    code, stdout, _ = bench("releases", "list", "--json", *cache)
    assert json.loads(stdout) == []
    code, _, stderr = bench("releases", "build", "pydantic-ai==0.0.9", *cache)
    assert code == 2 and "supports pydantic-ai-slim>=1.0" in stderr


def test_langchain_first_release_bridges(tmp_path: Path) -> None:
    """langchain 1.0.0 (create_agent's first release; langchain-anthropic 1.0.0 and
    langgraph-prebuilt 1.0.0 as of its date): the bare schema goes to ToolStrategy by model name
    (the bridge calls 1.0.x's one-argument _supports_provider_strategy, and its chat models have
    no profile), a native parse error is a bare ValueError, and the cells it cannot express are
    unsupported with the release they need."""
    code, _, stderr = bench(
        "run", *_releases("langchain==1.0.0"), "--mode", "native", "--scenario", "refusal_then_valid",
        "--variant", "auto", "--variant", "default", "--variant", "hardened",
        "--protocol", "openai-chat", "--protocol", "anthropic-messages", "--out", tmp_path,
    )  # fmt: skip
    assert code == 0, stderr
    run = load_run(tmp_path / "latest")
    runs = run["runs"].set_index(["variant", "protocol"])
    freeze = run["manifest"]["environments"][0]["freeze"]
    assert {"langchain==1.0.0", "langgraph-prebuilt==1.0.0", "langchain-anthropic==1.0.0"} <= set(freeze)
    auto = runs.loc[("auto", "openai-chat")]
    assert (auto["outcome"], auto["model_calls"]) == ("recovered", 2)
    details = auto["details"]
    assert (details["strategy"], details["profile_structured_output"]) == ("ToolStrategy", None)
    assert runs.loc[("auto", "anthropic-messages"), "outcome"] == "recovered"
    default = runs.loc[("default", "openai-chat")]
    assert (default["outcome"], default["exception_type"]) == ("raised", "builtins.ValueError")
    anthropic = runs.loc[("default", "anthropic-messages")]
    assert anthropic["outcome"] == "unsupported"
    assert anthropic["note"].startswith("needs langchain-anthropic >= 1.1.0 (this environment has 1.0.0): ")
    hardened = runs.loc[("hardened", "openai-chat")]
    assert (hardened["outcome"], hardened["note"][:28]) == ("unsupported", "needs langchain >= 1.5.0: Mo")
    code, stdout, _ = bench("releases", "build", "langchain==1.0.0")  # the key tuple, named
    assert code == 0 and "with langgraph-prebuilt 1.0.0, langchain-openai 1.0.0, langchain-anthropic 1.0.0" in stdout


def test_claude_release_with_its_bundled_cli(tmp_path: Path) -> None:
    """claude-agent-sdk 0.2.108 runs in a worker with its own bundled CLI (2.1.187) and psutil
    (the adapter's worker requirement); its ResultMessage has no terminal_reason (bridged).
    Older releases are out of range: their CLI asks the model again after an accepted
    StructuredOutput call, which the scripted provider cannot answer as a model would."""
    code, _, stderr = bench(
        "run", *_releases("claude-agent-sdk==0.2.108"), "--scenario", "valid", "--variant", "default",
        "--out", tmp_path,
    )  # fmt: skip
    assert code == 0, stderr
    run = load_run(tmp_path / "latest")
    runs = run["runs"]
    (row,) = (r for _, r in runs.iterrows() if r["outcome"] != "unsupported")
    assert (row["outcome"], row["model_calls"], row["sdk_version"]) == ("ok", 1, "0.2.108")
    assert row["details"]["terminal_reason"] is None  # typed details (schema 4): no such field in 0.2.108
    freeze = run["manifest"]["environments"][0]["freeze"]
    assert "claude-agent-sdk==0.2.108" in freeze and any(line.startswith("psutil==") for line in freeze)
    code, _, stderr = bench("releases", "build", "claude-agent-sdk==0.2.82", "--cache", tmp_path / "cache")
    assert code == 2 and "supports claude-agent-sdk>=0.2.108" in stderr


def test_agentmaker_first_release(tmp_path: Path) -> None:
    """agentmaker 0.1.0 with its anthropic extra (LLMClient('anthropic') needs it) and the bridge
    that closes its cached SDK client after each cell (0.1.0's LLMClient has no async context)."""
    code, _, stderr = bench(
        "run", *_releases("agentmaker==0.1.0"), "--scenario", "valid", "--scenario", "malformed_then_valid",
        "--mode", "native", "--variant", "default", "--out", tmp_path,
    )  # fmt: skip
    assert code == 0, stderr
    run = load_run(tmp_path / "latest")
    runs = run["runs"][run["runs"]["outcome"] != "unsupported"]
    got = {(r.protocol, r.scenario): (r.outcome, r.model_calls) for r in runs.itertuples()}
    assert got == {
        ("openai-chat", "valid"): ("ok", 1), ("anthropic-messages", "valid"): ("ok", 1),
        ("openai-chat", "malformed_then_valid"): ("recovered", 2),
        ("anthropic-messages", "malformed_then_valid"): ("recovered", 2),
    }  # fmt: skip
    assert any(line.startswith("anthropic==") for line in run["manifest"]["environments"][0]["freeze"])
