"""Handler compatibility on the class actually raised (issue 45.1): its lineage is recorded where it
was raised, carried back from a release worker, and decides ``issubclass`` in the release's own
environment; a name alone never says "no longer catches"."""

from __future__ import annotations

import pytest
from pydantic_ai import exceptions as pai

from bench.core.names import lineage, qualified_name
from bench.releases.protocol import decode_result, encode_result
from bench.report.handlers import check_raised
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import AdapterResult
from bench.upgrade.decision import HandlerBreak

HTTP = "pydantic_ai.exceptions.ModelHTTPError"
REJECTED = "pydantic_ai.exceptions.ModelRequestRejectedError"


def rejected_400() -> BaseException:
    """What pydantic-ai 2.68.0 raises on a persistent 400: the private ``_CategorizedHTTPError``
    subclass that takes the name ModelRequestRejectedError (pydantic_ai/exceptions.py)."""
    return pai.ModelHTTPError.for_category(pai.ModelRequestRejectedError, status_code=400, model_name="gpt-4o")


@pytest.mark.slow  # the probe imports the SDK in a subprocess of its own
def test_a_disguised_subclass_is_recorded_by_its_lineage_and_still_caught() -> None:
    error = rejected_400()
    assert isinstance(error, pai.ModelHTTPError)  # what `except ModelHTTPError` does at run time
    assert qualified_name(error) == REJECTED  # the name alone says the public, uncaught class
    mro = lineage(error)
    assert mro[0] == REJECTED and HTTP in mro and "builtins.object" not in mro
    found = check_raised([(HTTP, REJECTED, mro), (HTTP, REJECTED, ())])
    by_lineage, by_name = found[(HTTP, REJECTED, mro)], found[(HTTP, REJECTED, ())]
    assert by_lineage.verdict == "catches" and by_lineage.by_lineage, by_lineage
    assert by_lineage.caught == ("ModelRequestRejectedError(_CategorizedHTTPError, ModelRequestRejectedError)",)
    assert by_name.verdict == "mixed"  # several classes carry the name here: not known which was raised
    for verdict in (by_lineage, by_name):
        told = " ".join(HandlerBreak(verdict, ("http_400_persistent",), 1).lines())
        assert "no longer catches" not in told and not HandlerBreak(verdict, (), 1).stops_catching, told
    assert "unknown: the run recorded the name only" in " ".join(HandlerBreak(by_name, ("x",), 1).lines())


@pytest.mark.slow
def test_a_class_that_is_not_a_subclass_is_named() -> None:
    """The real case stays: ModelRefusalError is no MaxTurnsExceeded, on its recorded lineage."""
    from agents.exceptions import MaxTurnsExceeded, ModelRefusalError

    mro = lineage(ModelRefusalError("refused"))
    old, new = qualified_name(MaxTurnsExceeded("x")), qualified_name(ModelRefusalError("refused"))
    verdict = check_raised([(old, new, mro)])[(old, new, mro)]
    assert verdict.verdict == "misses" and verdict.where and verdict.where.startswith("agents "), verdict
    line = HandlerBreak(verdict, ("refusal_persistent",), 1).lines()
    assert line == [
        f"except MaxTurnsExceeded no longer catches ModelRefusalError (ModelRefusalError is not a subclass of "
        f"MaxTurnsExceeded; checked on {verdict.where}): refusal_persistent (1 cell)"
    ]


def test_a_release_worker_sends_the_lineage_back() -> None:
    """The worker encodes what its adapter raised with the class's lineage, taken there; the
    parent's RemoteError keeps it, and the runs row reads it through ``lineage``."""
    task = get_task("person")
    sent = encode_result(AdapterResult(output=None, exception=rejected_400()), task)
    received = decode_result(sent, task).exception
    assert received is not None and qualified_name(received) == REJECTED
    assert lineage(received) == lineage(rejected_400())
    assert lineage(decode_result({**sent, "exception": {"type": REJECTED, "message": "m"}}, task).exception) == ()


def test_a_handler_class_missing_in_the_release_is_unknown() -> None:
    mro = lineage(rejected_400())
    verdict = check_raised([("nowhere.GoneError", REJECTED, mro)])[("nowhere.GoneError", REJECTED, mro)]
    assert verdict.verdict == "unknown" and verdict.missing == ("nowhere.GoneError",)
