"""The changelog, readable (issue 23, point 3): changes grouped by behaviour and release pair with
cell counts, split grid cells shown split, exception class changes told once with whether an
``except`` for the old class still catches the new one (decided on the real classes)."""

from __future__ import annotations

import re
from itertools import product

import pandas as pd
import pytest

from bench.report import changelog
from bench.report.handlers import check
from bench.upgrade import history

PROTOCOLS = ("openai-chat", "openai-responses", "anthropic-messages")
CELLS = list(product(("tool", "native"), ("default", "hardened"), PROTOCOLS))
"""Twelve cells per scenario (streams left out)."""


def rows(version: str, scenario: str, fault: str, behave: object) -> list[dict[str, object]]:
    """One row per cell of ``CELLS`` on ``scenario`` in release ``version``; ``behave(i)`` is the
    (outcome, model calls, exception type) of the i-th cell."""
    out = []
    for i, (mode, variant, protocol) in enumerate(CELLS):
        outcome, calls, exception = behave(i)  # type: ignore[operator]
        out.append({
            "sdk": "pydantic-ai", "sdk_version": version, "environment": f"pydantic-ai=={version}", "mode": mode,
            "variant": variant, "protocol": protocol, "stream": False, "scenario": scenario, "task": "person",
            "fault": fault, "outcome": outcome, "model_calls": calls, "exception_type": exception,
        })  # fmt: skip
    return out


def no_check(raised: list[tuple[str, str, tuple[str, ...]]]) -> dict:
    return {}


def test_changes_are_grouped_by_behaviour_with_counts() -> None:
    """Twelve cells that moved alike are one line with "12 of 12 cells", under their family, not
    twelve rows naming protocols; a scenario whose cells moved two ways is two lines."""
    cfe = "pydantic_ai.exceptions.ContentFilterError"
    frame = pd.DataFrame([
        *rows("1.0.0", "refusal_then_valid", "refusal", lambda i: ("recovered", 2, None)),
        *rows("2.0.0", "refusal_then_valid", "refusal", lambda i: ("raised", 1, cfe)),
        *rows("1.0.0", "malformed_then_valid", "malformed:trailing_comma", lambda i: ("recovered", 2, None)),
        *rows("2.0.0", "malformed_then_valid", "malformed:trailing_comma",
              lambda i: ("recovered", 2, None) if CELLS[i][0] == "tool" else ("ok", 1, None)),
    ])  # fmt: skip
    text = changelog.markdown(frame, "t", handlers=no_check)
    line = "- `refusal_then_valid`: recovered (2 calls) -> raises ContentFilterError (1 call), 12 of 12 cells"
    assert text.count(line) == 1, text
    assert "- `malformed_then_valid`: recovered (2 calls) -> ok (1 call), 6 of 12 cells (native mode)" in text
    assert text.index("**worse: refusal**") < text.index("**better: malformed**")  # the worse lead
    assert "openai-chat" not in text and "native / default" not in text
    assert all(len(line) <= changelog.WIDTH for line in text.splitlines())


def test_a_tie_shows_as_split_with_its_counts() -> None:
    """8 cells recovered and 4 raised, then a 6-6 tie: the grid names both behaviours with their
    counts in both releases, never one of them alone (the markdown and the HTML report's grid)."""
    ve = "pydantic_core._pydantic_core.ValidationError"
    frame = pd.DataFrame([
        *rows("1.0.0", "malformed_then_valid", "malformed:trailing_comma",
              lambda i: ("recovered", 2, None) if i < 8 else ("raised", 1, ve)),
        *rows("2.0.0", "malformed_then_valid", "malformed:trailing_comma",
              lambda i: ("recovered", 2, None) if i % 2 else ("raised", 1, ve)),
    ])  # fmt: skip
    text = changelog.markdown(frame, "t", handlers=no_check)
    grid_row = next(line for line in text.splitlines() if line.startswith("malformed_then_valid "))
    assert re.split(r"\s{2,}", grid_row) == ["malformed_then_valid", "8 r2 | 4 x1A", "6 r2 | 6 x1A"]
    assert "Exceptions: A ValidationError." in text
    table = changelog.grid(frame, "pydantic-ai")
    assert table.loc["2.0.0", "malformed_then_valid"] == "6 recovered (2) | 6 raised ValidationError (1)"
    tally = changelog.tallies(frame, "pydantic-ai")[("2.0.0", "malformed_then_valid")]
    assert tally.tied and tally.split


def test_a_rename_is_told_once_with_its_handler_compatibility() -> None:
    """Two scenarios whose cells only changed exception class are not listed per scenario: each
    class pair is one line with its cells, and whether ``except Old`` still catches New, decided
    on the real classes (KeyError is a LookupError; TypeError is no ValueError; an unimportable
    class is unknown)."""
    pairs = {"http_400_persistent": ("builtins.LookupError", "builtins.KeyError"),
             "http_429_should_not_retry": ("builtins.LookupError", "builtins.KeyError"),
             "prose_persistent": ("builtins.ValueError", "builtins.TypeError"),
             "wrong_persistent": ("builtins.ValueError", "nowhere.GoneError")}  # fmt: skip
    faults = {"http_400_persistent": "http_error:400", "http_429_should_not_retry": "http_error:429",
              "prose_persistent": "prose", "wrong_persistent": "wrong"}  # fmt: skip
    frame = pd.DataFrame([
        row for scenario, (old, new) in pairs.items() for row in [
            *rows("1.0.0", scenario, faults[scenario], lambda i, old=old: ("raised", 1, old)),
            *rows("2.0.0", scenario, faults[scenario], lambda i, new=new: ("raised", 1, new)),
        ]
    ])  # fmt: skip
    text = " ".join(changelog.markdown(frame, "t").split())  # wrapped at 120 columns: unwrap
    assert text.count("LookupError -> KeyError") == 1, text
    assert "- LookupError -> KeyError, 24 cells (http_400_persistent 12, http_429_should_not_retry 12): " in text
    assert "`except LookupError` still catches KeyError (a subclass; checked on Python 3." in text
    assert "`except ValueError` may miss TypeError (unknown: the class of that name is not a subclass on " in text
    assert "but the run recorded the name only, not the class raised)" in text  # these rows carry no lineage
    assert "`except ValueError` catching GoneError: unknown: not importable here (nowhere.GoneError)" in text
    assert "`http_400_persistent`:" not in text  # told in the pair's line only


