"""Judging published claims, on synthetic values and on a recorded probe campaign: yes, no, not shown and not measured
where each belongs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchlib.studies.judge import (NO, NOT_MEASURED, NOT_SHOWN, SINGLE_RUN_FACTOR, YES, compare, judge, paired, pick,
                                    ratio_claim)


def test_a_threshold_claim_needs_the_whole_interval_on_its_side():
    assert judge(0.8, 0.7, 0.9, below=1.0) == YES
    assert judge(0.8, 0.7, 1.1, below=1.0) == NOT_SHOWN  # right direction, interval not conclusive
    assert judge(1.2, 1.1, 1.3, below=1.0) == NO
    assert judge(1.2, 1.1, 1.3, above=1.0) == YES
    assert judge(np.nan, np.nan, np.nan, below=1.0) == NOT_MEASURED
    assert judge(1.2, 0.98, 1.48, below=1.0) == NOT_SHOWN  # the wrong side, but the interval reaches the claim


def test_ratio_claims_carry_the_interval_and_say_not_measured_without_a_row():
    row = pd.Series({"ratio": 0.5, "ci_low": 0.45, "ci_high": 0.56})
    out = ratio_claim("galera is slower", "0.46", row, below=1.0, how="fieller")
    assert out["holds"] == YES and out["measured"] == "0.50 [0.45, 0.56]" and out["claim"] == "galera is slower"
    assert ratio_claim("x", "y", None, below=1.0, how="h")["holds"] == NOT_MEASURED
    single = pd.Series({"ratio": 0.5, "ci_low": -np.inf, "ci_high": np.inf})  # one run a side: no interval
    out = ratio_claim("galera is slower", "0.46", single, below=1.0, how="fieller")
    assert out["holds"] == YES and out["measured"] == f"0.50 (no interval, one run a side: counts beyond x{SINGLE_RUN_FACTOR:g})"
    assert ratio_claim("x", "y", single.replace(0.5, 0.9), below=1.0, how="h")["holds"] == NOT_SHOWN
    assert ratio_claim("x", "y", single.replace(0.5, 1.5), below=1.0, how="h")["holds"] == NO


def test_two_sides_with_runs_are_judged_by_fieller_at_fixed_seed():
    rng = np.random.default_rng(7)
    slow, fast = rng.normal(500, 15, 4), rng.normal(800, 20, 4)
    assert compare("slow < fast", "p", slow, fast, less=True, how="h")["holds"] == YES
    assert compare("slow > fast", "p", slow, fast, less=False, how="h")["holds"] == NO
    same_a, same_b = rng.normal(800, 40, 3), rng.normal(800, 40, 3)
    assert compare("a < b", "p", same_a, same_b, less=True, how="h")["holds"] in (NOT_SHOWN, NO)
    assert compare("a < b", "p", [], fast, less=True, how="h")["holds"] == NOT_MEASURED


def test_one_run_a_side_counts_only_beyond_the_noise_factor():
    assert compare("a < b", "p", [100.0], [100.0 * SINGLE_RUN_FACTOR * 1.01], less=True, how="h")["holds"] == YES
    assert compare("a < b", "p", [100.0], [110.0], less=True, how="h")["holds"] == NOT_SHOWN


def test_paired_ratios_are_judged_on_their_logs():
    a = pd.DataFrame({"cluster": ["g"] * 3, "workload": ["w"] * 3, "threads": [1, 8, 32], "tps": [50, 60, 70]})
    b = a.assign(tps=[100, 110, 130])
    ratios = paired(a, b, "tps")
    assert np.allclose(ratios, [0.5, 60 / 110, 70 / 130])
    assert compare("a < b", "p", ratios, 1.0, less=True, how="h")["holds"] == YES
    assert paired(a, b[:0], "tps").size == 0


def test_pick_filters_and_an_unknown_column_picks_nothing():
    df = pd.DataFrame({"cluster": ["a", "b"], "threads": [1, 8]})
    assert list(pick(df, cluster="a").threads) == [1]
    assert list(pick(df, threads=[1, 8]).cluster) == ["a", "b"]
    assert pick(df, fc_limit=16).empty


@pytest.fixture(scope="module")
def probed():
    """A recorded campaign with the stale-read probe (async, Group Replication, Galera; several settings each)."""
    from pathlib import Path

    from benchlib.analysis.campaign import analyze

    return analyze(Path(__file__).resolve().parents[2] / "data" / "campaigns" / "consistency")


def test_a_stale_rate_pools_the_reads_of_the_runs_picked(probed):
    from benchlib.studies.judge import stale_rate

    eventual = stale_rate(probed, system="group_replication", consistency="EVENTUAL")
    both = probed.axis("probe").stale_reads.query("cluster == 'gr' and setting == 'EVENTUAL'")
    assert eventual["reads"] == both.reads.sum() and eventual["stale"] == both.stale.sum() > 0
    assert eventual["runs"] == both.runs.sum() and eventual["low"] <= eventual["fraction"] <= eventual["high"]
    assert stale_rate(probed, system="aurora") is None


def test_a_stale_read_proves_staleness_and_none_refutes_it_only_where_a_weaker_setting_read_stale(probed):
    from benchlib.studies.judge import NO, NOT_MEASURED, NOT_SHOWN, YES, fewer_stale, stale_claim, stale_rate

    gr = dict(system="group_replication")
    eventual, before = stale_rate(probed, **gr, consistency="EVENTUAL"), stale_rate(probed, **gr, consistency="BEFORE")
    assert stale_claim("stale", "", eventual, stale=True, how="")["holds"] == YES
    assert stale_claim("never stale", "", eventual, stale=False, how="")["holds"] == NO
    # BEFORE read nothing stale; that refutes "no protection" because EVENTUAL did read stale values meanwhile
    refuted = stale_claim("no protection", "", before, stale=True, how="", control=eventual)
    assert refuted["holds"] == NO and "0 stale in" in refuted["measured"] and "upper bound" in refuted["measured"]
    assert stale_claim("no protection", "", before, stale=True, how="")["holds"] == NOT_SHOWN
    assert stale_claim("x", "", None, stale=True, how="h")["holds"] == NOT_MEASURED
    assert fewer_stale("fewer", "", before, eventual, how="")["holds"] in (YES, NOT_SHOWN)
    assert fewer_stale("fewer", "", eventual, eventual, how="")["holds"] == NOT_SHOWN
