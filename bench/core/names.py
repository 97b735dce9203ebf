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


def message_of(error: BaseException) -> str:
    """``str(error)``, or what says it could not be had: a user's exception whose ``__str__``
    raises is still the cell's outcome, never a crash of the run that records it."""
    try:
        return str(error)
    except Exception as failure:
        return f"<str() of this {type(error).__qualname__} raised {type(failure).__qualname__}>"
