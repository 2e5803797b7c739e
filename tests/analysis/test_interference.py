"""Interference per run: the figures from recorded host series, the disturbed-run rule, the words.

The hypervisor's steal cannot be created on demand, so its path is tested on recorded series: a run of the
recorded ``resources`` campaign (real /proc samples of this kind of machine, no steal) with 15% of the host's CPU
moved from idle to steal over its load window, as a VM with a noisy neighbour records it. The foreign-CPU path is
tested live, with a CPU hog, in tests/sampling/test_foreign.py and tests/campaign/test_runner.py.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from benchlib.analysis import interference
from benchlib.analysis.campaign import analyze
from benchlib.analysis.resources import window_rates
from benchlib.store import list_runs, read_run
from tests.conftest import ROOT
from tests.recorded import as_folders

RECORDED = ROOT / "data" / "campaigns" / "resources"


def with_steal(cluster: pd.DataFrame, window: tuple[float, float], share: float) -> pd.DataFrame:
    """``cluster`` with ``share`` of both CPUs' time moved from idle to steal from the load's start on."""
    out = cluster.copy()
    cpus = 2
    for field, sign in (("steal", 1), ("idle", -1)):
        rows = out.metric == f"cpu.all.{field}_s"
        since = np.clip(out.t_s[rows] - window[0], 0, None)
        out.loc[rows, "value"] = out.value[rows] + sign * share * cpus * since
    return out


@pytest.fixture(scope="module")
def run():
    return read_run(list_runs(RECORDED)[0])


def test_figures_of_a_recorded_run(run):
    """This run, recorded on this kind of VM, lost 7% of the CPU to the hypervisor (steal, as /proc/stat counted it):
    under the 10% a run may lose, so it is said, not disturbed."""
    f = interference.of_run(run.frames["cluster"], tuple(run.manifest.load_window_s))
    assert f["steal"] == pytest.approx(0.071, abs=0.002) and f["foreign"] is None  # recorded before foreign CPU was
    assert f["lost_cpu"] == f["steal"] and 0 < f["psi_cpu"] <= 1 and 0 <= f["psi_io"] <= 1
    assert interference.disturbance(f) is None
    assert interference.evidence(f) == "the hypervisor took 7% of the CPU (steal)"


def test_steal_in_a_recorded_series_makes_a_run_disturbed(run):
    window = tuple(run.manifest.load_window_s)
    before = interference.of_run(run.frames["cluster"], window)["steal"]
    f = interference.of_run(with_steal(run.frames["cluster"], window, 0.15), window)
    assert f["steal"] - before == pytest.approx(0.15, abs=0.01) and f["lost_cpu"] == f["steal"]
    why = interference.disturbance(f)
    assert why and why.startswith("the hypervisor took 22% of the CPU (steal)") and ", over the 10%" in why
    assert interference.disturbance(f, above=0.3) is None


def test_foreign_cpu_is_named_with_its_top_command():
    f = {"steal": 0.0, "foreign": 0.42, "lost_cpu": 0.42, "top_foreign": "stress-ng", "top_foreign_share": 0.40}
    assert interference.evidence(f) == "processes outside the lab took 42% of the CPU, mostly stress-ng (40%)"


def test_the_part_never_exceeds_the_whole():
    """A command's counter starts once it has used a few seconds: over the samples it has, its rate can exceed the
    whole foreign rate (a run once said "16% of the CPU, mostly python (26%)"). Neither the figures nor the words
    give a part larger than the whole."""
    f = {"steal": 0.0, "foreign": 0.16, "lost_cpu": 0.16, "top_foreign": "python", "top_foreign_share": 0.26}
    assert interference.evidence(f) == "processes outside the lab took 16% of the CPU, mostly python (16%)"
    t = [0.0, 1.0, 2.0, 3.0, 4.0]
    rows = [("host:h", f"cpu.all.{k}_s", [x * v for x in t]) for k, v in (("user", 1.0), ("idle", 1.0))]
    rows += [("host:h", "foreign.cpu_s", [x * 0.32 for x in t]),  # 16% of the 2 CPU-seconds a second
             ("host:h", "foreign.comm.python.cpu_s", [None, None, None, 3.0, 3.9])]  # named late, counted from the start
    cl = pd.DataFrame([{"run_id": "r", "t_s": ts, "node": n, "metric": m, "value": v, "counter": True, "reset": False}
                       for n, m, vs in rows for ts, v in zip(t, vs) if v is not None])
    runs = pd.DataFrame({"run_id": ["r"], "load_start_s": [0.0], "load_end_s": [4.0]})
    from benchlib.analysis.resources import window_rates

    row = interference.per_run(window_rates(cl, runs), cl, runs).iloc[0]
    assert row.top_foreign == "python" and row.top_foreign_share <= row.foreign + 1e-12, row.to_dict()


@pytest.mark.long
def test_a_campaign_with_a_stolen_run_is_warned_and_said(tmp_path):
    """The recorded campaign with one run's series showing 15% steal: the analysis finds it per run, validate warns
    (the run was kept: recorded without a redo), and the report's interference findings name it."""
    folder = as_folders("resources", tmp_path / "resources")
    victim = list_runs(folder)[2]
    r = read_run(victim)
    stolen = with_steal(r.frames["cluster"], tuple(r.manifest.load_window_s), 0.15)
    stolen.to_parquet(victim / "cluster.parquet", index=False)
    before = analyze(RECORDED).runs.set_index("run_id").steal
    a = analyze(folder)
    steal = a.runs.set_index("run_id").steal
    assert steal[victim.name] - before[victim.name] == pytest.approx(0.15, abs=0.01)
    assert (steal.drop(victim.name) == before.drop(victim.name)).all()
    warned = a.problems[a.problems["where"] == victim.name]
    assert warned.what.str.contains(f"disturbed: the hypervisor took {steal[victim.name]:.0%} of the CPU").any()
    from benchlib.report import interference_findings

    said = " ".join(interference_findings(a, folder))
    assert f"during run {victim.name}, which ran" in said and "the hypervisor took a median" in said


