"""The default matrix against the committed golden matrix: any change after an SDK upgrade
(or a change here) fails with the list of cells that changed and how. Every SDK behaviour in
the golden file is annotated with the SDK source line that explains it."""

from __future__ import annotations

import fnmatch
import json
import re
import sysconfig
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from bench import golden

ANNOTATIONS = golden.GOLDEN_FILE.parent / "annotations.yaml"
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


def test_default_matrix_equals_the_golden_matrix(default_run: dict) -> None:
    changes = golden.differences(default_run["runs"], golden.read())
    message = (
        f"{len(changes)} cell(s) changed against {golden.GOLDEN_FILE.name} "
        "(after an SDK upgrade this is the product working: review, then `python -m bench.golden write`):\n  "
        + "\n  ".join(changes[:60])
    )
    assert not changes, message


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
    strategies = {json.loads(details).get("strategy") for details in auto.details.dropna()}
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


@pytest.mark.parametrize("entry", _annotations(), ids=lambda e: f"{e['sdk']}:{e['source']}")
def test_annotation_sources_exist_in_the_pinned_sdk(entry: dict[str, Any]) -> None:
    assert entry.get("why"), "every annotation says why"
    match = re.fullmatch(r"(.+):(\d+)(?:-(\d+))?", entry["source"])
    assert match, f"source must be path:line or path:a-b, got {entry['source']!r}"
    path = SITE_PACKAGES / match.group(1)
    assert path.is_file(), f"{path} is not in the installed SDK"
    last = int(match.group(3) or match.group(2))
    assert last <= len(path.read_text(encoding="utf-8").splitlines())
