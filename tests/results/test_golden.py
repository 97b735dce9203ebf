"""The default matrix against the committed golden matrix: any change after an SDK upgrade
(or a change here) fails with the list of cells that changed and how. Every SDK behaviour in
the golden file is annotated with the SDK source line that explains it."""

from __future__ import annotations

import fnmatch
import re
import sysconfig
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from bench.results import golden
from bench.results.golden import BUILTIN_SDKS
from bench.sdk import registry

pytestmark = pytest.mark.slow  # the whole default matrix (the session's default_run)

ANNOTATIONS = golden.GOLDEN_FILE.parent / "annotations.yaml"
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
TOOL_SDKS = {sdk for sdk in BUILTIN_SDKS if registry.load(sdk).harness_tools}
"""The built-in SDKs that run the harness tool (the official clients and Instructor run none)."""


def _assert_unchanged(changes: list[str]) -> None:
    message = (
        f"{len(changes)} cell(s) changed against {golden.GOLDEN_FILE.name} "
        "(after an SDK upgrade this is the product working: review, then `python -m bench.results.golden write`):\n  "
        + "\n  ".join(changes[:60])
    )
    assert not changes, message


def test_default_matrix_equals_the_golden_matrix(default_run: dict) -> None:
    """Outcomes, calls, exceptions and every SDK's billed and reported tokens, exactly; the
    tokens of an SDK whose requests carry the machine only on a machine like the golden one
    (the next test)."""
    same_machine = golden.machine() == golden.golden_machine()
    _assert_unchanged(golden.differences(default_run["runs"], golden.read(), tokens_of_machine_bound=same_machine))


def test_machine_bound_tokens_equal_the_golden_matrix_on_its_machine(default_run: dict) -> None:
    here, there = golden.machine(), golden.golden_machine()
    if here != there:
        pytest.skip(
            f"{', '.join(golden.MACHINE_BOUND)} tokens not compared: they bill the machine, {here} here, {there} golden"
        )
    runs, rows = default_run["runs"], golden.read()
    bound = runs[runs.sdk.isin(golden.MACHINE_BOUND)]
    _assert_unchanged(golden.differences(bound, rows[rows.sdk.isin(golden.MACHINE_BOUND)]))


def test_default_matrix_has_no_harness_error(default_run: dict) -> None:
    runs = default_run["runs"]
    broken = runs[runs.outcome == "harness_error"]
    assert broken.empty, broken[["sdk", "mode", "variant", "scenario", "exception_message"]].to_string()
    assert default_run["manifest"]["status"] == "complete"


def test_billed_tokens_are_the_ledger_sum_and_reported_come_from_the_sdk(default_run: dict) -> None:
    runs, attempts = default_run["runs"], default_run["attempts"]
    ran = runs[runs.outcome != "unsupported"].set_index("cell_id")
    sums = attempts.groupby("cell_id")[["input_tokens", "output_tokens"]].sum()
    joined = ran.join(sums).fillna({"input_tokens": 0, "output_tokens": 0})
    assert (joined.input_tokens_billed == joined.input_tokens).all()
    assert (joined.output_tokens_billed == joined.output_tokens).all()
    gap = ran[ran.scenario == "http_429_then_valid"]
    # A rejected request is not billed; every SDK reports what its usage object says.
    assert gap.input_tokens_reported.notna().groupby(gap.sdk).any().all()


def test_langchain_bare_schema_cells_record_the_strategy_picked(default_run: dict) -> None:
    runs = default_run["runs"]
    auto = runs[(runs.sdk == "langchain") & (runs.variant == "auto") & (runs.outcome != "unsupported")]
    # A runaway cell (stopped at the call cap) has no details: the SDK never returned.
    strategies = set(auto.details.dropna().struct.field("strategy"))
    assert strategies == {"ProviderStrategy"}
    assert set(auto.detected_mode) == {"native"}


