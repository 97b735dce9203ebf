"""The changelog says better or worse (issue 46 point 4): each change is marked worse, better or
neutral by the outcome order the pick and the gate rank by (bench.report.matrix.OUTCOME_ORDER), each
release step leads with the worse ones, and a grid cell's ``N other`` says what those cells did.
Checked on the committed histories (results/releases/) and docs/changelog.md rendered from them."""

from __future__ import annotations

import re
from itertools import product

from bench.report import changelog
from bench.report.changelog import Behaviour, Direction, direction
from bench.report.matrix import OUTCOME_ORDER, outcome_rank
from bench.upgrade import history
from tests.report.test_changelog_groups import published_grid

MEASURED = [o for o in OUTCOME_ORDER if o not in ("unsupported", "harness_error")]


def test_direction_is_the_outcome_order_then_the_calls() -> None:
    """``raises ModelBehaviorError (1 call) -> empty (1 call)`` is worse (the issue's case); every
    pair of outcomes goes the way the matrix's order says; the same outcome is worse with more
    calls, neutral with the same calls and another exception class."""
    mbe = "agents.exceptions.ModelBehaviorError"
    assert direction(Behaviour("raised", 1, mbe), Behaviour("empty", 1, None)) == Direction.WORSE
    assert direction(Behaviour("runaway", 12, None), Behaviour("raised", 1, mbe)) == Direction.BETTER
    for was, now in product(MEASURED, MEASURED):
        expected = (
            Direction.WORSE if outcome_rank(now) > outcome_rank(was)
            else Direction.BETTER if outcome_rank(now) < outcome_rank(was) else Direction.NEUTRAL
        )  # fmt: skip
        assert direction(Behaviour(was, 2, None), Behaviour(now, 2, None)) == expected, (was, now)
    assert direction(Behaviour("recovered", 2, None), Behaviour("recovered", 3, None)) == Direction.WORSE
    assert direction(Behaviour("raised", 1, "a.A"), Behaviour("raised", 1, "b.B")) == Direction.NEUTRAL
    assert direction(Behaviour("timeout", None, None), Behaviour("timeout", None, None)) == Direction.NEUTRAL


def steps_published() -> dict[tuple[str, str, str], str]:
    """(sdk, before, after) -> the text of that release step in docs/changelog.md."""
    text = history.CHANGELOG.read_text(encoding="utf-8")
    out = {}
    for section in text.split("\n## ")[1:]:
        sdk = section.split("\n", 1)[0]
        for step in section.split("\n### ")[1:]:
            before, after = step.split("\n", 1)[0].split(" -> ")
            out[(sdk, before, after)] = step
    return out


def test_the_published_changelog_marks_every_change_and_leads_with_the_worse() -> None:
    """In every release step of the committed histories, each group of changes is under a heading
    with its direction, the worse headings before any other, and the step's summary counts the
    cells of each direction."""
    runs = history.history_runs()
    family = changelog.families(runs)
    published = steps_published()
    checked = 0
    for step in changelog.steps(runs):
        told = published[(step.sdk, step.before, step.after)]
        unwrapped = " ".join(told.split())
        found = changelog.groups(step, family)
        headings = re.findall(r"^\*\*(worse|better|neutral): ", told, flags=re.M)
        assert headings == sorted(headings, key=lambda d: changelog.DIRECTIONS.index(Direction(d))), step
        for group in found:
            if group.renamed_only:
                continue
            heading = f"**{group.direction}: {group.family}**"
            line = " ".join(f"- {group.line()}".split())
            section = unwrapped.split(heading, 1)[1].split("**", 1)[0]
            assert line in section, (step.sdk, step.before, heading, line)
            checked += 1
        for mark in changelog.DIRECTIONS:
            cells = sum(len(g.changes) for g in found if g.direction == mark)
            assert (f"{cells} {mark}" in unwrapped.split(" scenario(s)", 1)[0]) == bool(cells), (step, mark)
    assert checked >= 40
    issue = published[("openai-agents", "0.6.9", "0.14.8")]
    worse = issue.split("**worse: truncated**", 1)[1]
    assert "`truncated_persistent`: raises ModelBehaviorError (1 call) -> empty (1 call)" in worse


def test_n_other_is_told_under_the_grid() -> None:
    """Every ``N other`` of a published grid cell is spelled out in the block under the grid, with
    the same count: langchain 1.0.0's truncated_persistent is ``9 L12 | 3 x1K | 4 other``, the four
    being 2 x1E and 2 x1O."""
    runs = history.history_runs()
    checked = 0
    for sdk in changelog.multi_release_sdks(runs):
        tallied = changelog.tallies(runs, sdk)
        letters = changelog.exception_letters(tallied)
        grid, others = published_grid(sdk), published_grid(sdk, "N other: what those cells did")
        for (release, scenario), tally in tallied.items():
            _, rest = tally.shown()
            if not rest:
                continue
            assert grid[(release, scenario)].endswith(f"| {rest} other"), (sdk, release, scenario)
            told = others[(release, scenario)]
            assert told == tally.others_tokens(letters), (sdk, release, scenario, told)
            assert sum(int(part.split()[0]) for part in told.split(" + ")) == rest
            checked += 1
    assert checked > 50
    assert published_grid("langchain")[("1.0.0", "truncated_persistent")] == "9 L12 | 3 x1K | 4 other"
    assert published_grid("langchain", "N other: what those cells did")[("1.0.0", "truncated_persistent")] == (
        "2 x1E + 2 x1O"
    )
