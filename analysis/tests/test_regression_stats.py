"""iostudy.metrics.regression against hand-derived cases: the U distribution's counts (partitions
in a box), exact and tie-corrected p-values, the Hodges-Lehmann shift and its interval, and
E-divisive finding a step at its index and nothing in flat noise (fixed seeds)."""

import math

import numpy as np
import pytest

from iostudy.metrics import regression


def test_u_counts_are_the_partitions_in_a_box():
    # orderings of 3 against 3 by U: partitions of u into at most 3 parts of at most 3
    assert list(regression.u_counts(3, 3)) == [1, 1, 2, 3, 3, 3, 3, 2, 1, 1]
    counts = regression.u_counts(5, 5)
    assert list(counts[:5]) == [1, 1, 2, 3, 5] and counts.sum() == math.comb(10, 5)


def test_exact_p_values():
    # U = 0 of 3 against 3: one ordering in C(6, 3) = 20 on each side
    assert regression.mann_whitney([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    assert regression.mann_whitney([4, 5, 6], [1, 2, 3]) == pytest.approx(2 / 20)
    # U = 1 (3 > 2.5 only): P(U <= 1) = 2 / 20, two-sided 4 / 20
    assert regression.mann_whitney([1, 2, 3], [2.5, 5, 6]) == pytest.approx(4 / 20)
    assert regression.mann_whitney([1, 2, 3, 4, 5], [11, 12, 13, 14, 15]) == pytest.approx(2 / 252)
    assert regression.smallest_p(3, 3) == pytest.approx(0.1)
    assert regression.smallest_p(5, 10) == pytest.approx(2 / 3003)


def test_normal_approximation_with_ties():
    # x = 1 1 2 2, y = 2 3 3 4: U = 2 x 0.5 (the 2s tie with y's 2) = 1, mean 8; ties in
    # 1 1 2 2 2 3 3 4: groups of 2, 3, 2 -> sum t^3 - t = 6 + 24 + 6 = 36;
    # sigma^2 = 16/12 x (9 - 36 / 56) = 11.143, z = (7 - 0.5) / 3.338 = 1.947
    z = 6.5 / math.sqrt(16 / 12 * (9 - 36 / 56))
    p = regression.mann_whitney([1, 1, 2, 2], [2, 3, 3, 4])
    assert p == pytest.approx(math.erfc(z / math.sqrt(2))) and p == pytest.approx(0.0515, abs=1e-4)
    assert regression.mann_whitney([5, 5, 5], [5, 5, 5]) == 1.0


def test_hodges_lehmann_shift_and_interval():
    # 1..5 against 11..15: differences -10 + (i - j), the median -10; P(U <= 2) = 4/252 <=
    # 0.025 < P(U <= 3) = 7/252: k = 3, the interval D(3) .. D(23) of the 25 sorted
    # differences: -14 once, -13 twice -> D(3) = -13; from the top -6 once, -7 twice -> -7
    assert regression.hodges_lehmann([1, 2, 3, 4, 5], [11, 12, 13, 14, 15]) == (-10, -13, -7)
    # 3 against 3 cannot give 95 %: P(U <= 0) = 1/20 > 0.025, the interval unbounded
    shift, low, high = regression.hodges_lehmann([1, 2, 3], [4, 5, 6])
    assert shift == -3 and low == -math.inf and high == math.inf


def test_e_divisive_finds_a_step_and_nothing_in_flat_noise():
    rng = np.random.default_rng(7)
    step = np.r_[rng.normal(100, 3, 20), rng.normal(70, 3, 15)]
    assert regression.e_divisive(step) == [20]
    two = np.r_[rng.normal(100, 2, 12), rng.normal(60, 2, 12), rng.normal(90, 2, 12)]
    assert regression.e_divisive(two) == [12, 24]
    for seed in range(3):
        flat = np.random.default_rng(seed).normal(100, 5, 40)
        assert regression.e_divisive(flat) == []
    assert regression.e_divisive([100.0] * 10) == [] and regression.e_divisive([1, 2]) == []
    # the same series gives the same answer (the permutations' seed is fixed)
    assert regression.e_divisive(step) == regression.e_divisive(step)


def test_pooled_cov_and_runs_spread():
    # runs 9 11 and 18 22: each CoV sqrt(2) / 10 = 0.1414 (sample std / mean)
    assert regression.pooled_cov([[9, 11], [18, 22], [5]]) == pytest.approx(math.sqrt(2) / 10)
    assert math.isnan(regression.pooled_cov([[5], [6]]))
    assert regression.runs_spread([100, 500]) == pytest.approx(math.sqrt(80000) / 300)
    assert regression.runs_spread([100]) == 0.0
