"""Exact tests for small counts, as ``bench gate`` uses them on stochastic runs.

Every test here is one-sided, in the direction of a regression (the current run is worse than the
baseline): the gate only fails on "worse", so a two-sided test would spend half its power on
improvements nobody gates on. Everything is computed with integers and ``math.comb`` (no scipy),
so small tables give exact, reproducible p-values that the tests check against hand arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def binomial_tail(k: int, n: int, p: float = 0.5) -> float:
    """P(X >= k) for X ~ Binomial(n, p): the exact tail the sign test and McNemar use."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p == 0.5:  # exact in integers: sum of C(n, i) over 2^n
        return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n
    return min(1.0, sum(binomial_pmf(i, n, p) for i in range(k, n + 1)))


def binomial_pmf(k: int, n: int, p: float) -> float:
    """P(X = k) for X ~ Binomial(n, p), in log space so large n neither overflows nor underflows."""
    if p <= 0.0 or p >= 1.0:
        return float(k == (n if p >= 1.0 else 0))
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)
    return math.exp(log)


def mcnemar_greater(worse: int, better: int) -> float:
    """Exact McNemar test on paired units, one-sided: p that ``worse`` or more of the
    ``worse + better`` discordant pairs went the bad way if either way were equally likely.

    ``worse`` counts units that failed now and not in the baseline, ``better`` the reverse;
    concordant pairs carry no information about a change and do not enter. No discordant pair
    (the zero-failure case included) gives p = 1."""
    return binomial_tail(worse, worse + better, 0.5)


def fisher_greater(current_failures: int, current_n: int, baseline_failures: int, baseline_n: int) -> float:
    """Fisher's exact test, one-sided: p that the current run shows ``current_failures`` or more
    failures given both runs' margins, if both came from the same failure rate.

    Conditioning on the margins makes it exact at any n; with no failure in either run
    (the zero-failure case) p = 1. The terms are summed from the first by the ratio of
    successive hypergeometric probabilities, in log space: linear in n, and a first term too small
    for a float does not zero the ones after it."""
    total, failures = current_n + baseline_n, current_failures + baseline_failures
    low, top = max(0, current_n - (total - failures)), min(current_n, failures)
    if current_failures <= low:
        return 1.0
    if current_failures > top:
        return 0.0
    log_term = _log_hypergeom(current_failures, total, failures, current_n)
    tail = 0.0
    for x in range(current_failures, top + 1):
        tail += math.exp(log_term)
        if x < top:
            log_term += math.log((failures - x) * (current_n - x)) - math.log(
                (x + 1) * (total - failures - current_n + x + 1)
            )
    return min(1.0, tail)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _log_hypergeom(x: int, total: int, successes: int, draws: int) -> float:
    return _log_comb(successes, x) + _log_comb(total - successes, draws - x) - _log_comb(total, draws)


def sign_test_greater(differences: Sequence[float]) -> float:
    """Paired sign test, one-sided: p that this many units or more got worse (difference > 0)
    among the units that changed at all. For means (extra calls, extra tokens) per paired unit."""
    up = sum(1 for d in differences if d > 0)
    down = sum(1 for d in differences if d < 0)
    return binomial_tail(up, up + down, 0.5)


