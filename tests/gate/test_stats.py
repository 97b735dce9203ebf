"""The gate's statistics against values computed by hand for small tables (the arithmetic is in
each comment), the zero-failure case included."""

from __future__ import annotations

import math

import pytest

from bench.gate import stats


def test_binomial_tail_by_hand() -> None:
    assert stats.binomial_tail(3, 3) == 1 / 8  # all three heads
    assert stats.binomial_tail(2, 3) == 4 / 8  # C(3,2) + C(3,3) = 4 of 8
    assert stats.binomial_tail(0, 0) == 1.0
    assert stats.binomial_tail(4, 3) == 0.0
    assert stats.binomial_tail(1, 2, 0.1) == pytest.approx(1 - 0.9**2)


def test_exact_mcnemar_by_hand() -> None:
    assert stats.mcnemar_greater(5, 0) == 1 / 32  # five discordant pairs, all worse: 0.5^5
    assert stats.mcnemar_greater(5, 1) == 7 / 64  # (C(6,5) + C(6,6)) / 2^6
    assert stats.mcnemar_greater(1, 5) == 63 / 64  # one worse of six: P(X >= 1) = 1 - 1/64


def test_zero_failure_case_gives_no_evidence() -> None:
    """No failure in either run: nothing moved, p is 1 and no test can call it a regression."""
    assert stats.mcnemar_greater(0, 0) == 1.0
    assert stats.fisher_greater(0, 10, 0, 10) == 1.0
    assert stats.sign_test_greater([0, 0, 0]) == 1.0
    assert stats.mann_whitney_greater([0, 0], [0, 0]) == 1.0


def test_fisher_exact_by_hand() -> None:
    assert stats.fisher_greater(3, 3, 0, 3) == pytest.approx(1 / 20)  # 1 / C(6,3)
    assert stats.fisher_greater(5, 5, 0, 5) == pytest.approx(1 / 252)  # 1 / C(10,5)
    # 2 of 4 now, 1 of 4 before: (C(3,2)C(5,2) + C(3,3)C(5,1)) / C(8,4) = (30 + 5) / 70
    assert stats.fisher_greater(2, 4, 1, 4) == pytest.approx(0.5)
    # one failure in 20 reps, in the current run: it lands there half the time
    assert stats.fisher_greater(1, 10, 0, 10) == pytest.approx(0.5)
    # fewer failures now than before: no evidence of a rise
    assert stats.fisher_greater(0, 4, 3, 4) == 1.0


def test_sign_test_by_hand() -> None:
    # three units worse, one better, one unchanged: P(X >= 3 | n = 4) = (C(4,3) + C(4,4)) / 16
    assert stats.sign_test_greater([1, 2, 0, -1, 3]) == 5 / 16


def test_mann_whitney_by_hand() -> None:
    # U counts current > baseline pairs, ties half: 3 vs (1,2,3) = 2.5, 4 and 5 = 3 each: 8.5.
    # mean 4.5; ties (3 twice): var = 9/12 * (7 - 6/30) = 5.1; z = (8.5 - 4.5 - 0.5) / sqrt(5.1)
    z = 3.5 / math.sqrt(5.1)
    assert stats.mann_whitney_greater([3, 4, 5], [1, 2, 3]) == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert stats.mann_whitney_greater([3, 4, 5], [1, 2, 3]) == pytest.approx(0.0606, abs=1e-4)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(1 x 0.04, 0.06): step-down stays monotone
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.5]) == [1.0, 1.0]
    assert stats.holm([]) == []


def test_minimum_detectable_effect_paired() -> None:
    assert stats.smallest_paired_count(0.05, 10) == 5  # 0.5^5 = 0.031 <= 0.05 < 0.5^4
    assert stats.mde_paired(0.05, 10) == 0.5
    assert stats.mde_paired(0.01, 20) == 7 / 20  # 0.5^7 = 0.0078
    assert stats.mde_paired(0.05, 4) is None  # even four of four worse: 1/16 > 0.05


def test_minimum_detectable_effect_unpaired_from_zero_failures() -> None:
    # baseline 0 of 10: k of 10 now gives p = C(10,k) / C(20,k); k=3: 120/1140 = 0.105, k=4: 210/4845 = 0.043
    assert stats.mde_unpaired(0.05, 0, 10, 10) == pytest.approx(0.4)
    assert stats.mde_unpaired(0.05, 0, 3, 3) == pytest.approx(1.0)  # 3 of 3: 1/20
    assert stats.mde_unpaired(0.01, 0, 3, 3) is None


def test_power_paired_by_hand() -> None:
    # At level 0.05 McNemar needs 5 worse units and none better (0.5^5 = 0.031); with 40 units
    # each turning worse with probability 0.1: P(Binomial(40, 0.1) >= 5).
    by_hand = 1 - sum(math.comb(40, k) * 0.1**k * 0.9 ** (40 - k) for k in range(5))
    assert stats.power_paired(0.05, 40, 0.1) == pytest.approx(by_hand)
    assert stats.power_paired(0.05, 4, 1.0) == 0.0  # four units can never reach five


def test_power_unpaired_by_hand() -> None:
    # Fisher, 0 of 10 in the baseline: 4 of 10 now gives p = C(10,4)/C(20,4) = 0.043, 3 gives 0.105.
    assert stats.fisher_critical(0.05, 0, 10, 10) == 4
    assert stats.power_unpaired(0.05, 0, 10, 10, 0.5) == pytest.approx(848 / 1024)  # P(Bin(10, .5) >= 4)
    assert stats.fisher_critical(0.001, 0, 3, 3) is None


def test_reps_needed_finds_the_first_n() -> None:
    assert stats.reps_needed(lambda n: n / 100, 0.8) == 80
    assert stats.reps_needed(lambda n: 0.5, 0.8, most=64) is None


def test_large_counts_neither_overflow_nor_underflow() -> None:
    assert stats.binomial_pmf(1000, 2000, 0.5) == pytest.approx(math.comb(2000, 1000) / 2**2000)
    assert stats.fisher_greater(0, 1500, 900, 1500) == 1.0
    assert 0 < stats.fisher_greater(400, 1000, 300, 1000) < 1e-5
