"""Handler compatibility: whether an ``except Old:`` a user wrote still catches ``New``, the class a
newer release raises where the older one raised ``Old``.

Decided on the real classes, by the MRO, never by name: :func:`check` runs a small self-contained
probe (:data:`PROBE`) under a Python interpreter, which imports both classes from their dotted
names and asks ``issubclass``. By default the interpreter is this one (``sys.executable``, run
isolated: the working directory's modules are not importable), so the answer is about the classes
installed here, and says which version of the new class's package that is; ``bench upgrade`` can
pass a release environment's interpreter to ask the release itself. A class that cannot be
imported there is ``unknown``, never guessed.

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

out = []
for old, new in json.load(sys.stdin):
    a, b = load(old), load(new)
    missing = [name for name, cls in ((old, a), (new, b)) if cls is None]
    if missing:
        out.append({"verdict": "unknown", "missing": missing, "where": None, "caught": [], "missed": []})
        continue
    candidates = named(b, new)
    caught = [c for c in candidates if issubclass(c, a)]
    missed = [c for c in candidates if not issubclass(c, a)]
    verdict = "catches" if not missed else "misses" if not caught else "mixed"
    out.append({
        "verdict": verdict, "missing": [], "where": version(new),
        "caught": [shape(c) for c in caught] if verdict == "mixed" else [],
        "missed": [shape(c) for c in missed] if verdict == "mixed" else [],
    })
json.dump(out, sys.stdout)
"""
"""Reads ``[[old, new], ...]`` on stdin, writes one verdict per pair; standard library only, so
any environment's interpreter runs it."""

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

    def sentence(self) -> str:
        """One clause: ``except ModelHTTPError no longer catches ModelRequestRejectedError (not a
        subclass; checked on pydantic_ai 2.68.0 here)``."""
        old, new = short(self.old), short(self.new)
        if self.verdict == "unknown":
            return f"`except {old}` catching {new}: unknown: not importable here ({', '.join(self.missing)})"
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


def check(pairs: list[tuple[str, str]], python: Path | str | None = None) -> dict[tuple[str, str], Compatibility]:
    """Each (old, new) pair's compatibility, decided under ``python`` (default: this interpreter),
    isolated (``-I``) so nothing but the installed packages is imported. A probe that fails as a
    whole (the interpreter is missing) makes every pair ``unknown``."""
    unique = sorted(set(pairs))
    if not unique:
        return {}
    command = [str(python or sys.executable), "-I", "-c", PROBE]
    try:
        done = subprocess.run(
            command, input=json.dumps(unique), capture_output=True, text=True, timeout=300, check=True
        )
        answers = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        answers = [{"verdict": "unknown", "missing": list(pair), "where": None} for pair in unique]
    return {
        pair: Compatibility(
            pair[0],
            pair[1],
            answer["verdict"],
            answer["where"],
            tuple(answer["missing"]),
            tuple(answer.get("caught", ())),
            tuple(answer.get("missed", ())),
        )
        for pair, answer in zip(unique, answers, strict=True)
    }
