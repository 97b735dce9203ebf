"""Environment variables set for the length of a block and restored after it.

A run changes a few process-wide variables that every HTTP client reads when it is built
(the proxy bypass, the trust store): they must hold for the whole run and be exactly as they
were afterwards, whether the block ends normally or by an exception.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def environment_set(changes: Mapping[str, str | None]) -> Iterator[None]:
    """Set each variable to its value (``None`` unsets it) while the block runs, then put every
    one back as it was, unset ones included."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _apply(changes)
        yield
    finally:
        _apply(saved)


def _apply(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
