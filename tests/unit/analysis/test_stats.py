"""Statistics over repetitions: known inputs, known answers."""

from __future__ import annotations

import pytest

from clusterbench.analysis.stats import compare, cv, cv_flag, median, median_ci, mwu_p, welch_p


def test_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_median_ci_order_statistics_n10() -> None:
    # P(Binom(10, .5) <= 1) = 11/1024 -> j = 2: [x(2), x(9)], coverage 1 - 22/1024
    ci = median_ci([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
    assert (ci.median, ci.low, ci.high, ci.n) == (5.5, 2, 9, 10)
    assert ci.coverage == pytest.approx(1 - 22 / 1024)


def test_median_ci_n6_is_min_max_at_96_9_percent() -> None:
    ci = median_ci([5, 1, 4, 2, 6, 3])
    assert (ci.low, ci.high) == (1, 6)
    assert ci.coverage == pytest.approx(1 - 2 / 64)


def test_median_ci_small_n_reports_real_coverage() -> None:
    ci = median_ci([100.0, 110.0])
    assert (ci.median, ci.low, ci.high) == (105.0, 100.0, 110.0)
    assert ci.coverage == 0.5
    assert median_ci([7.0]).coverage == 0.0
    assert median_ci([1, 2, 3, 4, 5]).coverage == pytest.approx(0.9375)


def test_cv_and_flag() -> None:
    assert cv([10, 10, 10]) == 0
    assert cv([9, 11]) == pytest.approx(2**0.5 / 10)
    assert cv([5]) is None
    assert cv_flag([9, 11], 0.10) is True  # 14.1 %
    assert cv_flag([99, 101], 0.10) is False


def test_welch_known_p() -> None:
    # t = -9/sqrt(2/3) ... scipy reference value
    assert welch_p([100, 102, 101], [110, 111, 109]) == pytest.approx(3.8507e-4, rel=1e-3)
    assert welch_p([1], [2, 3]) is None
    assert welch_p([5, 5], [5, 5]) == 1.0


def test_mann_whitney_known_p() -> None:
    # complete separation of 3 vs 3: exact two-sided p = 2 / C(6, 3) = 0.1
    assert mwu_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    # 5 vs 5 separated: 2 / 252
    assert mwu_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_compare_verdicts() -> None:
    c = compare([100, 102, 101], [110, 111, 109])
    assert c.change == pytest.approx(9 / 101)
    assert c.verdict() == "faster"
    assert compare([110, 111, 109], [100, 102, 101]).verdict() == "slower"
    assert compare([100, 120, 90], [101, 119, 95]).verdict() == "no significant difference"
    # with Mann-Whitney, 3 vs 3 can never reach p < 0.05
    assert compare([100, 102, 101], [110, 111, 109], test="mwu").verdict() == "no significant difference"
    # latency: lower is better
    assert compare([10, 11, 10.5], [20, 21, 20.5]).verdict(higher_is_better=False) == "slower"


# Order-statistic intervals worked out by hand: j is the largest with
# 2 * P(Binom(n, 1/2) <= j - 1) <= 0.05; the interval is [x(j), x(n + 1 - j)].
@pytest.mark.parametrize(
    ("n", "j", "coverage"),
    [
        (7, 1, 1 - 2 / 128),  # P(X <= 1) = 8/128: j = 2 would cover only 87.5 %
        (8, 1, 1 - 2 / 256),  # P(X <= 1) = 9/256 = 0.035: twice is 0.07
        (9, 2, 1 - 2 * 10 / 512),  # P(X <= 1) = 10/512 = 0.0195; P(X <= 2) = 46/512
        (11, 2, 1 - 2 * 12 / 2048),  # P(X <= 2) = 67/2048 = 0.033: one-sided it would pass
        (20, 6, 1 - 2 * 21700 / 2**20),  # P(X <= 5) = 21700/2^20; P(X <= 6) = 60460/2^20
    ],
)
def test_median_ci_two_sided_for_more_values(n: int, j: int, coverage: float) -> None:
    xs = [float(x) for x in range(n, 0, -1)]  # n .. 1, unsorted on purpose
    ci = median_ci(xs)
    assert (ci.low, ci.high, ci.n) == (float(j), float(n + 1 - j), n)
    assert ci.coverage == pytest.approx(coverage, rel=1e-12)
    assert ci.median == (n + 1) / 2


def test_median_ci_below_six_values_is_min_max_with_its_real_coverage() -> None:
    assert median_ci([3, 1, 2]).coverage == pytest.approx(1 - 2 / 8)
    assert (median_ci([4, 1, 3, 2]).low, median_ci([4, 1, 3, 2]).high) == (1, 4)
    assert median_ci([4, 1, 3, 2]).coverage == pytest.approx(1 - 2 / 16)
    with pytest.raises(ValueError):
        median_ci([])


def test_comparison_verdict_at_its_edges() -> None:
    from clusterbench.analysis.stats import Comparison

    def verdict(change: float | None, p: float | None, higher_is_better: bool = True) -> str:
        return Comparison(100.0, 110.0, change, p, None, "welch", 0.05).verdict(higher_is_better)

    assert verdict(0.1, 0.05) == "no significant difference"  # p must be below alpha
    assert verdict(0.1, 0.0499) == "faster"
    assert verdict(-0.1, 0.01) == "slower"
    assert verdict(0.1, 0.01, higher_is_better=False) == "slower"
    assert verdict(-0.1, 0.01, higher_is_better=False) == "faster"
    for change, p in ((0.0, 0.01), (None, 0.01), (0.1, None), (0.1, float("nan"))):
        assert verdict(change, p) == "no significant difference"
    assert Comparison(1.0, 2.0, 1.0, 0.5, 0.01, "mwu", 0.05).p == 0.01


def test_compare_in_full() -> None:
    from scipy import stats as sps

    c = compare([1, 2, 3], [4, 5, 6])
    assert (c.median_a, c.median_b, c.change, c.test, c.alpha) == (2, 5, 1.5, "welch", 0.05)
    # Welch: difference 3, standard error sqrt(1/3 + 1/3), 4 degrees of freedom
    t = 3 / (2 / 3) ** 0.5
    assert c.p_welch == pytest.approx(2 * float(sps.t.sf(t, 4)), rel=1e-9)
    # Mann-Whitney, exact: U = 0, one of C(6, 3) = 20 orderings each way
    assert c.p_mwu == pytest.approx(2 / 20)
    assert compare([0, 0], [1, 1]).change is None
    assert mwu_p([], [1.0]) is None and mwu_p([1.0], []) is None
    x = [9.0, 11.0]
    assert cv_flag(x, threshold=cv(x) or 0.0) is False  # strictly above the threshold
    assert cv_flag(x, threshold=(cv(x) or 0.0) - 1e-12) is True
