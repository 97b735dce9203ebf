"""Where a cell's failure ended up: the one place that decides a cell's outcome
(docs/design.md, "Outcomes").

The runner drives the adapter and hands over how that call ended (:class:`Driven`); the
adapter reports what reached the caller; the provider's ledger, counted by bench.run.accounting,
says what was sent; the task's semantic check judges the returned object. This module only
combines them, in one order of precedence: harness error, no model call, runaway, timeout,
then what the SDK did. It never looks inside an SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.core.names import lineage, message_of, qualified_name
from bench.core.vocabulary import Outcome
from bench.own.binding import HandleMisuse
from bench.run.accounting import LedgerSummary, first_time_right_calls
from bench.run.toolcalls import ToolSummary
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult
from bench.sdk.failures import MissingImport, sdk_import_failure


@dataclass(frozen=True)
class Driven:
    """How one call of an adapter ended: it returned, it raised (our bug), or it was stopped."""

    result: AdapterResult | None = None
    """What the adapter reported, when it returned."""
    harness_error: BaseException | None = None
    """An exception that escaped the adapter: a harness bug, never the SDK's own."""
    stopped: Outcome | None = None
    """:attr:`Outcome.RUNAWAY` (the call cap was reached) or :attr:`Outcome.TIMEOUT` (the time
    limit passed)."""
    unresponsive: str | None = None
    """A release worker the cell gave up waiting for, and its state (bench.releases.pool.Worker)."""

    @property
    def returned(self) -> bool:
        """Whether the adapter's call ended on its own: nothing of it can still be in flight."""
        return self.result is not None and self.stopped is None and self.unresponsive is None


@dataclass(frozen=True)
class CellVerdict:
    """One cell's outcome and what it returned (not the gate's :class:`bench.gate.compare.Verdict`)."""

    outcome: Outcome
    returned_valid: bool | None
    returned_correct: bool | None
    exception_type: str | None = None
    exception_message: str | None = None
    exception_mro: tuple[str, ...] = ()
    """The raised class's lineage (:func:`bench.core.names.lineage`): what an ``except`` catches."""


NO_MODEL_CALL = CellVerdict(
    Outcome.HARNESS_ERROR, None, None, "NoModelCall",
    "no request reached the provider, though every cell starts with a model call; is a proxy "
    "(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) taking loopback traffic?",
)  # fmt: skip
"""A supported cell whose SDK never reached the provider did not measure the SDK: flagged as the
harness's problem (exit 3), never counted as an outcome. An exception the SDK raised meanwhile
(a connection error through a proxy) is named in the message (:func:`_no_model_call`)."""


def _no_model_call(result: AdapterResult | None) -> CellVerdict:
    error = None if result is None else result.exception
    if error is None:
        return NO_MODEL_CALL
    said = f"{NO_MODEL_CALL.exception_message} (the SDK raised {qualified_name(error)}: {message_of(error)})"
    return replace(NO_MODEL_CALL, exception_message=said[:2000])


def _transport_failure(error: BaseException) -> bool:
    """Whether ``error`` (or an exception in its chain) is a failure to reach the provider: an
    OSError, or an SDK's connection/transport error (``APIConnectionError``, httpx's
    ``ConnectError``/``TransportError``, langchain-openai's wrappers), by class name so that no SDK
    is imported here; a release worker's error by the name it had there."""
    pending: list[BaseException | None] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        names = [kind.__name__ for kind in type(current).__mro__]
        remote = getattr(current, "remote_type", None)
        if isinstance(remote, str):
            names.append(remote.rsplit(".", 1)[-1])
        if isinstance(current, OSError) or any("Connect" in name or "Transport" in name for name in names):
            return True
        pending += [current.__cause__, current.__context__]
    return False


MISUSED_HANDLE = qualified_name(HandleMisuse())
"""The ``exception_type`` of a user's agent cell that failed on the model handle's own API before any
model call: the user's mistake, named with its fix (:func:`usage_errors`), not their SDK's behaviour."""


def _handle_misuse(error: BaseException | None) -> HandleMisuse | None:
    """The :class:`HandleMisuse` in ``error``'s chain (their SDK may wrap it), if any."""
    pending, seen = [error], set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, HandleMisuse):
            return current
        pending += [current.__cause__, current.__context__]
    return None


def usage_errors(exception_types: list[str | None], messages: list[str | None], model_calls: list[int]) -> list[str]:
    """The messages of a run's cells that measured nothing because the user's factory used the
    model handle as a model (``bench run`` names the first and exits 2)."""
    found = zip(exception_types, messages, model_calls, strict=True)
    return list(dict.fromkeys(m or "" for kind, m, calls in found if kind == MISUSED_HANDLE and not calls))


