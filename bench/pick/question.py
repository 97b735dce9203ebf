"""The question a reader brings (the notebook's first cell): which type (theirs, or the built-in
tasks), which SDKs, protocols, scenarios and variants, under which weights; and the run that
answers it, never a narrower one than it says.

:func:`answer` reads the run the question names, else the newest complete run under the results
folder that covers the question, else makes one (``bench pick --type`` for a type, ``bench run``
otherwise). :func:`gaps` is what the run did not measure of what the question asks, in sentences,
read from the run's manifest: a run of another type, SDKs, modes, variants, protocols or scenarios
it left out, a shard, an unfinished run. :func:`in_scope` keeps the rows the question asks about.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.pick.weights import Weights, parse_weights

if TYPE_CHECKING:
    import pandas as pd

    from bench.run.suite import SuiteRequest

ENVIRONMENT = {
    "type": "MISFIT_TYPE",
    "example": "MISFIT_EXAMPLE",
    "check": "MISFIT_CHECK",
    "project": "MISFIT_PROJECT",
    "sdks": "MISFIT_SDKS",
    "protocols": "MISFIT_PROTOCOLS",
    "scenarios": "MISFIT_SCENARIOS",
    "variants": "MISFIT_VARIANTS",
    "weights": "MISFIT_WEIGHTS",
    "run": "MISFIT_RUN",
    "results": "MISFIT_RESULTS",
    "dataset": "MISFIT_DATASET",
    "dataset_version": "MISFIT_DATASET_VERSION",
}
"""The variables that override a question's fields (CI sets them to ask a small question);
lists are comma-separated, weights as ``--weight`` takes them. ``example`` and ``check`` are
``bench pick --type``'s ``--example FILE`` and ``--check module:attr``, read the same way."""
LISTS = ("sdks", "protocols", "scenarios")
OPTIONS = {"--type": "type", "--example": "example", "--check": "check", "--sdk": "sdks", "--scenario": "scenarios"}
"""``bench pick --type``'s options that are the question's fields: a refusal naming one says which."""


class QuestionError(Exception):
    """A question no run answers as asked (a type no derived answer meets without an example, an
    unknown SDK or scenario, a run that cannot be read): one line, in a notebook too."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows in place of the traceback (its hook for an exception that says it
        all): the reader changes the question, nothing in the stack helps."""
        return [f"{type(self).__name__}: {self}"]


def refused(error: Exception) -> QuestionError:
    """``error``'s first line, the ``bench pick --type`` options it names said as the question's
    fields (``--example FILE`` is ``example=``, or MISFIT_EXAMPLE)."""
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    named = [f"{flag} is {name}= ({ENVIRONMENT[name]})" for flag, name in OPTIONS.items() if flag in message]
    return QuestionError(message + (f" [in the question: {'; '.join(named)}]" if named else ""))


class Question(BaseModel):
    """What the reader wants to know. ``None`` means everything: every installed SDK, protocol,
    and every scenario of the default suite."""

    model_config = ConfigDict(extra="forbid")

    type: str | None = None
    """``module:Type``, a pydantic model importable from ``project``; None: the built-in tasks."""
    example: str | None = None
    """With ``type``: a JSON file of a right answer, relative to ``project`` (``bench pick --type
    --example FILE``); None: a derived one. A type whose validators no derived answer meets needs it."""
    check: str | None = None
    """With ``type``: ``module:attr`` of ``check(output) -> reason or None`` (``bench pick --check``)."""
    project: Path = Path(".")
    sdks: list[str] | None = None
    protocols: list[str] | None = None
    scenarios: list[str] | None = None
    variants: Literal["default", "all"] = "default"
    """``all``: the hardened variants too."""
    weights: Weights = Field(default_factory=Weights)
    reps: int = Field(1, ge=1)
    run: str | None = None
    """A run folder or suite id to read; None: the newest run that covers the question, else a new one."""
    results: Path = Path("results")
    dataset: str | None = None
    """A published dataset to read instead of a run (``bench publish OUT``'s ``OUT/dataset``, a
    folder or its URL): its latest default run, at ``dataset_version``; None: a run."""
    dataset_version: str | None = None
    """The dataset version to read (``cells-...``, as a citation names it); None: the newest."""

    @classmethod
    def asked(cls, weights: str = "", environ: dict[str, str] | None = None, **given: Any) -> Question:
        """The question as the notebook's cell writes it (``weights`` as ``--weight`` takes them),
        each field overridden by its :data:`ENVIRONMENT` variable when that is set."""
        environ = dict(os.environ) if environ is None else environ
        fields: dict[str, Any] = dict(given)
        for name, variable in ENVIRONMENT.items():
            if environ.get(variable):
                value = environ[variable]
                fields[name] = [v.strip() for v in value.split(",") if v.strip()] if name in LISTS else value
        text = fields.pop("weights", weights)
        return cls(**fields, weights=Weights().model_copy(update=parse_weights([text] if text else [])))

    @property
    def wanted_variants(self) -> frozenset[str]:
        return frozenset({"default"} if self.variants == "default" else {"default", "hardened"})

    def request(self) -> SuiteRequest:
        """The run that answers exactly this question."""
        from bench.own.typed import TypeRequest
        from bench.run.plan import Filters
        from bench.run.suite import SuiteRequest

        def chosen(values: list[str] | None) -> frozenset[str] | None:
            return frozenset(values) if values else None

        return SuiteRequest(
            sdks=tuple(self.sdks or ()),
            filters=Filters(
                variants=self.wanted_variants, protocols=chosen(self.protocols), scenarios=chosen(self.scenarios)
            ),
            reps=self.reps,
            results_root=self.results,
            project=self.project,
            output_type=TypeRequest(self.type, self.example, self.check) if self.type else None,
        )

    def describe(self) -> str:
        everything = {"sdks": "every installed SDK", "protocols": "every protocol", "scenarios": "the default suite"}
        parts = [", ".join(getattr(self, name)) if getattr(self, name) else said for name, said in everything.items()]
        subject = f"your type {self.type}" if self.type else "the built-in tasks"
        return f"{subject}; {'; '.join(parts)}; {self.variants} variants; weights {self.weights.text()}"


