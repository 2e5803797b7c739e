"""A whole recorded campaign analysed: runs, configurations, comparisons, validation, views."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, analyze
from benchlib.store import load_campaign

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"


@pytest.fixture(scope="module")
def topologies():
    return analyze(DATA / "topologies")


@pytest.fixture(scope="module")
def apply():
    return analyze(DATA / "apply")


def test_every_run_gets_the_per_run_numbers(topologies):
    runs = topologies.runs
    assert (runs.status == "ok").all() and len(runs) == 54
    for col in ("trim_s", "tps_mean", "tps_se", "n_eff", "tps_cov", "stability", "lat_pctl_ms", "catch_up_s"):
        assert runs[col].notna().all(), col
    replicated = runs[runs.topology != "galera"]  # audit B10: the lag test's interval and its Mann-Kendall check
    for col in ("lag_slope_low", "lag_slope_high", "lag_start_median_ms", "lag_end_median_ms"):
        assert replicated[col].notna().all(), col
    assert (replicated.lag_slope_low <= replicated.lag_slope_ms_per_s).all()
    assert (runs.tps_se > 0).all() and (runs.n_eff <= runs.seconds).all()


def test_configurations_and_comparisons_against_async(topologies):
    c = topologies.configs
    assert len(c) == 3 * 2 * 3 and (c.runs == 3).all()
    assert set(c.verdict) <= {"AGREE", "ADD_RUNS", "UNRESOLVED"}
    cmp = topologies.comparisons
    assert set(cmp.cluster) == {"semisync", "galera"} and set(cmp.metric) == {"tps", "lat_pctl_ms"}
    assert len(cmp) == 2 * 2 * 3 * 2  # clusters x durability x threads x metric
    assert cmp.q.notna().all() and (cmp.q >= cmp.p - 1e-12).all()  # BH never lowers a p-value
    assert (cmp.ci_low <= cmp.ratio).all() and (cmp.ratio <= cmp.ci_high).all()
    assert cmp.notes.str.contains("rank test").all()  # three runs per side: said plainly


def test_validation_lists_failed_runs_as_errors_first(topologies):
    frames = load_campaign(DATA / "topologies")
    runs = frames["runs"].copy()
    runs.loc[0, ["status", "reason"]] = ["failed", "FAILED: async-2 went down during the run"]
    a = analyze({**frames, "runs": runs})
    assert a.problems.iloc[0].severity == "error" and "went down" in a.problems.iloc[0].what
    assert len(a.errors) == 1
    assert not len(topologies.errors)
    assert (topologies.problems.severity == "warning").any()  # 2 repetitions: more runs asked for


def test_views_feed_the_charts(topologies, apply):
    r = views.ratios(topologies)
    # one bar per configuration: the thread counts swept are in the label, so no two bars sit on each other
    assert set(r.label) == {f"{t} · t{n}" for t in ("semisync (2 nodes)", "galera (3 nodes)") for n in (1, 8, 32)}
    assert not r.duplicated(["label", "durability"]).any()
    iv, trim, labels = views.stability(topologies)
    assert set(iv.run_id) == set(trim) == set(labels) and 1 <= len(trim) <= 6
    by_config = views.stability_by_config(apply)  # repetitions averaged: every run of each configuration
    assert set(by_config["runs"].values()) == {2} and set(by_config["intervals"].config) == set(by_config["trim"])
    assert "galera t16 fc_limit=16" in by_config["labels"] and any("×2" in v for v in by_config["labels"].values())
    assert by_config["topology"]["galera t16 fc_limit=16"] == "galera"
    cu = views.catch_up(topologies)  # a bar per configuration, never two configurations' runs pooled in one
    assert len(cu) == 18 and not cu.label.duplicated().any() and set(cu.runs) == {3}
    assert "galera durability=relaxed t32" in set(cu.label)
    fc = views.flow_control(apply)
    assert list(fc.fc_limit) == [16, 256, 4096] and set(fc.variant) == {""}  # nothing else swept: one line
    par = views.parallel_apply(apply)
    assert list(par.parallel_threads) == [0, 4] and par.replica_cpu_pct.notna().all()
    lag, end, catch = views.lag_of_run(apply, views.worst_lag_run(apply))
    assert end and end > 25 and catch is not None and lag.t_s.min() > -1
    with pytest.raises(AnalysisError, match="no flow-control sweep"):
        views.flow_control(topologies)


def test_every_setting_a_campaign_sweeps_gets_its_own_ratio_bar(topologies):
    # a setting of one system only (Group Replication's flow-control threshold) is a configuration like any other:
    # its two values are two bars, never two ratios drawn on one (study 000 drew them so before)
    c = topologies.comparisons
    swept = pd.concat([c.assign(gr_applier_threshold=1000.0), c.assign(gr_applier_threshold=25000.0)],
                      ignore_index=True)
    a = dataclasses.replace(topologies, comparisons=swept,
                            param_columns=[*topologies.param_columns, "gr_applier_threshold"])
    r = views.ratios(a)
    assert not r.duplicated(["label", "durability"]).any() and len(r) == 2 * len(views.ratios(topologies))
    assert "galera (3 nodes) · t8 gr_applier_threshold=25000" in set(r.label)


def test_wan_rtt_comes_from_the_lab_spec():
    w = views.wan(analyze(DATA / "wan"))
    rtt = dict(zip(w.cluster, w.rtt_ms))
    assert rtt == {"local": 0.0, "semi": 20.0, "galera": 20.0}


def test_comparisons_use_the_campaign_blocks(topologies):
    """Rounds x 18 configurations: the two-way model pools the noise (df 34, the audit's 7.6% residual SD),
    finds the round effect, and gives intervals narrower than Fieller's, never reaching zero."""
    c = topologies.comparisons
    assert set(c.method) == {"blocks"}
    assert set(c[c.metric == "tps"].df) == {34}
    tps = c[c.metric == "tps"]
    assert tps.sigma_log.iloc[0] == pytest.approx(0.076, abs=0.002) and tps.round_p.iloc[0] < 0.01
    assert (c.ci_low > 0).all()
    width = (tps.ci_high - tps.ci_low) / tps.ratio
    fieller = (tps.fieller_high - tps.fieller_low) / tps.fieller_ratio
    assert (width < fieller).mean() >= 0.9 and width.median() < 0.7 * fieller.median()


@pytest.mark.long
def test_the_margin_comes_from_the_campaign_spec(tmp_path):
    import json
    import shutil

    folder = tmp_path / "wide"
    shutil.copytree(DATA / "topologies", folder)
    meta = json.loads((folder / "campaign.json").read_text())
    meta["campaign"]["margin"] = 0.10
    (folder / "campaign.json").write_text(json.dumps(meta))
    assert set(analyze(folder).comparisons.margin) == {0.10}
    assert set(analyze(folder, margin=0.05).comparisons.margin) == {0.05}


@pytest.mark.long
def test_sysbench_unreported_tail_is_measured_and_flagged():
    """Transactions in sysbench's summary but in no per-second line: about 0.2% in the recorded runs; a run whose
    last report line is missing (here removed from a real run) is flagged."""
    frames = load_campaign(DATA / "topologies")
    a = analyze(frames)
    assert a.runs.unreported_frac.between(0, 0.01).all()
    iv = frames["intervals"]
    victim = str(iv.run_id.iloc[0])
    last = iv[iv.run_id.astype(str) == victim].t_s.idxmax()
    frames = {**frames, "intervals": iv.drop(index=last)}
    b = analyze(frames)
    assert b.runs.set_index("run_id").unreported_frac[victim] > 0.05
    assert b.problems[b.problems["where"] == victim].what.str.contains("per-second lines").any()


def test_wide_configuration_intervals_are_information_once_every_ratio_is_settled(topologies):
    """A configuration's own throughput interval wider than the target is a note where ratios against the baseline
    judge the campaign; repetitions that disagree (an outlier run) stay a warning until every ratio is settled."""
    configs = topologies.problems[topologies.problems.kind == "repetitions"]
    outlier = configs.what.str.contains("outlier")
    assert outlier.any() and (~outlier).any()
    assert (configs[outlier].severity == "warning").all() and (configs[~outlier].severity == "info").all()
    assert "(galera durability=durable t8)" in " ".join(configs["where"])
    settled = analyze(DATA / "topologies", margin=0.95)  # every ratio within 1 +- 95%: EQUIVALENT
    assert not (settled.comparisons.verdict == "INCONCLUSIVE").any()
    configs = settled.problems[settled.problems.kind == "repetitions"]
    assert len(configs) and (configs.severity == "info").all()


def test_a_condition_of_every_run_is_said_once_per_configuration_and_errors_as_a_rate(topologies):
    """sysbench's retried transactions once per configuration as a rate per 1,000, a note while in line; a warning
    above ERRORS_WARN_PER_1000 or out of line with the other configurations."""

    from benchlib.analysis.validate import ERRORS_WARN_PER_1000, validate

    errors = topologies.problems[topologies.problems.kind == "errors"]
    assert len(errors) and (errors.severity == "info").all()
    assert errors["where"].str.startswith("config ").all() and errors.what.str.contains("per 1,000 committed").all()
    assert errors["where"].is_unique  # once per configuration, not once per run
    table = topologies.runs.copy()
    hot = table.config == table.config.iloc[0]
    table.loc[hot, "summary_ignored_errors"] = (table.loc[hot, "summary_transactions"] * 2 * ERRORS_WARN_PER_1000 // 1000)
    p = validate(table, topologies.configs, topologies.param_columns, topologies.comparisons)
    warned = p[(p.kind == "errors") & (p.severity == "warning")]
    assert len(warned) == 1 and f"({table.config.iloc[0]} " in warned["where"].iloc[0].replace("config ", "(")
    # a condition on every run of a configuration: one row for it
    table = topologies.runs.copy()
    table["in_sync_wait_s"] = 9.0
    p = validate(table, topologies.configs, topologies.param_columns, topologies.comparisons)
    waits = p[p.kind == "in_sync"]
    assert len(waits) == table.config.nunique() and waits.what.str.startswith("every run (3)").all()


@pytest.fixture(scope="module")
def consistency():
    return analyze(DATA / "consistency")


@pytest.mark.long
def test_each_read_consistency_is_costed_against_its_clusters_weakest_setting(consistency):
    """The writer under each setting against its own cluster's default, the load otherwise the same: a row per
    cluster, stronger setting, write rate and metric; the weakest setting never against itself."""
    c = consistency.axis("probe").consistency_costs
    runs = consistency.runs
    weakest = runs.drop_duplicates("cluster").set_index("cluster").default_consistency
    assert set(c.cluster) == {"async", "galera", "gr"}
    assert (c.weakest == c.cluster.map(weakest)).all() and not (c.setting == c.weakest).any()
    stronger = runs[runs.read_consistency != runs.default_consistency]
    assert len(c) == 2 * len(stronger.drop_duplicates(["cluster", "read_consistency", "rate"]))  # tps and latency
    assert set(c.metric) == {"tps", "lat_pctl_ms"} and c.q.notna().all()
    assert (c.ci_low <= c.ratio).all() and (c.ratio <= c.ci_high).all()
    assert (c.method == "blocks").all()  # two rounds: the two-way model over the cluster's own runs
    # GR's AFTER applies to the load: its writer is matched with EVENTUAL's (which ran gr_consistency EVENTUAL)
    after = c[(c.cluster == "gr") & (c.setting == "AFTER") & (c.metric == "tps")]
    assert len(after) == 2 and (after.n_baseline == 2).all()


def test_the_baseline_of_a_probe_campaign_is_matched_on_read_consistency(consistency):
    """Against async, each configuration's baseline runs are the async runs under its own read consistency when
    async has it (causal with causal), else async's default: never eventual and causal pooled."""
    cmp = consistency.comparisons
    assert not cmp.empty and (cmp.n_baseline == 2).all()


def test_stale_reads_in_words_say_the_fraction_the_cost_and_the_read_slowdown(consistency):
    s = consistency.axis("probe").stale_reads
    said = consistency.axis("probe").consistency_findings
    assert len(said) == len(s) and set(s.rate) == {100, 300}
    before = next(x for x in said if x.startswith("gr BEFORE rate 300"))
    assert "against EVENTUAL, the writer's throughput" in before and "× EVENTUAL's" in before
    eventual = next(x for x in said if x.startswith("gr EVENTUAL rate 300"))
    assert "against" not in eventual  # the weakest setting is what the others are against


@pytest.fixture(scope="module")
def read_split():
    return analyze(DATA / "read-split")


def test_a_read_split_load_costs_the_readers_per_setting_and_against_async(read_split):
    """The recorded read-split campaign (examples/campaigns/read-split.toml): per run the readers' throughput and
    latency; per setting their ratios against the cluster's weakest, beside the writer's; against async the
    readers' throughput, said in the findings."""
    from benchlib.report import headline

    a = read_split
    ok = a.runs[a.runs.status == "ok"]
    assert (ok.read_tps > 0).all() and (ok.read_lat_ms > 0).all() and (ok.read_threads == 2).all()
    costs = a.axis("probe").consistency_costs
    for cluster, setting in (("galera", "wsrep_sync_wait=1"), ("gr", "BEFORE")):
        mine = costs[(costs.cluster == cluster) & (costs.setting == setting)]
        assert set(mine.metric) == {"tps", "lat_pctl_ms", "read_tps", "read_lat_ms"}, mine
    assert {"read_tps", "read_lat_ms"} <= set(a.comparisons.metric)
    words = " ".join(a.axis("probe").consistency_findings)
    assert "the read split's readers' throughput" in words and "the writer's throughput" in words
    said = [h for h in headline(a) if "on the nodes besides the write node (read split)" in h]
    assert len(said) == len(a.comparisons[a.comparisons.metric == "read_tps"]) >= 2 and all("95% interval" in h
                                                                                                for h in said)
