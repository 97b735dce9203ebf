"""The "did you mean" of every error about a name the user typed (an SDK, a scenario, a mode)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, or ``""`` when nothing is close."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
