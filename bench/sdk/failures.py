"""Whose an import failure is. An ``ImportError`` (``ModuleNotFoundError`` too) raised at call
time from an SDK's own installed modules (a lazy import, an optional dependency the environment
lacks) is the SDK's: it cannot run the cell here, which :mod:`bench.run.classify` records as
``unsupported`` with the SDK's reason and an install hint. Raised from our code (``bench``,
``adapters``, a plugin's adapter module) it stays ours, a harness error.

Decided by the traceback's innermost frame (the code that ran the failing import), never by the
exception's class or module name: an SDK may raise ImportError about anything, and our adapter
may import an SDK module that is not there.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from importlib.metadata import packages_distributions

OURS = frozenset({"bench", "adapters"})
"""The top-level packages of misfit-bench itself: what is raised there is a harness bug."""
PASS_THROUGH = frozenset(
    {"pydantic", "pydantic_core", "typing", "typing_extensions", "functools", "asyncio", "contextlib", "importlib"}
)
"""Libraries that raise on behalf of their caller (pydantic's validation, asyncio's timeout, importlib's
``import_module``): the frame that called them decides whose exception it is."""


def raised_in(error: BaseException) -> str | None:
    """The module (``__name__``) whose code raised ``error``: the traceback read from its innermost
    frame outward, past :data:`PASS_THROUGH` and importlib's frozen frames; the first frame left
    decides. None when no frame is anyone's (raised in C, or re-raised bare)."""
    frames = []
    trace = error.__traceback__
    while trace is not None:
        frames.append(trace.tb_frame)
        trace = trace.tb_next
    for frame in reversed(frames):
        name = frame.f_globals.get("__name__")
        if not isinstance(name, str) or frame.f_code.co_filename.startswith("<frozen"):
            continue
        if name.split(".")[0] not in PASS_THROUGH:
            return name
    return None


def raised_by_sdk(error: BaseException) -> bool:
    """Whether ``error`` was raised in an SDK's code (or a library it called), not in ours. An
    exception with no frame of anyone's is ours: a harness error is loud, a wrong ``raised`` is not."""
    module = raised_in(error)
    return module is not None and module.split(".")[0] not in OURS


@dataclass(frozen=True)
class MissingImport:
    """An SDK's own import that failed at call time."""

    distribution: str
    """The installed distribution whose module ran the import (``pydantic-ai-slim``)."""
    module: str | None
    """The module that is missing, when the error names it."""
    reason: str
    """The SDK's own message."""

    def hint(self) -> str:
        """One line: how to give the SDK what it imports."""
        if self.module is None:
            return f"{self.distribution} could not import what it needs here; install its missing dependency"
        top = self.module.split(".")[0].replace("_", "-")
        brings = f"its extra that brings it, or pip install {top}"
        return f"install module {self.module!r} beside {self.distribution} ({brings})"

    def said(self) -> str:
        """The cell's message: the SDK's reason, then the hint."""
        return f"{self.reason} ({self.hint()})"


def sdk_import_failure(error: BaseException | None, adapter_module: str = "") -> MissingImport | None:
    """``error`` as an SDK's own import failure, when it is an ImportError raised (:func:`raised_in`)
    in an installed distribution's module other than ours and ``adapter_module``'s (the adapter
    that called the SDK); else None."""
    if not isinstance(error, ImportError):
        return None
    module = raised_in(error)
    top = module.split(".")[0] if module else ""
    if not top or top in OURS or top == adapter_module.split(".")[0]:
        return None
    distributions = _distributions(tuple(sys.path)).get(top)
    if not distributions:
        return None  # not an installed package (a script, a test's own module): not an SDK's
    missing = error.name if isinstance(error, ModuleNotFoundError) else None
    return MissingImport(distributions[0], missing, str(error) or type(error).__name__)


@functools.lru_cache(maxsize=4)
def _distributions(path: tuple[str, ...]) -> dict[str, list[str]]:
    """Top-level module -> installed distributions, scanned once per ``sys.path`` (seconds)."""
    del path  # the cache key only: a folder added to sys.path can add distributions
    return dict(packages_distributions())