def test_rates_and_figures_come_from_one_pass_over_the_campaign():
    a = analyze(RECORDED)
    assert a.rates is not None and {"run_id", "node", "metric", "rate"} <= set(a.rates.columns)
    again = window_rates(a.frames["cluster"], a.runs[a.runs.status == "ok"])
    pd.testing.assert_frame_equal(a.rates.reset_index(drop=True), again.reset_index(drop=True))
    per = interference.per_run(a.rates, a.frames["cluster"], a.runs)
    assert set(per.run_id) == set(a.runs.run_id) and per.steal.between(0, 0.2).all()


def test_noise_in_words_says_what_to_do():
    words = interference.noise_words({"seconds": 3, "steal": 0.08, "background": 0.3,
                                      "background_top": {"stress-ng": 0.29}, "fsync_p50_ms": 0.5,
                                      "fsync_p99_ms": 9.0, "fsync_folder": "/runs"})
    (steal, s_do, s_bad), (bg, b_do, b_bad), (fs, f_do, f_bad) = words
    assert s_bad and "steal 8.0%" in steal and "dedicated-CPU" in s_do
    assert b_bad and "stress-ng 29%" in bg and "stop them" in b_do
    assert f_bad and "18.0x" in fs and "SSD" in f_do
    quiet = interference.noise_words({"seconds": 3, "steal": 0.0, "background": 0.01})
    assert [bad for _, _, bad in quiet] == [False, False]


DATA = ROOT / "data" / "campaigns"


def test_the_recorded_disturbed_campaign_names_its_redone_runs_and_agrees_with_the_quiet_one():
    """data/campaigns/quick-disturbed: the main job's campaign with a CPU hog on both cores in the first half of
    round 2 (bench/disturbed_campaign.py). Its three disturbed runs were redone in their round; the attempts are
    kept and named with their evidence; its ratios sit inside the quiet campaign's intervals and vice versa."""
    from benchlib.analysis.campaign import headline_rows
    from benchlib.report import interference_findings

    a = analyze(DATA / "quick-disturbed")
    assert (a.runs.status == "ok").all() and a.runs.lost_cpu.max() < 0.10
    said = " ".join(interference_findings(a, DATA / "quick-disturbed"))
    assert "3 runs were disturbed (over the 10% of the CPU a run may lose to others), left out and redone" in said
    assert "0007-async-oltp_read_write-t2-36f13814-r2 (attempt 1): processes outside the lab took 63% of the CPU, " \
           "mostly python" in said
    quiet = headline_rows(analyze(DATA / "quick").comparisons).set_index(["cluster", "threads"])
    for r in headline_rows(a.comparisons).itertuples():
        q = quiet.loc[(r.cluster, r.threads)]
        assert q.ci_low <= r.ratio <= q.ci_high and r.ci_low <= q.ratio <= r.ci_high, (r, q)


def test_the_recorded_busy_campaign_is_adjusted_and_says_how_much_that_moved_each_ratio():
    """data/campaigns/quick-busy: a light hog (up to 7% of the CPU: under the redo threshold) on a random half of
    the runs. The hog fell on the 2-thread async runs (the baseline) more than on Galera's: the adjustment moves
    galera t2 from 1.21 to 1.16, and the words say it with the unadjusted interval."""
    from benchlib.report import headline, interference_findings

    a = analyze(DATA / "quick-busy")
    c = a.comparisons[a.comparisons.metric == "tps"].set_index(["cluster", "threads"])
    assert (c.adjusted_for == "lost_cpu").all() and (c.covariate_slope < 0).all()
    g = c.loc[("galera", 2)]
    assert g.unadjusted == pytest.approx(1.206, abs=0.005) and g.ratio == pytest.approx(1.159, abs=0.005)
    line = next(x for x in headline(a) if x.startswith("galera") and "at 2 client" in x)
    assert "(adjusted for the CPU lost to others, which moved it -3.9%; unadjusted 1.21, 1.10–1.32)" in line
    said = " ".join(interference_findings(a, DATA / "quick-busy"))
    assert "8 of 8 ratios are adjusted for the CPU lost to others" in said
    plain = analyze(DATA / "quick-busy", adjust=False).comparisons
    assert (plain.adjusted_for == "").all() and plain.ratio[plain.metric == "tps"].round(3).tolist() == \
        c.unadjusted.round(3).tolist()


def test_the_stability_chart_draws_the_cpu_lost_under_the_host_busy_line():
    """The foreign-CPU probe samples a few ms apart from the host probe: its rows are put on the host probe's
    seconds, so the busy line, the disk writes and the dotted share lost to others all have values."""
    from benchlib.analysis import views
    from benchlib.charts.catalogue import figures

    a = analyze(DATA / "quick")
    runs, _ = views.long_runs(a, 30)
    host = views.host_load(a, list(runs.run_id))
    assert len(host) >= 3 * 28 and host.cpu_busy_pct.notna().all() and host.lost_pct.notna().all()
    assert host.disk_write_mib_s.max() > 1 and host.foreign_pct.between(0, 5).all()
    fig = figures(a)["stability"]
    dotted = [t for t in fig.data if t.line and t.line.dash == "dot" and "lost to others" in str(t.name)]
    assert len(dotted) == 3  # one per configuration's long run
