"""claims.yaml's smolagents-final-answer-checks-continue-the-run, judged on the adapter's own cells
(the default run the report's claims test judges holds the golden matrix's SDKs only:
tests/report/test_build.py, CLAIMS_JUDGED_ELSEWHERE), and the run's row in ``bench pick``.

One ``run_suite`` of the hardened cells on three scenarios, with smolagents registered the way a
release worker inherits its parent's registrations (``MISFIT_BENCH_REGISTRATIONS``), so the
test does not depend on the checkout having been reinstalled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from bench.report.claims import evaluate, load_claims
from bench.results.store import latest_run, load_run
from bench.run.plan import Filters
from bench.run.suite import SuiteRequest, run_suite
from bench.sdk import registry

pytestmark = pytest.mark.slow  # one run_suite: about 13 s here

CLAIM = "smolagents-final-answer-checks-continue-the-run"
REGISTRATION = [{"name": "smolagents", "target": "adapters.smolagents:PLUGIN", "distribution": None, "extras": []}]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pd.DataFrame]:
    root = tmp_path_factory.mktemp("smolagents")
    with pytest.MonkeyPatch.context() as patch:
        if "smolagents" not in registry.registrations():
            patch.setenv(registry.INHERITED, json.dumps(REGISTRATION))
        filters = Filters(
            scenarios=frozenset({"valid", "wrong_then_valid", "wrong_persistent"}),
            variants=frozenset({"hardened"}),
        )
        run_suite(SuiteRequest(sdks=("smolagents",), filters=filters, results_root=root / "runs"))
    directory = latest_run(root / "runs")
    assert isinstance(directory, Path)
    yield load_run(directory)["runs"]


def test_the_docs_claim_is_judged_on_these_cells(runs: pd.DataFrame) -> None:
    (claim,) = [c for c in evaluate(load_claims(), runs) if c["id"] == CLAIM]
    assert [check["verdict"] for check in claim["checks"]] == ["confirmed", "confirmed", "confirmed"]
    assert claim["verdict"] == "confirmed"
