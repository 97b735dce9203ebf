"""A persistent 500 ends within a bounded number of requests in every SDK, and the layers that
retried it are told apart: the official client's own retries (x-stainless-retry-count > 0),
re-sends by the framework itself, and model-level (output) retries, which must stay at zero."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from bench.results.golden import BUILTIN_SDKS
from bench.results.store import load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite

REQUESTS = {
    # openai/_base_client.py and anthropic/_base_client.py: DEFAULT_MAX_RETRIES = 2, so one
    # framework call is 3 requests; none of the defaults adds a retry of its own on top.
    ("agentmaker", "default"): (3, 2),
    ("langchain", "default"): (3, 2),
    ("openai-agents", "default"): (3, 2),
    ("pydantic-ai", "default"): (3, 2),
    ("agentmaker", "hardened"): (3, 2),
    ("pydantic-ai", "hardened"): (3, 2),
    # Hardened LangChain adds ModelRetryMiddleware(max_retries=2): 3 framework calls of 3
    # requests each, multiplied; the first request of each framework call has retry count 0.
    ("langchain", "hardened"): (9, 6),
    # Hardened openai-agents opts in to runner-managed retries (ModelRetrySettings(max_retries=2),
    # adapters/openai_agents/adapter.py _retry_settings): two re-sends after the client's own 3 requests.
    ("openai-agents", "hardened"): (5, 2),
    # Hardened Claude: CLAUDE_CODE_MAX_RETRIES=2; the CLI retries in its own loop with its
    # client's retries off, so no request carries a non-zero x-stainless-retry-count.
    ("claude-agent-sdk", "hardened"): (3, 0),
    # The official clients alone, and Instructor on them: the client's 3 requests; Instructor's
    # retry loop re-asks only a parse error, so the APIStatusError ends it (v2/core/retry.py:601-625).
    ("anthropic-client", "default"): (3, 2),
    ("openai-client", "default"): (3, 2),
    ("instructor", "default"): (3, 2),
    ("instructor", "hardened"): (3, 2),
}


@pytest.fixture(scope="module")
def persistent_500(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    filters = Filters(
        variants=frozenset({"default", "hardened"}),
        protocols=frozenset({"openai-chat", "anthropic-messages"}),
        scenarios=frozenset({"http_500_persistent"}),
    )
    # The Claude CLI's default (10 retries, exponential backoff) outlasts any test's patience:
    # 11 requests over about 3.5 minutes, each backoff under the stall limit, then raised (README, "The two
    # retry layers"); so Claude runs its hardened variant only.
    others = tuple(sdk for sdk in BUILTIN_SDKS if sdk != "claude-agent-sdk")
    claude = replace(filters, variants=frozenset({"hardened"}))
    runs = pd.concat(
        load_run(run_suite(SuiteRequest(sdks=sdks, filters=scope, suite="full", results_root=root)))["runs"]
        for sdks, scope, root in (
            (others, filters, tmp_path_factory.mktemp("persistent-500")),
            (("claude-agent-sdk",), claude, tmp_path_factory.mktemp("persistent-500-claude")),
        )
    )
    return runs[runs.outcome != "unsupported"]


@pytest.mark.slow
def test_a_persistent_500_ends_by_itself_within_a_bounded_number_of_requests(persistent_500: pd.DataFrame) -> None:
    assert set(persistent_500.outcome) == {"raised"}
    measured = persistent_500.groupby(["sdk", "variant"]).agg(
        requests=("model_calls", "max"), client=("client_retries", "max")
    )
    assert {key: (int(r.requests), int(r.client)) for key, r in measured.iterrows()} == REQUESTS
    assert set(persistent_500.sdk) == set(BUILTIN_SDKS)


@pytest.mark.slow
def test_no_model_level_retry_is_stacked_on_transport_retries(persistent_500: pd.DataFrame) -> None:
    assert (persistent_500.output_retries == 0).all()
    assert (persistent_500.transport_retries == persistent_500.model_calls - 1).all()
    assert (persistent_500.retry_wait_ms > 0).all()


@pytest.mark.slow
def test_the_run_took_no_longer_than_its_backoffs(persistent_500: pd.DataFrame) -> None:
    """Each backoff is waited once: latency is the summed retry waits plus the calls themselves."""
    assert (persistent_500.latency_ms >= persistent_500.retry_wait_ms).all()


@pytest.mark.slow
def test_the_claude_cli_waits_the_whole_second_of_retry_after(tmp_path: Path) -> None:
    """A 429 with retry-after 0.2 s is sent as ``retry-after-ms: 200`` and ``retry-after: 1``
    (whole seconds, rounded up: bench/provider/wire.py retry_headers). The Python clients read
    ``retry-after-ms`` (openai/_base_client.py, anthropic/_base_client.py: ~0.2 s); the Claude CLI's
    own loop reads only ``retry-after``, as parseInt(...) * 1000, plus up to 25 % jitter (bundled
    CLI 2.1.332, minified): about 1.0-1.3 s."""
    filters = Filters(
        modes=frozenset({"tool"}), variants=frozenset({"default"}), protocols=frozenset({"anthropic-messages"}),
        scenarios=frozenset({"http_429_then_valid"}),
    )  # fmt: skip
    request = SuiteRequest(sdks=("claude-agent-sdk", "pydantic-ai"), filters=filters, results_root=tmp_path)
    runs = load_run(run_suite(request))["runs"]
    ran = runs.set_index("sdk")
    assert list(ran.outcome) == ["recovered", "recovered"]
    assert 1000 <= ran.loc["claude-agent-sdk", "retry_wait_ms"] < 2500  # wide: scheduling on a loaded machine
    assert 150 <= ran.loc["pydantic-ai", "retry_wait_ms"] < 1000
