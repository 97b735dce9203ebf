"""bench.pick.question: the reader's question, and the run that answers it; a run narrower than
the question is said, field by field, from its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.pick.question import Question, answer, gaps, in_scope
from bench.results.store import load_run

SDKS = ["langchain", "pydantic-ai"]
SCENARIOS = ["valid", "malformed_persistent"]


def covering(**changes: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "status": "complete",
        "sdk_versions": {"langchain": "1.0", "pydantic-ai": "1.0", "agentmaker": "0.3"},
        "filters": {"modes": None, "variants": None, "protocols": None, "scenarios": None, "faults": None},
        "scenarios": [*SCENARIOS, "prose_persistent"],
        "shard": None,
    }
    return manifest | changes


def test_a_run_at_least_as_wide_as_the_question_covers_it() -> None:
    assert gaps(Question(), covering(), SDKS, SCENARIOS) == []
    assert gaps(Question(variants="all"), covering(), SDKS, SCENARIOS) == []
    typed = covering(output_type={"reference": "app:T"}, request={"output_type": {"reference": "app:T", "check": None}})
    assert gaps(Question(type="app:T"), typed, SDKS, SCENARIOS) == []


@pytest.mark.parametrize(
    ("question", "manifest", "says"),
    [
        (Question(), covering(status="interrupted"), "the run is interrupted, not complete"),
        (
            Question(type="app:Ticket"),
            covering(),
            "the run measured the built-in tasks, the question asks about the type app:Ticket",
        ),
        (
            Question(),
            covering(output_type={"reference": "app:Ticket"}),
            "the run measured the type app:Ticket, the question asks about the built-in tasks",
        ),
        (Question(), covering(agents={"support": {}}), "the run measured your own agents (support)"),
        (Question(), covering(sdk_versions={"langchain": "1.0"}), "SDKs not in the run: pydantic-ai"),
        (Question(), covering(filters={"modes": ["tool"]}), "the run has only the modes tool"),
        (Question(variants="all"), covering(filters={"variants": ["default"]}), "variants not in the run: hardened"),
        (Question(), covering(filters={"protocols": ["openai-chat"]}), "protocols not in the run: every protocol"),
        (
            Question(protocols=["openai-chat"]),
            covering(filters={"protocols": ["anthropic-messages"]}),
            "protocols not in the run: openai-chat",
        ),
        (Question(), covering(scenarios=["valid"]), "1 scenario(s) not in the run: malformed_persistent"),
        (Question(), covering(shard=[2, 4]), "the run is one shard (2/4) of its matrix"),
        (
            Question(type="app:Ticket", example="ticket.json"),
            covering(output_type={"reference": "app:Ticket"}, request={"output_type": {"reference": "app:Ticket"}}),
            "the run judged right by the derived answer, the question by the example ticket.json",
        ),
    ],
)
def test_what_the_run_leaves_out_of_the_question_is_said(
    question: Question, manifest: dict[str, Any], says: str
) -> None:
    found = gaps(question, manifest, SDKS, SCENARIOS)
    assert len(found) == 1 and found[0].startswith(says), found


def test_the_question_takes_its_environment() -> None:
    environ = {"MISFIT_TYPE": "app:Ticket", "MISFIT_SDKS": "pydantic-ai, langchain", "MISFIT_WEIGHTS": "raised=3"}
    question = Question.asked(weights="wrong=1", environ=environ, sdks=None, variants="all")
    assert question.type == "app:Ticket" and question.sdks == ["pydantic-ai", "langchain"]
    assert (question.weights.raised, question.weights.wrong, question.variants) == (3, 10, "all")
    assert Question.asked(weights="wrong=1", environ={}).weights.wrong == 1


def test_the_question_takes_the_example_and_check_bench_pick_type_takes() -> None:
    """``bench pick --type T --example FILE --check module:attr`` and the notebook asked through
    MISFIT_TYPE, MISFIT_EXAMPLE and MISFIT_CHECK make the same request."""
    from bench.own.typed import TypeRequest

    environ = {"MISFIT_TYPE": "invoice:Audited", "MISFIT_EXAMPLE": "audited.json", "MISFIT_CHECK": "checks:euro_only"}
    question = Question.asked(environ=environ, type=None, example=None, check=None)
    assert question.request().output_type == TypeRequest("invoice:Audited", "audited.json", "checks:euro_only")
    assert Question.asked(environ={}).example is None


def test_a_question_no_run_answers_is_one_line_naming_the_questions_field(tmp_path: Path) -> None:
    """What ``bench pick`` refuses in one line the question refuses so too, as QuestionError, which
    IPython shows as that line and no traceback (``_render_traceback_``)."""
    from bench.pick.question import QuestionError

    with pytest.raises(QuestionError) as raised:
        answer(Question(sdks=["pydantic-ia"], results=tmp_path / "results"))
    assert "pydantic-ia" in str(raised.value) and "\n" not in str(raised.value)
    assert raised.value._render_traceback_() == [f"QuestionError: {raised.value}"]
    project = tmp_path / "project"
    project.mkdir()
    typed = Question(type="nothere:Invoice", example="missing.json", project=project, results=tmp_path / "results")
    with pytest.raises(QuestionError, match=r"--type is type= \(MISFIT_TYPE\)"):
        answer(typed)
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_a_covering_run_is_read_and_a_narrower_one_is_not(tmp_path: Path) -> None:
    small = Question(sdks=["pydantic-ai"], protocols=["openai-chat"], scenarios=["valid"], results=tmp_path)
    made = answer(small)
    assert made.made and made.gaps == []
    again = answer(small)
    assert not again.made and again.directory == made.directory  # no second run
    wider = small.model_copy(update={"scenarios": ["valid", "prose_persistent"]})
    assert answer(wider).directory != made.directory  # the first run is narrower: a new one
    named = answer(wider.model_copy(update={"run": str(made.directory)}))
    assert named.directory == made.directory and named.gaps == ["1 scenario(s) not in the run: prose_persistent"]
    runs = load_run(answer(wider).directory)["runs"]
    assert set(in_scope(runs, small)["scenario"]) == {"valid"}
