"""A session fixture's product built once per test session, however many pytest-xdist workers
run the session: the first worker to ask builds it, the others wait for it and load it.

xdist's own ``xdist_group`` cannot do this here: pytest 9.2 keeps a node's id in ``_id``, and
pytest-xdist 3.8 suffixes the group onto ``_nodeid``, so the group never reaches the scheduler
and each worker built the default matrix for itself (tests/test_once.py). This is the pattern
xdist's docs give for it ("Making session-scoped fixtures execute only once"), with a lock on a
file in the session's shared temporary folder."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".built"


def built_once(factory: pytest.TempPathFactory, worker: str, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``build`` filled for ``name`` in this session: built here, or by another worker
    of the session (``worker`` is xdist's ``worker_id``: ``master`` when not distributed, where
    the folder is this process's own). A build that raised is not marked done: the next worker
    to ask builds again, and fails on its own."""
    if worker == "master":
        folder = factory.mktemp(name)
        build(folder)
        return folder
    folder = factory.getbasetemp().parent / name  # the session's root, shared by its workers
    folder.mkdir(exist_ok=True)
    with open(folder.with_name(f"{name}.lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / DONE).exists():
            build(folder)
            (folder / DONE).touch()
    return folder
