"""The wire-protocol seam: what the provider asks of each protocol module, and nothing else.

Each of ``openai_chat``, ``openai_responses`` and ``anthropic_messages`` implements
:class:`WireProtocol` with module-level functions, and the app looks the module up by the
request's :class:`bench.core.vocabulary.Protocol` (``bench.provider.app.WIRES``) instead of branching
on the protocol's name. A fourth protocol is one more module and one more table entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from bench.provider.answer import Answer
from bench.provider.detect import RequestShape
from bench.provider.wire import ErrorReply, IdSource, Usage
from bench.scenarios.behaviours import HttpError


class WireProtocol(Protocol):
    """One API's way of answering: the bytes of a reply, its stream and its errors."""

    def render_body(
        self, answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str],
        ids: IdSource,
    ) -> bytes:  # fmt: skip
        """The non-streamed reply (JSON bytes) for ``answer`` to the request ``body``; ``call_ids``
        holds one id per tool call of the answer (``Answer.calls``), in order; every other id of
        the reply is drawn from ``ids``, in the order the reply is written."""
        ...

    def render_events(
        self, answer: Answer, shape: RequestShape, usage: Usage, body: dict[str, Any], call_ids: Sequence[str],
        ids: IdSource,
    ) -> list[bytes]:  # fmt: skip
        """The streamed reply, one SSE frame per element, in the API's event order (a parallel
        turn's items one after another, each under its own index)."""
        ...

    def success_headers(self, ids: IdSource) -> dict[str, str]:
        """Headers of a 200 reply, JSON or SSE, drawn per reply: the API's request id, which the
        official clients expose as ``_request_id``."""
        ...

    def error_reply(self, error: HttpError, ids: IdSource) -> ErrorReply:
        """The API's error response for a scripted HTTP error."""
        ...

    def bad_request(self, message: str) -> ErrorReply:
        """The API's 400 for a request it cannot read."""
        ...

    def new_call_id(self, ids: IdSource) -> str:
        """The next tool-call id from ``ids``, in the API's format (the ledger records which one
        was issued)."""
        ...
