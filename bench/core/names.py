"""How an exception is named in results: ``module.Class``, the one spelling every table, worker and
adapter uses (an exception raised in a release worker keeps the name it had there)."""

from __future__ import annotations


def qualified_name(error: BaseException) -> str:
    """``module.Class`` of the exception; for one raised in a release worker, the name it had
    there (``RemoteError.remote_type``)."""
    remote = getattr(error, "remote_type", None)
    if isinstance(remote, str):
        return remote
    kind = type(error)
    return f"{kind.__module__}.{kind.__qualname__}"