def test_a_rename_whose_runs_recorded_the_class_is_decided_on_it() -> None:
    """Runs of schema 5 record the raised class's lineage: a class that is no subclass of the
    handler's is then named as such ("no longer catches"), and one whose lineage reaches the
    handler's class still catches, whatever its name."""
    lineages = {"builtins.TypeError": ["builtins.TypeError", "builtins.Exception", "builtins.BaseException"],
                "builtins.KeyError": ["builtins.KeyError", "builtins.LookupError", "builtins.Exception",
                                      "builtins.BaseException"]}  # fmt: skip
    frame = pd.DataFrame([
        row | {"exception_mro": lineages.get(str(row["exception_type"]))} for scenario, old, new in (
            ("prose_persistent", "builtins.ValueError", "builtins.TypeError"),
            ("http_400_persistent", "builtins.LookupError", "builtins.KeyError"),
        ) for row in [
            *rows("1.0.0", scenario, "prose", lambda i, old=old: ("raised", 1, old)),
            *rows("2.0.0", scenario, "prose", lambda i, new=new: ("raised", 1, new)),
        ]
    ])  # fmt: skip
    text = " ".join(changelog.markdown(frame, "t").split())
    assert "`except ValueError` no longer catches TypeError (not a subclass; checked on Python 3." in text, text
    assert "`except LookupError` still catches KeyError (a subclass; checked on Python 3." in text, text
    assert "may miss" not in text, text


@pytest.mark.slow
def test_a_subclass_disguised_under_the_name_is_not_taken_for_the_class() -> None:
    """pydantic-ai 2.68.0 raises a 400 as a private subclass of ModelHTTPError that takes the name
    ModelRequestRejectedError (pydantic_ai/exceptions.py, _CategorizedHTTPError); the public class
    of that name is no ModelHTTPError. By name alone `except ModelHTTPError` would look broken."""
    old, new = "pydantic_ai.exceptions.ModelHTTPError", "pydantic_ai.exceptions.ModelRequestRejectedError"
    found = check(
        [(old, new), ("pydantic_ai.exceptions.UnexpectedModelBehavior", "pydantic_ai.exceptions.ContentFilterError")]
    )
    verdict = found[(old, new)]
    assert verdict.verdict == "mixed", verdict
    assert verdict.caught == ("ModelRequestRejectedError(_CategorizedHTTPError, ModelRequestRejectedError)",)
    assert verdict.missed == ("ModelRequestRejectedError(ModelAPIError)",)
    assert (
        found[("pydantic_ai.exceptions.UnexpectedModelBehavior", "pydantic_ai.exceptions.ContentFilterError")].verdict
        == "catches"
    )


def published_grid(sdk: str, first: str = "scenario") -> dict[tuple[str, str], str]:
    """(release, scenario) -> the cell text of the SDK's grid in docs/changelog.md (the blocks whose
    first column is headed ``first``), read by the header's column offsets (columns are two spaces
    apart or more; a block per group of releases)."""
    text = history.CHANGELOG.read_text(encoding="utf-8")
    section = text.split(f"\n## {sdk}\n", 1)[1].split("\n## ", 1)[0]
    cells: dict[tuple[str, str], str] = {}
    for block in re.findall(r"```text\n(.*?)\n```", section, flags=re.S):
        header, *lines = block.split("\n")
        if not header.startswith(f"{first}  "):
            continue
        columns = list(re.finditer(r"\S+(?: \S+)*", header))
        starts, names = [m.start() for m in columns], [m.group() for m in columns]
        for line in lines:
            scenario = line[: starts[1]].strip()
            for name, start, end in zip(names[1:], starts[1:], [*starts[2:], None], strict=True):
                cells[(name, scenario)] = line[start:end].strip()
    return cells


def test_the_published_changelog_shows_no_tie_as_a_majority() -> None:
    """Every (release, scenario) of the committed histories whose cells disagree is shown split in
    docs/changelog.md, each tied behaviour with its count (pydantic-ai 1.0.18 malformed_then_valid:
    8 recovered, 8 raised ValidationError); a scenario left out of the grid is unanimous and alike
    in every release; every line fits 120 columns."""
    runs = history.history_runs()
    text = history.CHANGELOG.read_text(encoding="utf-8")
    assert max(len(line) for line in text.splitlines()) <= changelog.WIDTH
    checked = 0
    for sdk in changelog.multi_release_sdks(runs):
        shown = published_grid(sdk)
        for (release, scenario), tally in changelog.tallies(runs, sdk).items():
            if not tally.split:
                continue
            cell = shown[(release, scenario)]
            named, _ = tally.shown()
            assert cell.count(" | ") >= len(named) - 1 and len(named) >= 2, (sdk, release, scenario, cell)
            if tally.tied:
                top = tally.counts[0][1]
                assert sum(part.startswith(f"{top} ") for part in cell.split(" | ")) >= 2, (sdk, release, cell)
                checked += 1
    assert checked > 0
    assert published_grid("pydantic-ai")[("1.0.18", "malformed_then_valid")] == "8 r2 | 8 x1I"
