"""Handler compatibility: whether an ``except Old:`` a user wrote still catches what a newer release
raises where the older one raised ``Old`` (or nothing).

Decided on the real classes, never by name alone: :func:`check` runs a small self-contained probe
(:data:`PROBE`) under a Python interpreter, which imports the handler's class and asks
``issubclass``. By default the interpreter is this one (``sys.executable``, run isolated: the
working directory's modules are not importable), so the answer is about the classes installed
here, and says which version of the new class's package that is; ``bench upgrade`` passes a
release environment's interpreter to ask the release itself.

What was raised is known by its lineage when the run recorded it (``exception_mro``: the raised
class's MRO as ``module.Class`` names, taken where it was raised; :func:`bench.core.names.lineage`):
the probe finds the class with that very lineage among the handler class's subclasses and the
answer is that class's ``issubclass``. A class can take another's name (pydantic-ai 2.x raises
private subclasses of ``ModelHTTPError`` named after the error category), so where only the name
is known (a run before schema 5, the committed histories) the answer is never "no longer
catches": several classes there carry the name and only some are caught, ``mixed``; none is
caught, ``unknown`` (the class raised may have taken the name). A class that cannot be imported
there is ``unknown`` too, never guessed.

The changelog (:mod:`bench.report.changelog`) and ``bench upgrade`` share this module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PROBE = r"""
import importlib, importlib.metadata, json, sys

