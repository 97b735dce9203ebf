"""Can a stochastic cell's reps tell a regression from noise? The gate's power analysis.

A stochastic cell passes the gate when its tests find no significant rise of a failure rate.
That means little when the reps are too few to find one: 40 reps cannot reliably show a rise
from 20% to 30%. So for each failure rate of each stochastic cell the gate computes the power of
the test it ran (the chance it would have found a rise of the *effect size*) and calls the cell
INCONCLUSIVE when that power is below the target (0.8 by default); ``bench gate --plan`` turns
the same computation around into the reps a cell needs.

The effect size is the metric's threshold (``raised:+15pp`` -> 15 points; ``+50%`` -> half the
baseline's rate), but at least ``min_effect`` (10 points by default): the default thresholds are
``+0pp``, and no number of reps detects a rise of zero. The level is the first Holm step's,
alpha over the number of tests, so the figures are on the safe side. Failure rates only: the means
(extra calls, extra tokens) are tested with rank tests whose power depends on the shape of their
distribution, which the gate does not model.

Models, both exact (binomial and hypergeometric sums, ``bench.gate.stats``):

- paired cells (both runs ran the same (seed, rep) units, which draw the same behaviours): a
  regression turns a share of the units the baseline handled into failures and none the other
  way; the exact McNemar test then needs a fixed number of worse units (``power_paired``);
- unpaired cells: Fisher's exact test given the baseline's observed counts, against a current
  rate of the baseline's plus the effect (``power_unpaired``); for planning, before either run,
  averaged over the baseline's binomial outcomes too (``power_unpaired_planned``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.gate import stats

DEFAULT_POWER = 0.8
DEFAULT_MIN_EFFECT = 0.10
MOST_REPS = 2000
"""Plans stop here: a cell that needs more is reported as needing more than this."""


@dataclass(frozen=True)
class PowerTarget:
    """What the gate asks of a stochastic cell's reps."""

    power: float = DEFAULT_POWER
    min_effect: float = DEFAULT_MIN_EFFECT
    """The smallest rise of a failure rate (a fraction) a cell must be able to detect."""

    def effect(self, limit: float) -> float:
        """The rise to detect for a metric whose threshold allows ``limit``."""
        return max(limit, self.min_effect)


def cell_power(
    paired: bool, level: float, before: float, n_baseline: int, n_current: int, effect: float
) -> float | None:
    """The power the cell's test had against a rise of ``effect`` from the baseline's rate
    ``before``; None when the rate cannot rise (the baseline already fails every rep)."""
    if before >= 1.0:
        return None
    failures = round(before * n_baseline)
    if paired:
        return stats.power_paired(level, n_baseline - failures, min(1.0, effect / (1 - before)))
    return stats.power_unpaired(level, failures, n_baseline, n_current, min(1.0, before + effect))


def reps_needed(paired: bool, level: float, before: float, effect: float, power: float) -> int | None:
    """Reps per run (both runs the same) for the power to reach ``power`` against a rise of
    ``effect`` from ``before``; None when more than ``MOST_REPS`` (or the rate cannot rise)."""
    if before >= 1.0:
        return None
    after = min(1.0, before + effect)
    if paired:
        flip = min(1.0, effect / (1 - before))
        return stats.reps_needed(lambda n: stats.power_paired(level, round(n * (1 - before)), flip), power, MOST_REPS)
    return stats.reps_needed(lambda n: stats.power_unpaired_planned(level, n, before, after), power, MOST_REPS)