def test_openai_agents_invalid_output_lands_raised_by_default_and_in_the_handler_when_hardened(
    default_run: dict,
) -> None:
    runs = default_run["runs"]
    native = runs[
        (runs.sdk == "openai-agents")
        & (runs["mode"] == "native")
        & (runs.scenario == "malformed_persistent")
        & (runs.outcome != "unsupported")
    ]
    by_variant = native.groupby("variant").outcome.agg(set).to_dict()
    assert by_variant["default"] == {"raised"}
    assert by_variant["hardened"] == {"fallback"}
    assert set(native[native.variant == "default"].exception_type) == {"agents.exceptions.ModelBehaviorError"}


def _annotations() -> list[dict[str, Any]]:
    if not ANNOTATIONS.exists():
        return [{"sdk": "missing", "source": "annotations.yaml is missing", "why": ""}]
    return yaml.safe_load(ANNOTATIONS.read_text())


def _matches(entry: dict[str, Any], row: pd.Series) -> bool:
    if entry["sdk"] != row["sdk"]:
        return False
    for key, expected in (entry.get("when") or {}).items():
        value = row[key]
        if key == "scenario":
            if not fnmatch.fnmatch(str(value), str(expected)):
                return False
        elif key == "stream":
            if bool(value) != bool(expected):
                return False
        elif str(value) != str(expected):
            return False
    return True


def test_every_golden_behaviour_is_annotated_with_a_source_line() -> None:
    rows = golden.read()
    explained = rows[rows.outcome != "ok"]
    entries = _annotations()
    unexplained = [row for _, row in explained.iterrows() if not any(_matches(e, row) for e in entries)]
    assert not unexplained, "no annotation for:\n" + "\n".join(
        "/".join(str(r[k]) for k in golden.KEY) + f" -> {r.outcome} {r.exception_type}" for r in unexplained[:30]
    )
    unused = [e for e in entries if not any(_matches(e, row) for _, row in explained.iterrows())]
    assert not unused, f"annotations matching no golden row: {unused}"


def _site_packages(sdk: str) -> Path:
    """Where the SDK's installed source is: the harness's site-packages, or for an SDK with an
    environment of its own (bench.sdk.environment) that environment's, built on first use."""
    from bench.releases.envs import EnvironmentStore
    from bench.releases.prepare import package_of
    from bench.sdk.environment import lock_of

    adapter = registry.load(sdk)
    if (lock := lock_of(adapter)) is None:
        return SITE_PACKAGES
    env = EnvironmentStore().build_locked(package_of(adapter), lock)
    assert env.path is not None
    return env.path / SITE_PACKAGES.relative_to(Path(sysconfig.get_paths()["data"]))


@pytest.mark.parametrize("entry", _annotations(), ids=lambda e: f"{e['sdk']}:{e['source']}")
def test_annotation_sources_exist_in_the_pinned_sdk(entry: dict[str, Any]) -> None:
    assert entry.get("why"), "every annotation says why"
    match = re.fullmatch(r"(.+):(\d+)(?:-(\d+))?", entry["source"])
    assert match, f"source must be path:line or path:a-b, got {entry['source']!r}"
    path = _site_packages(entry["sdk"]) / match.group(1)
    assert path.is_file(), f"{path} is not in the installed SDK"
    last = int(match.group(3) or match.group(2))
    assert last <= len(path.read_text(encoding="utf-8").splitlines())


def test_a_429_the_client_absorbs_is_a_transport_retry_and_no_framework_retry(default_run: dict) -> None:
    """http_429_then_valid: one 429 with retry-after 0.2 s, then a valid answer. The official
    clients retry it themselves (openai/_base_client.py and anthropic/_base_client.py
    ``_should_retry`` -> ``_calculate_retry_timeout`` honours retry-after-ms), so the framework
    sees one success: zero output retries, one transport retry, the backoff waited. The Claude
    Code CLI sets its client's retries to 0 and retries in its own loop, so its requests all
    carry x-stainless-retry-count 0: the re-send is the CLI's, not the client's."""
    runs = default_run["runs"]
    rows = runs[
        (runs.scenario == "http_429_then_valid") & (runs.outcome != "unsupported") & runs.sdk.isin(BUILTIN_SDKS)
    ]
    assert set(rows.sdk) == set(BUILTIN_SDKS)
    assert set(rows.outcome) == {"recovered"}
    assert (rows.output_retries == 0).all() and (rows.transport_retries == 1).all()
    assert (rows.retry_wait_ms >= 150).all()
    cli = rows.sdk == "claude-agent-sdk"
    assert (rows[~cli].client_retries == 1).all()
    assert (rows[cli].client_retries == 0).all()


