"""How an exception is named in results: ``module.Class``, the one spelling every table, worker and
adapter uses (an exception raised in a release worker keeps the name it had there), and its class's
lineage, the same spelling for every class of its MRO: a class can take another's name (pydantic-ai
2.x raises private subclasses of ``ModelHTTPError`` named after the error category they also
subclass), so whether an ``except`` catches it is read from the lineage, never from the name."""

from __future__ import annotations


def qualified_name(error: BaseException) -> str:
    """``module.Class`` of the exception; for one raised in a release worker, the name it had
    there (``RemoteError.remote_type``)."""
    remote = getattr(error, "remote_type", None)
    if isinstance(remote, str):
        return remote
    return class_name(type(error))


def class_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def lineage(error: BaseException) -> tuple[str, ...]:
    """``module.Class`` of every class in the MRO of the exception's class, the class itself
    first (``object`` left out), recorded where the class object exists: in the process that
    raised it, so a release worker sends it back (``RemoteError.remote_mro``). Empty for a
    worker's exception that came back with its name only."""
    remote = getattr(error, "remote_mro", None)
    if isinstance(remote, tuple):
        return remote
    if isinstance(getattr(error, "remote_type", None), str):
        return ()
    return tuple(class_name(kind) for kind in type(error).__mro__ if kind is not object)


def message_of(error: BaseException) -> str:
    """``str(error)``, or what says it could not be had: a user's exception whose ``__str__``
    raises is still the cell's outcome, never a crash of the run that records it."""
    try:
        return str(error)
    except Exception as failure:
        return f"<str() of this {type(error).__qualname__} raised {type(failure).__qualname__}>"