def installed_sdks() -> list[str]:
    """The registered SDKs whose adapter loads here (what "every installed SDK" means)."""
    from bench.run.suite import load_adapters

    return sorted(load_adapters((), lambda message: None))


def default_scenarios() -> list[str]:
    from bench.run.suite import SuiteRequest, select_scenarios

    return sorted(s.name for s in select_scenarios(SuiteRequest()))


def gaps(question: Question, manifest: dict[str, Any], sdks: list[str], scenarios: list[str]) -> list[str]:
    """What ``question`` asks that the run of ``manifest`` did not measure (empty: it covers it),
    with ``sdks`` and ``scenarios`` the ones the question means (its own, or every installed /
    default one)."""
    found: list[str] = []
    if manifest.get("status") != "complete":
        found.append(f"the run is {manifest.get('status') or 'of unknown status'}, not complete")
    measured = (manifest.get("output_type") or {}).get("reference")
    if manifest.get("agents"):
        found.append(f"the run measured your own agents ({', '.join(manifest['agents'])}), not the built-in SDKs")
    elif measured != question.type:
        found.append(f"the run measured {_subject(measured)}, the question asks about {_subject(question.type)}")
    elif question.type is not None:
        recorded = (manifest.get("request") or {}).get("output_type") or {}
        said = (recorded.get("example"), recorded.get("check"))
        if said != (question.example, question.check):
            found.append(
                f"the run judged right by {_right(*said)}, the question by {_right(question.example, question.check)}"
            )
    if missing := sorted(set(sdks) - set(manifest.get("sdk_versions") or {})):
        found.append(f"SDKs not in the run: {', '.join(missing)}")
    filters = manifest.get("filters") or {}
    if filters.get("modes"):
        found.append(f"the run has only the modes {', '.join(filters['modes'])}")
    if filters.get("variants") and (missing := sorted(question.wanted_variants - set(filters["variants"]))):
        found.append(f"variants not in the run: {', '.join(missing)}")
    asked_protocols = set(question.protocols or ["every protocol"])
    if filters.get("protocols") and (missing := sorted(asked_protocols - set(filters["protocols"]))):
        found.append(f"protocols not in the run: {', '.join(missing)} (it has {', '.join(filters['protocols'])})")
    if missing := sorted(set(scenarios) - set(manifest.get("scenarios") or [])):
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        found.append(f"{len(missing)} scenario(s) not in the run: {shown}")
    if manifest.get("shard"):
        found.append("the run is one shard ({}/{}) of its matrix".format(*manifest["shard"]))
    return found


def _right(example: str | None, check: str | None) -> str:
    """What said what is right for a type: the example, the check, or the derived answer."""
    parts = [f"the example {example}"] * bool(example) + [f"the check {check}"] * bool(check)
    return " and ".join(parts) or "the derived answer"


def _subject(reference: str | None) -> str:
    return f"the type {reference}" if reference else "the built-in tasks"


@dataclass(frozen=True)
class Answer:
    directory: Path
    gaps: list[str]
    """Empty when the run covers the question; else what it leaves out, said under the ranking."""
    made: bool
    """True when no run covered the question and this one was made for it."""


def answer(question: Question, warn: Callable[[str], None] = lambda message: None) -> Answer:
    """The run that answers ``question``: the one it names (with what it does not cover), else the
    newest complete run that covers it, else a new run of exactly the question; a question no run
    answers is :class:`QuestionError` (one line)."""
    from bench.results.store import ResultsError, read_manifest, resolve_run
    from bench.run.runs import run_directories
    from bench.run.suite import SuiteError, in_own_loop, run_suite
    from bench.scenarios.files import ScenarioError

    sdks = question.sdks or installed_sdks()
    scenarios = question.scenarios or default_scenarios()
    if question.run is not None:
        try:
            directory = resolve_run(question.run, question.results)
            return Answer(directory, gaps(question, read_manifest(directory), sdks, scenarios), made=False)
        except ResultsError as error:
            raise refused(error) from None
    newest_first = sorted(run_directories(question.results), key=lambda p: (p.name != "baseline", p.name), reverse=True)
    for directory in newest_first:  # the committed baseline last
        try:
            manifest = read_manifest(directory)
        except ResultsError:
            continue
        if not gaps(question, manifest, sdks, scenarios):
            return Answer(directory, [], made=False)
    request = question.request()
    try:
        directory = in_own_loop(lambda: run_suite(request, warn=warn))  # a notebook's kernel runs a loop
    except (SuiteError, ScenarioError, ResultsError) as error:
        raise refused(error) from None
    return Answer(directory, gaps(question, read_manifest(directory), sdks, scenarios), made=True)


def in_scope(runs: pd.DataFrame, question: Question) -> pd.DataFrame:
    """The rows of a (possibly wider) run that the question asks about."""
    keep = runs["variant"].isin(sorted(question.wanted_variants))
    for column, wanted in (("sdk", question.sdks), ("protocol", question.protocols), ("scenario", question.scenarios)):
        if wanted:
            keep &= runs[column].isin(wanted)
    return runs[keep]