def test_tool_calls_are_measured_in_every_sdk(default_run: dict) -> None:
    """The control tool_ok runs the tool once and answers from its result in every SDK. On a
    permission error the SDKs that raise it (pydantic-ai, langchain: a plain exception from a
    tool propagates) or whose hardened variant stops on it run the tool once; the others feed
    the error back and the scripted model calls again until a turn limit (openai-agents,
    agentmaker: max_turns 10) or the call cap (claude-agent-sdk: no limit without max_turns)."""
    runs = default_run["runs"]
    tool_ok = runs[(runs.scenario == "tool_ok") & (runs.outcome != "unsupported")]
    assert set(tool_ok.sdk) == TOOL_SDKS
    assert set(tool_ok.outcome) == {"ok"}
    assert (tool_ok.tool_calls == 1).all() and (tool_ok.tool_calls_requested == 1).all()
    fatal = runs[(runs.scenario == "tool_permission_denied") & (runs.outcome != "unsupported")]
    runs_after = fatal.groupby(["sdk", "variant"]).tool_calls_after_fatal.max().to_dict()
    not_stopped = {key: value for key, value in runs_after.items() if value > 0}
    assert not_stopped == {
        ("agentmaker", "default"): 9,
        ("agentmaker", "json_object"): 9,
        ("claude-agent-sdk", "default"): 11,
        ("claude-agent-sdk", "stream"): 11,
        ("openai-agents", "default"): 9,
        ("openai-agents", "stream"): 9,
    }
    assert (fatal.tool_errors == fatal.tool_calls).all()


def test_parallel_turns_in_every_sdk(default_run: dict) -> None:
    """The tool_parallel_* scenarios (two calls in one reply) run in every SDK that supports
    tools, and the tool columns count each call of a turn: both good calls run; a turn with one
    bad call runs the good one and pairs the bad one's error with its own call id; a function
    call beside a valid output-tool call runs and the answer ends the run in the SDKs with an
    output tool (adapters/*/research.md, "Parallel turns"). LangChain's ToolStrategy ends the run on
    an invalid output call beside a function call (#40423, factory.py:2102-2104)."""
    runs = default_run["runs"]
    ran = runs[runs.scenario.str.startswith("tool_parallel_") & (runs.outcome != "unsupported")]
    assert set(ran.sdk) == TOOL_SDKS
    by_scenario = {name: rows for name, rows in ran.groupby("scenario")}
    both = by_scenario["tool_parallel_ok"]
    assert set(both.outcome) == {"ok"}
    assert (both.tool_calls == 2).all() and (both.tool_calls_requested == 2).all()
    one_bad = by_scenario["tool_parallel_bad_args_then_ok"]
    assert (one_bad.tool_calls == 1).all() and (one_bad.tool_calls_requested == 2).all()
    assert one_bad.tool_error_to_model.eq(True).all()
    beside = by_scenario["tool_parallel_with_answer"]
    assert (beside.tool_calls == 1).all()
    output_tool = beside[(beside["mode"] == "tool") & (beside.sdk != "agentmaker")]
    assert set(output_tool.model_calls) == {1}
    bad_answer = by_scenario["tool_parallel_bad_answer_then_valid"]
    toolstrategy = bad_answer[(bad_answer.sdk == "langchain") & (bad_answer["mode"] == "tool")]
    assert set(toolstrategy.outcome) == {"empty"} and (toolstrategy.tool_calls == 1).all()