def missing_import(driven: Driven, adapter_module: str = "") -> tuple[BaseException, MissingImport] | None:
    """The SDK's own import failure the call ended on (escaped the adapter, or reported by it),
    by the traceback's innermost frame (:func:`bench.sdk.failures.sdk_import_failure`; a release
    worker decided it where the traceback was): the SDK cannot run here, which is not our bug."""
    error = driven.harness_error or (driven.result.exception if driven.result is not None else None)
    if error is None:
        return None
    found = getattr(error, "missing_import", None) or sdk_import_failure(error, adapter_module)
    return (error, found) if isinstance(found, MissingImport) else None


def unrunnable_lines(names: list[str], outcomes: list[str], messages: list[str | None]) -> list[str]:
    """What ``bench run``'s summary says once per SDK for the cells an SDK could not run in this
    environment (:func:`missing_import`): its reason and install hint, and how many cells."""
    counts: dict[tuple[str, str], int] = {}
    for name, outcome, message in zip(names, outcomes, messages, strict=True):
        if outcome == Outcome.UNSUPPORTED and isinstance(message, str) and message:  # a null read back is NaN
            counts[(name, message)] = counts.get((name, message), 0) + 1
    return [
        f"unsupported: {name}: {message} x {cells} cell{'s' if cells != 1 else ''}"
        for (name, message), cells in counts.items()
    ]


def decide(
    driven: Driven, task: Task, ledger: LedgerSummary, tools: ToolSummary | None, users_agent: bool = False,
    adapter_module: str = "",
) -> CellVerdict:  # fmt: skip
    """The outcome of one cell that ran (or whose worker never started).

    A cell that never reached the provider is the harness's problem (:data:`NO_MODEL_CALL`; a
    release worker that stopped responding says so, not a proxy),
    except for a user's own agent (``users_agent``) whose SDK raised something other than a
    connection failure: their configuration can make the SDK refuse before sending (Pydantic AI's
    NativeOutput on a model whose profile lacks it raises UserError), which is what that agent
    does in production, so it is ``raised``. A built-in adapter's cells are configured by us, so
    theirs stays a harness error.

    An SDK's own import failing at call time (:func:`missing_import`; ``adapter_module``: the
    adapter's, whose imports are ours) is ``unsupported``, with the SDK's reason and an install
    hint: the SDK cannot run the cell in this environment."""
    if (missing := missing_import(driven, adapter_module)) is not None:
        error, failure = missing
        return CellVerdict(Outcome.UNSUPPORTED, None, None, qualified_name(error), failure.said()[:2000])
    if driven.harness_error is not None:
        error = driven.harness_error
        return CellVerdict(Outcome.HARNESS_ERROR, None, None, qualified_name(error), message_of(error)[:2000])
    if ledger.model_calls == 0 and driven.unresponsive is not None:
        return CellVerdict(Outcome.HARNESS_ERROR, None, None, "WorkerStoppedResponding", driven.unresponsive)
    if ledger.model_calls == 0:
        result = driven.result
        misuse = _handle_misuse(result.exception if result is not None else None) if users_agent else None
        if misuse is not None:
            said = message_of(misuse)[:2000]
            return CellVerdict(Outcome.RAISED, None, None, qualified_name(misuse), said, lineage(misuse))
        if (
            users_agent
            and result is not None
            and result.exception is not None
            and not _transport_failure(result.exception)
        ):
            return classify(result, task, 0)
        return _no_model_call(result)
    if driven.stopped is not None:
        return CellVerdict(driven.stopped, None, None)
    assert driven.result is not None
    expected_calls = first_time_right_calls(driven.result.planned_calls, tools)
    return classify(driven.result, task, ledger.model_calls, expected_calls)


def classify(result: AdapterResult, task: Task, model_calls: int, expected_calls: int = 1) -> CellVerdict:
    """The outcome of a cell the SDK finished (:func:`decide` has ruled out a harness error, no
    model call, runaway and timeout). ``expected_calls`` is what a first-time-right run takes
    (bench.run.accounting.first_time_right_calls)."""
    valid, correct = task.judge(result.output) if result.output is not None else (False, False)
    if result.exception is not None:
        message = message_of(result.exception)[:2000]
        error = result.exception
        return CellVerdict(Outcome.RAISED, valid, correct, qualified_name(error), message, lineage(error))
    if result.fallback:
        return CellVerdict(Outcome.FALLBACK, valid, correct)
    if correct:
        return CellVerdict(Outcome.OK if model_calls <= expected_calls else Outcome.RECOVERED, True, True)
    if valid:
        return CellVerdict(Outcome.WRONG, True, False)
    return CellVerdict(Outcome.EMPTY, False, False)
