"""Two campaigns compared: the interval that counts the day-to-day variation covers as it says (simulated, fixed
seeds), the day-to-day estimate recovers the spread it was given, and two recorded campaigns compare."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis.across import compare_campaigns, day_to_day, ratio_across
from tests.recorded import RECORDED


def _campaign_mean(rng, n: int, day: float, cov: float = 0.02) -> np.ndarray:
    """n run means of one campaign: the day's shift shared by every run, each run's own noise."""
    return 1000 * np.exp(day) * (1 + cov * rng.standard_normal(n))


def test_the_interval_covers_when_each_campaign_has_its_day_and_the_runs_alone_do_not():
    rng = np.random.default_rng(39)
    tau, trials = 0.03, 1500
    hits = alone = 0
    for _ in range(trials):  # no real change between the campaigns: the true ratio is 1
        a = _campaign_mean(rng, 3, rng.normal(0, tau))
        b = _campaign_mean(rng, 3, rng.normal(0, tau))
        r = ratio_across(a, b, tau)
        hits += r["ci_low"] <= 1 <= r["ci_high"]
        alone += r["within_low"] <= 1 <= r["within_high"]
    assert 0.93 <= hits / trials <= 0.985, hits / trials
    assert alone / trials < 0.85, alone / trials  # a campaign's runs do not see its day


def test_a_real_change_larger_than_the_days_is_found():
    rng = np.random.default_rng(7)
    a = _campaign_mean(rng, 5, 0.0, cov=0.01)
    b = _campaign_mean(rng, 5, np.log(0.8), cov=0.01)  # 20% slower
    r = ratio_across(a, b, 0.02)
    assert r["verdict"] == "SLOWER" and r["ci_high"] < 0.9 and r["ci_low"] > 0.7
    # latency: lower is better, so a lower B is FASTER
    assert ratio_across(a, b, 0.02, higher=False)["verdict"] == "FASTER"
    assert ratio_across(a[:1], b, 0.02)["verdict"] == "INCONCLUSIVE"  # one run: no spread to count


def test_the_day_to_day_estimate_recovers_the_spread_it_was_given():
    rng = np.random.default_rng(3)
    rows = []
    for campaign in range(4):
        day = {c: rng.normal(0, 0.03) for c in range(30)}  # each campaign's day, per configuration
        for config in range(30):
            for run in _campaign_mean(rng, 3, day[config]):
                rows.append({"campaign_path": f"c{campaign}", "threads": config, "summary_tps": run})
    tau, configs, campaigns = day_to_day(pd.DataFrame(rows), ["threads"])
    assert configs == 30 and campaigns == 4
    assert tau == pytest.approx(0.03, abs=0.008)
    same_day = pd.DataFrame([{**r, "summary_tps": r["summary_tps"]} for r in rows if r["campaign_path"] == "c0"])
    assert day_to_day(same_day, ["threads"])[0] is None  # one campaign: nothing to estimate from


@pytest.mark.long
def test_two_recorded_campaigns_compare_with_what_differs():
    c = compare_campaigns(RECORDED / "quick", RECORDED / "quick-busy")
    assert len(c.matched) == 6 and c.only_a.empty and c.only_b.empty
    assert {"topology", "threads", "workload", "system"} <= set(c.keys) and "cluster" not in c.keys
    assert (c.matched.ci_low <= c.matched.within_low + 1e-9).all()  # the day's part only widens
    assert (c.matched.ci_high >= c.matched.within_high - 1e-9).all()
    assert 0.005 < c.day_cov < 0.1 and "other campaigns" in c.day_cov_source
    assert any(d.what.startswith("CPU lost to other processes") for d in c.differences)  # the busy host
    words = c.words()
    assert "B/A" in words and "95% interval" in words and "what differs" in words
    given = compare_campaigns(RECORDED / "quick", RECORDED / "quick-busy", day_cov=0.0)
    assert given.day_cov_source == "as given"
    narrow, wide = given.matched.ci_high - given.matched.ci_low, c.matched.ci_high - c.matched.ci_low
    assert (narrow <= wide + 1e-12).all() and (narrow < wide).any()


@pytest.mark.long
def test_server_settings_and_load_differences_are_named():
    c = compare_campaigns(RECORDED / "topologies", RECORDED / "study000-quick", metric="latency")
    said = {d.what: (d.a, d.b) for d in c.differences}
    assert said["galera setting innodb_flush_log_at_trx_commit"] == ("1", "2")
    assert said["galera setting wsrep_provider_options: gcs.fc_limit"] == ("16", "1000")
    assert said["mariadb sysbench table_size"] == ("10000", "2000")
    assert not any("threads" in w or "base_dir" in w for w in said)  # matched on, or the lab's own paths
    assert not c.matched.empty and set(c.matched.verdict) <= {"FASTER", "SLOWER", "EQUIVALENT",
                                                              "SIGNIFICANT_BUT_SMALL", "INCONCLUSIVE"}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchlib.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.long
def test_the_command_prints_the_comparison_and_refuses_what_is_not_a_campaign(tmp_path):
    done = _cli("compare", str(RECORDED / "quick"), str(RECORDED / "quick-disturbed"), "--day-cov", "0.03")
    assert done.returncode == 0, done.stderr
    assert "3.0% per campaign (as given)" in done.stdout and "what differs" in done.stdout
    bad = _cli("compare", str(RECORDED / "quick"), str(tmp_path))
    assert bad.returncode == 2 and "is not a campaign folder" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("compare", str(RECORDED / "quick"), str(RECORDED / "quick-busy"), "--metric", "lat")
    assert bad.returncode != 0 and "one of: tps, latency, lag" in bad.stderr + bad.stdout
    assert "Traceback" not in bad.stderr
