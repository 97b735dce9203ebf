"""Every exit code of the ``bench`` command, in one place (the README and docs/ci.md list them).

Library modules never exit: they return results (a gate's ``Verdict``) or raise their own
errors, and the command modules of this package turn those into these codes.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a script or CI job can branch on."""

    OK = 0
    """Done; for ``bench gate``: pass."""
    GATE_FAILED = 1
    """``bench gate``: a cell got worse beyond its threshold (or a missing cell with --fail-on-missing)."""
    USAGE = 2
    """Usage or input error: one line naming the file, entry and field, never a traceback."""
    HARNESS_ERROR = 3
    """A bug in misfit-bench (a ``harness_error`` cell, or an internal error), never an SDK's behaviour."""
    NOTHING_TO_COMPARE = 4
    """``bench gate``: no cell ran in both runs; ``bench bisect``: the good and bad releases behave alike."""
    INCONCLUSIVE = 5
    """``bench gate``: no regression seen, but some stochastic cell had too few reps to see one of
    the effect size (``bench gate --plan`` says how many it needs), or some cell timed out where
    the baseline did not (which may be machine load: re-run it)."""
    PARTIAL_RUN = 6
    """``bench gate``: the current run is interrupted, still running, or a partial merge of shards
    (``--allow-partial`` gates what it has)."""
    EMPTY_RUN = 7
    """``bench gate``: the current run or the baseline has no cell at all (a job cancelled before
    its first cell finished)."""
    INTERRUPTED = 130
    """Ctrl-C or SIGTERM, alike for every command (:mod:`bench.cli.signals`); what finished is
    written (``bench run --resume`` completes it), a merge or baseline being replaced stays whole."""
