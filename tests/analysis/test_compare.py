"""Agreement of repetitions and ratios against a baseline, checked by simulation with fixed seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchlib.analysis.compare import grubbs, adjust, agreement, fieller, ratio, runs_needed


def run_means(n, mean, cov, rng):
    return rng.normal(mean, cov * mean, n)


def test_fieller_interval_covers_the_true_ratio():
    """2% run-level CoV: the 95% Fieller interval covers about 95% (spec: 97% at 2-3 runs, 95% at 10)."""
    rng = np.random.default_rng(10)
    for n, lo_ok in [(3, 0.93), (10, 0.92)]:
        hits = 0
        for _ in range(1000):
            r, lo, hi = fieller(run_means(n, 1100, 0.02, rng), run_means(n, 1000, 0.02, rng))
            hits += lo <= 1.1 <= hi
        assert lo_ok <= hits / 1000 <= 0.995, (n, hits)


def test_fieller_is_unbounded_when_the_baseline_is_not_distinguishable_from_zero():
    r, lo, hi = fieller([5.0, 6.0], [0.1, 2.0])
    assert lo == -np.inf and hi == np.inf


def test_verdicts():
    rng = np.random.default_rng(11)
    base = run_means(5, 1000, 0.01, rng)
    assert ratio(run_means(5, 1150, 0.01, rng), base).verdict == "FASTER"
    assert ratio(run_means(5, 800, 0.01, rng), base).verdict == "SLOWER"
    same = ratio(run_means(30, 1000, 0.005, rng), run_means(30, 1000, 0.005, rng))
    assert same.verdict == "EQUIVALENT"
    small = ratio(run_means(10, 1020, 0.01, rng), run_means(10, 1000, 0.01, rng))  # excludes 1, crosses 1+delta
    assert small.verdict == "SIGNIFICANT_BUT_SMALL"
    vague = ratio(run_means(2, 1030, 0.05, rng), run_means(2, 1000, 0.05, rng))
    assert vague.verdict == "INCONCLUSIVE" and vague.runs_needed_per_side > 2
    assert any("rank test" in n for n in vague.notes)
    # latency: the ratio stays a / b, and lower is faster
    lat = ratio(run_means(5, 8.0, 0.01, rng), run_means(5, 10.0, 0.01, rng), higher_is_better=False)
    assert lat.ratio < 1 and lat.verdict == "FASTER"


def test_p_value_is_welch_on_logs_and_bh_adjusts_many_comparisons():
    rng = np.random.default_rng(12)
    base = run_means(4, 1000, 0.02, rng)
    others = [run_means(4, m, 0.02, rng) for m in (1000, 1005, 1100, 1200)]
    ratios = adjust([ratio(o, base) for o in others])
    for o, r in zip(others, ratios):
        assert r.p == pytest.approx(stats.ttest_ind(np.log(o), np.log(base), equal_var=False).pvalue)
    q = stats.false_discovery_control([r.p for r in ratios])
    assert [r.q for r in ratios] == pytest.approx(list(q))


def test_false_faster_rate_under_the_null_is_small():
    rng = np.random.default_rng(13)
    wrong = sum(ratio(run_means(3, 1000, 0.02, rng), run_means(3, 1000, 0.02, rng)).verdict in ("FASTER", "SLOWER")
                for _ in range(500))
    assert wrong / 500 <= 0.05


def test_agreement_adds_runs_until_the_interval_is_tight():
    rng = np.random.default_rng(14)
    tight = agreement(run_means(5, 1000, 0.005, rng), ses=[5] * 5, classes=["FLAT"] * 5)
    assert tight.verdict == "AGREE" and tight.half_width_rel < 0.02
    two = agreement(run_means(2, 1000, 0.005, rng))
    assert two.verdict == "ADD_RUNS" and "fewer than 3 runs" in two.label
    noisy = agreement(run_means(3, 1000, 0.05, rng))
    assert noisy.verdict == "ADD_RUNS" and noisy.runs_needed > 10 and noisy.add == 10 - 3  # up to the cap
    capped = agreement(run_means(10, 1000, 0.08, rng))
    assert capped.verdict == "UNRESOLVED"


def test_agreement_flags_outlier_runs_classes_and_heterogeneity():
    out = agreement([1000, 1002, 998, 1001, 1150])
    assert out.outlier_runs == [4] and "outlier run 5" in out.label
    mixed = agreement([1000, 1001, 999], classes=["FLAT", "OSCILLATING", "FLAT"])
    assert not mixed.classes_consistent and "stability class" in mixed.label
    assert agreement([1000, 1001, 999], classes=["FLAT", "WARMUP", "FLAT"]).classes_consistent
    het = agreement([1000, 1010, 990, 1012, 988], ses=[1, 1, 1, 1, 1])  # each run precise, runs apart
    # audit B5: heterogeneity is information (the machine's run-to-run noise), not a reason to add runs
    assert het.q_p < 0.05 and het.i2 >= 0.5 and "beyond their own noise" in " ".join(het.notes)
    assert "beyond their own noise" not in het.label


@pytest.mark.parametrize("runs", [3, 4, 5, 10])
def test_false_outlier_runs_are_at_the_nominal_rate(runs):
    """Audit B7: the modified z-score flagged a clean run in 12-29% of configurations at 3-10 runs; Grubbs'
    test at 5% flags about 5%."""
    rng = np.random.default_rng(runs)
    flagged = sum(bool(grubbs(run_means(runs, 1000, 0.08, rng))) for _ in range(2000))
    assert 0.03 <= flagged / 2000 <= 0.07, flagged / 2000


def test_configuration_intervals_never_reach_zero():
    """Three runs far apart: the interval of a positive mean is computed on the log scale."""
    a = agreement([100.0, 900.0, 1500.0])
    assert 0 < a.ci_low < a.mean < a.ci_high


def test_runs_needed_formula():
    # t(0.975, r-1) * CoV / sqrt(r) <= 2%: with CoV 2% that takes r = 7
    assert runs_needed(0.02) == 7
    assert runs_needed(0.001) == 2