def mann_whitney_greater(current: Sequence[float], baseline: Sequence[float]) -> float:
    """Mann-Whitney U test, one-sided (current tends to be larger), normal approximation with
    tie and continuity corrections. For unpaired means; a rank test, so one runaway cell with
    12 calls cannot dominate the way it would in a t-test. Returns 1 when nothing varies."""
    n1, n0 = len(current), len(baseline)
    if not n1 or not n0:
        return 1.0
    u = sum(1.0 if c > b else 0.5 if c == b else 0.0 for c in current for b in baseline)
    pooled = [*current, *baseline]
    ties = sum(t**3 - t for t in (pooled.count(v) for v in set(pooled)))
    n = n1 + n0
    variance = n1 * n0 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return 1.0
    z = (u - n1 * n0 / 2 - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: adjusted p-values in the input order, to compare with alpha.

    Controls the chance of any false regression across all cells tested (family-wise), without
    Bonferroni's loss of power for every test after the first."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def smallest_paired_count(level: float, n: int) -> int | None:
    """The fewest units that must get worse (with none getting better) for the exact McNemar test
    to reach ``level`` at n paired units; None when even all n would not do."""
    for worse in range(1, n + 1):
        if mcnemar_greater(worse, 0) <= level:
            return worse
    return None


def mde_paired(level: float, n: int) -> float | None:
    """Minimum detectable increase of a failure rate (as a fraction) at n paired units and
    ``level``: the best case, where every changed unit changed for the worse."""
    worse = smallest_paired_count(level, n)
    return None if worse is None else worse / n


def mde_unpaired(level: float, baseline_failures: int, baseline_n: int, current_n: int) -> float | None:
    """Minimum detectable increase of a failure rate (as a fraction) by Fisher's exact test,
    given the baseline's observed failures: the smallest current rate that would reach
    ``level``, minus the baseline rate. None when no current count would."""
    for failures in range(current_n + 1):
        if fisher_greater(failures, current_n, baseline_failures, baseline_n) <= level:
            return max(0.0, failures / current_n - baseline_failures / baseline_n)
    return None


# --- power: can the reps tell a rise of a given size from noise? ---------------------------
#
# The gate calls a stochastic cell INCONCLUSIVE when its test had less than the configured power
# (0.8 by default) to detect a rise of a failure rate of the effect size, and ``bench gate --plan``
# turns the same computation around into the reps a cell needs. Both are exact (binomial and
# hypergeometric sums, no normal approximation), at the level the first Holm step uses (alpha over
# the number of tests), so they are on the safe side of what Holm allows for the later steps.


def power_paired(level: float, flippable: int, flip: float) -> float:
    """Power of the one-sided exact McNemar test over paired units when a regression turns each
    of ``flippable`` units (those the baseline handled) into a failure with probability ``flip``
    and turns none the other way.

    That is the paired design's model here: both runs draw the same behaviours for the same
    (seed, rep) unit, so a unit changes only when the SDK's handling of it changed. The test then
    rejects when the number of units that got worse reaches the smallest count significant on
    its own (``smallest_paired_count``)."""
    needed = smallest_paired_count(level, flippable)
    return 0.0 if needed is None else binomial_tail(needed, flippable, flip)


def fisher_critical(level: float, baseline_failures: int, baseline_n: int, current_n: int) -> int | None:
    """The fewest current failures that Fisher's one-sided test finds significant at ``level``
    given the baseline's counts (the p-value falls as current failures rise: bisection)."""
    if fisher_greater(current_n, current_n, baseline_failures, baseline_n) > level:
        return None
    low, high = 0, current_n
    while low < high:
        middle = (low + high) // 2
        if fisher_greater(middle, current_n, baseline_failures, baseline_n) <= level:
            high = middle
        else:
            low = middle + 1
    return low


def power_unpaired(level: float, baseline_failures: int, baseline_n: int, current_n: int, rate: float) -> float:
    """Power of Fisher's one-sided test given the baseline's observed counts, when the current
    run's true failure rate is ``rate``: P(current failures >= the critical count)."""
    critical = fisher_critical(level, baseline_failures, baseline_n, current_n)
    return 0.0 if critical is None else binomial_tail(critical, current_n, min(1.0, rate))


def power_unpaired_planned(level: float, n: int, before: float, after: float) -> float:
    """Power of Fisher's one-sided test for two runs of n reps each, neither run yet: the
    conditional power averaged over the baseline's binomial outcomes (terms below 1e-12 skipped)."""
    total = 0.0
    for failures in range(n + 1):
        weight = binomial_pmf(failures, n, before)
        if weight > 1e-12:
            total += weight * power_unpaired(level, failures, n, n, after)
    return total


def reps_needed(power_at: Callable[[int], float], target: float, most: int = 2000) -> int | None:
    """The fewest reps at which ``power_at(n)`` reaches ``target``: doubling, then bisection.

    Exact tests' power is not strictly monotone in n (it saws up and down by a few points as the
    critical count steps), so this is the first n found on a rising search, not a guarantee that
    every larger n has the power; None when even ``most`` reps would not do."""
    low, high = 1, 2
    while power_at(high) < target:
        if high >= most:
            return None
        low, high = high, min(most, high * 2)
    while low + 1 < high:
        middle = (low + high) // 2
        low, high = (low, middle) if power_at(middle) >= target else (middle, high)
    return high