def load(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
        except AttributeError:
            continue
        if isinstance(found, type):
            return found
    return None

def version(dotted):
    top = dotted.split(".")[0]
    if top == "builtins":
        return "Python " + sys.version.split()[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        try:
            return top + " " + importlib.metadata.version(dist)
        except Exception:
            pass
    return top

# cls and every subclass presenting the same module.qualname: what a raise recorded as `dotted`
# may have been (pydantic-ai 2.68.0 raises a private subclass of ModelHTTPError that takes the
# name of the category it also subclasses, e.g. ModelRequestRejectedError).
def named(cls, dotted):
    found, todo = [cls], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub.__module__ + "." + sub.__qualname__ == dotted and sub not in found:
            found.append(sub)
        todo.extend(sub.__subclasses__())
    return found

def shape(cls):
    return cls.__name__ + "(" + ", ".join(base.__name__ for base in cls.__bases__) + ")"

def lineage(cls):
    return [k.__module__ + "." + k.__qualname__ for k in cls.__mro__ if k is not object]

# the class whose MRO is `mro` (recorded where it was raised), among `handler` and its subclasses,
# once the modules the MRO names are imported (a subclass may live in a module not yet loaded)
def by_lineage(handler, mro):
    for dotted in mro:
        load(dotted)
    found, todo = [], [handler]
    while todo:
        cls = todo.pop()
        if lineage(cls) == mro and cls not in found:
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return found

out = []
for old, new, *recorded in json.load(sys.stdin):
    mro = recorded[0] if recorded else []
    if mro:
        a = load(old)
        if a is None:
            out.append({"verdict": "unknown", "missing": [old], "where": None, "caught": [], "missed": []})
            continue
        matched = by_lineage(a, mro)
        caught = matched or a.__module__ + "." + a.__qualname__ in mro
        out.append({"verdict": "catches" if caught else "misses", "missing": [], "where": version(mro[0]),
                    "caught": [shape(c) for c in matched] if mro.count(mro[0]) > 1 else [],  # a disguise
                    "missed": [], "lineage": True})
        continue
    a, b = load(old), load(new)
    missing = [name for name, cls in ((old, a), (new, b)) if cls is None]
    if missing:
        out.append({"verdict": "unknown", "missing": missing, "where": None, "caught": [], "missed": []})
        continue
    candidates = named(b, new)
    caught = [c for c in candidates if issubclass(c, a)]
    missed = [c for c in candidates if not issubclass(c, a)]
    # by the name alone, a class that is no subclass is "unknown", never "misses": the class raised
    # may have taken the name (see `named`) from a module this interpreter has not loaded
    verdict = "catches" if not missed else "unknown" if not caught else "mixed"
    out.append({
        "verdict": verdict, "missing": [], "where": version(new),
        "caught": [shape(c) for c in caught] if verdict == "mixed" else [],
        "missed": [shape(c) for c in missed] if verdict != "catches" else [],
    })
json.dump(out, sys.stdout)
"""
"""Reads ``[[old, new], ...]`` on stdin (``[old, new, lineage]`` where the raised class's lineage
is known), writes one verdict per entry; standard library only, so any environment's interpreter
runs it."""

Verdict = Literal["catches", "misses", "mixed", "unknown"]


@dataclass(frozen=True)
class Compatibility:
    """Whether ``except old:`` catches ``new`` where it was checked. ``mixed``: several classes
    present ``new``'s name there (a subclass disguised under it) and only some are caught."""

    old: str
    new: str
    verdict: Verdict
    where: str | None = None
    """The new class's package and version the check imported (``pydantic_ai 2.68.0``)."""
    missing: tuple[str, ...] = ()
    caught: tuple[str, ...] = ()
    """For ``mixed``: the classes named ``new`` that are caught, as ``Name(bases)``."""
    missed: tuple[str, ...] = ()
    by_lineage: bool = False
    """Decided on the class actually raised (its recorded lineage), not on its name; ``caught``
    then holds that class as ``Name(bases)`` when it takes a name of its MRO's (a disguise)."""

    def sentence(self) -> str:
        """One clause: ``except ModelHTTPError no longer catches ModelRequestRejectedError (not a
        subclass; checked on pydantic_ai 2.68.0 here)``."""
        old, new = short(self.old), short(self.new)
        if self.verdict == "unknown" and self.missing:
            return f"`except {old}` catching {new}: unknown: not importable here ({', '.join(self.missing)})"
        if self.verdict == "unknown":
            return (f"`except {old}` may miss {new} (unknown: the class of that name is not a subclass on "
                    f"{self.where} here, but the run recorded the name only, not the class raised)")  # fmt: skip
        if self.verdict == "catches":
            return f"`except {old}` still catches {new} (a subclass; checked on {self.where} here)"
        if self.verdict == "misses":
            return f"`except {old}` no longer catches {new} (not a subclass; checked on {self.where} here)"
        return (
            f"`except {old}` catches some of the classes named {new} here, not all: caught "
            f"{', '.join(self.caught)}; not caught {', '.join(self.missed)} (the run records the name, not "
            f"which class was raised; checked on {self.where} here)"
        )


def short(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


Pair = tuple[str, str]
"""(the handler's class, the raised class's name), both ``module.Class``."""
Raised = tuple[str, str, tuple[str, ...]]
"""(the handler's class, the raised class's name, its recorded lineage)."""


def check(pairs: list[Pair], python: Path | str | None = None) -> dict[Pair, Compatibility]:
    """Each (old, new) pair's compatibility by the classes' names, decided under ``python``
    (default: this interpreter), isolated (``-I``) so nothing but the installed packages is
    imported. A probe that fails as a whole (the interpreter is missing) makes every pair
    ``unknown``."""
    found = _probe([(old, new, ()) for old, new in pairs], python)
    return {(old, new): verdict for (old, new, _), verdict in found.items()}


def check_raised(raised: list[Raised], python: Path | str | None = None) -> dict[Raised, Compatibility]:
    """Whether ``except handler`` catches each raised class, decided under ``python`` (the
    interpreter of the release that raised it) on its recorded lineage; an entry whose lineage
    is empty (a run before schema 5) is decided by name, as :func:`check`."""
    return _probe(raised, python)


def _probe(entries: list[Raised], python: Path | str | None) -> dict[Raised, Compatibility]:
    unique = sorted(set(entries))
    if not unique:
        return {}
    command = [str(python or sys.executable), "-I", "-c", PROBE]
    payload = [[old, new, list(mro)] if mro else [old, new] for old, new, mro in unique]
    try:
        done = subprocess.run(
            command, input=json.dumps(payload), capture_output=True, text=True, timeout=300, check=True
        )
        answers = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        answers = [{"verdict": "unknown", "missing": [old, new], "where": None} for old, new, _ in unique]
    return {
        entry: Compatibility(
            entry[0],
            entry[1],
            answer["verdict"],
            answer["where"],
            tuple(answer["missing"]),
            tuple(answer.get("caught", ())),
            tuple(answer.get("missed", ())),
            bool(answer.get("lineage")),
        )
        for entry, answer in zip(unique, answers, strict=True)
    }
