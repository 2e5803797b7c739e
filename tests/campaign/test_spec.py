"""Campaign specs expand to an interleaved, seeded, resumable run plan."""

from __future__ import annotations

from collections import Counter

import pytest

from benchlib.campaign.plan import plan
from benchlib.campaign.spec import CampaignSpec, load_campaign_spec
from benchlib.errors import SpecError, SettingError
from benchlib.lab.spec import load_spec
from tests.conftest import EXAMPLES, ROOT

DEMO = load_spec(EXAMPLES / "demo.toml")


def spec(**kw):
    base = {"name": "t", "lab": "../labs/demo.toml", "seed": 7, "repetitions": 3,
            "load": {"threads": [1, 8], "time_s": 5}}
    base.update(kw)
    return CampaignSpec.model_validate(base)


def test_settings_apply_only_to_topologies_that_have_them():
    runs = plan(spec(matrix={"clusters": ["async", "galera"], "fc_limit": [16, 256], "parallel_threads": [0, 4]}), DEMO)
    by = Counter((r.cluster, tuple(sorted(r.settings.items()))) for r in runs)
    assert by[("galera", (("fc_limit", 16),))] == 2 * 3  # 2 thread counts x 3 repetitions
    assert by[("async", (("parallel_threads", 4),))] == 2 * 3
    assert not any("fc_limit" in r.settings for r in runs if r.cluster == "async")
    assert len(runs) == (2 + 2) * 2 * 3


def test_order_is_seeded_and_repetitions_are_spread():
    a = plan(spec(matrix={"durability": ["durable", "relaxed"]}), DEMO)
    b = plan(spec(matrix={"durability": ["durable", "relaxed"]}), DEMO)
    assert [r.run_id for r in a] == [r.run_id for r in b]  # stable ids: a rerun can skip what it has
    assert len({r.run_id for r in a}) == len(a)
    assert all(x.config_key != y.config_key for x, y in zip(a, a[1:]))  # never twice in a row
    for rep in (1, 2, 3):  # each round holds every configuration once
        assert Counter(r.config_key for r in a if r.repetition == rep) == Counter(r.config_key for r in a if r.repetition == 1)
    c = plan(spec(seed=8, matrix={"durability": ["durable", "relaxed"]}), DEMO)
    assert [r.config_key for r in c] != [r.config_key for r in a]


def test_params_carry_what_analysis_joins_on():
    r = plan(spec(matrix={"clusters": ["galera"], "fc_limit": [64]}), DEMO)[0]
    assert r.params == {"cluster": "galera", "topology": "galera", "workload": "oltp_read_write",
                        "threads": r.options.threads, "rate": None, "repetition": 1, "config": r.config_key,
                        "fc_limit": 64}


def test_open_loop_rates_multiply_the_matrix():
    runs = plan(spec(load={"threads": [4], "rates": [100, 200], "time_s": 5}, repetitions=1), DEMO)
    assert sorted({r.options.rate for r in runs}) == [100, 200] and len(runs) == 3 * 2  # clusters x rates


def test_key_distributions_multiply_the_matrix_and_a_campaign_that_chose_none_plans_as_before():
    before = plan(spec(repetitions=1), DEMO)
    assert all(r.options.distribution is None and "distribution" not in r.params for r in before)
    runs = plan(spec(load={"threads": [4], "time_s": 5, "distributions": ["uniform", "Special:1:75"]},
                     repetitions=1), DEMO)
    assert sorted({r.options.distribution for r in runs}) == ["special:1:75", "uniform"] and len(runs) == 3 * 2
    assert {r.params["distribution"] for r in runs} == {"special:1:75", "uniform"}
    assert len({r.config_key for r in runs}) == 6  # each distribution its own configuration
    # listing none keeps the run ids a campaign planned before the option existed (its recorded runs still match)
    again = plan(spec(load={"threads": [1, 8], "time_s": 5}, repetitions=1), DEMO)
    assert [r.run_id for r in again] == [r.run_id for r in before]


def test_data_sized_against_the_buffer_pool_multiplies_the_matrix_and_sets_the_rows_or_the_warehouses():
    """The demo lab's 128 MB buffer pool: oltp_* on 4 tables of 240 bytes a row, TPC-C-like 85 MB a warehouse."""
    runs = plan(spec(load={"threads": [4], "time_s": 5, "data_vs_buffer_pool": [0.2, 5],
                           "workloads": ["oltp_read_write", "tpcc_like"]}, repetitions=1,
                     matrix={"clusters": ["async"]}), DEMO)
    got = {(r.options.workload, r.params["data_vs_buffer_pool"]): r.options for r in runs}
    assert len(runs) == 4 and len({r.config_key for r in runs}) == 4
    assert got[("oltp_read_write", 0.2)].table_size == round(0.2 * (128 << 20) / (4 * 240)) == 27962
    assert got[("oltp_read_write", 5)].table_size == 699051
    assert got[("tpcc_like", 0.2)].warehouses == 1 and got[("tpcc_like", 5)].warehouses == 8
    assert got[("tpcc_like", 5)].dataset_key == "tpcc:8x1" and got[("tpcc_like", 5)].data_vs_buffer_pool == 5
    with pytest.raises(SpecError, match="insert_batch starts from empty tables"):
        plan(spec(load={"threads": [4], "workloads": ["insert_batch"], "data_vs_buffer_pool": [2]}), DEMO)
    with pytest.raises(Exception, match="listed once"):
        spec(load={"threads": [4], "data_vs_buffer_pool": [2, 2]})


@pytest.mark.parametrize("load, match", [({"distributions": ["zipf"]}, "unknown key distribution"),
                                         ({"distributions": ["uniform", "uniform"]}, "listed twice"),
                                         ({"distributions": ["special:1"]}, "two percentages")])
def test_a_wrong_key_distribution_is_refused_when_the_spec_is_read(load, match):
    with pytest.raises(Exception, match=match):
        spec(load={"threads": [1], **load})


@pytest.mark.parametrize("matrix, error, match", [
    ({"clusters": ["nope"]}, SpecError, "not clusters of lab demo"),
    ({"clusters": ["async"], "fc_limit": [16]}, SpecError, "apply to none of the clusters"),
    ({"fc_limit": ["lots"]}, SettingError, "expects an integer"),
])
def test_bad_matrices(matrix, error, match):
    with pytest.raises(error, match=match):
        plan(spec(matrix=matrix), DEMO)


def test_quick_example_loads_and_plans():
    cspec, lab = load_campaign_spec(ROOT / "examples" / "campaigns" / "quick.toml")
    runs = plan(cspec, lab)
    assert lab.name == "demo" and len(runs) == 3 * 2 * 3  # clusters x threads x repetitions
    assert "three rounds first" in (ROOT / "examples" / "campaigns" / "quick.toml").read_text().lower()
    assert cspec.adaptive and cspec.settle_within == 0.10 and cspec.budget_s == 270 and cspec.load.time_s == 3


def test_stability_s_lengthens_the_last_rounds_runs_at_the_largest_thread_count():
    runs = plan(spec(load={"threads": [1, 8], "time_s": 5, "stability_s": 40}), DEMO)
    long = [r for r in runs if r.options.time_s == 40]
    assert {(r.repetition, r.options.threads) for r in long} == {(3, 8)}
    assert sorted(r.cluster for r in long) == sorted(DEMO.clusters)  # one per configuration at 8 threads
    assert all(r.options.time_s == 5 for r in runs if r not in long)
    assert {r.config_key for r in long} <= {r.config_key for r in runs if r.repetition == 1}  # the same configurations
    again = long[0].again(99, 4)  # an adaptive round after it: the usual length
    assert again.options.time_s == 5 and again.repetition == 4


@pytest.mark.parametrize("load, extra, words", [
    ({"time_s": 30, "stability_s": 30}, {}, "not longer than load.time_s"),
    ({"time_s": 5, "stability_s": 30, "rates": [100]}, {}, "load.rates"),
])
def test_stability_s_is_refused_where_it_means_nothing(load, extra, words):
    with pytest.raises(SpecError, match=words):
        plan(spec(load={"threads": [4], **load}, **extra), DEMO)


@pytest.mark.parametrize("name, runs", [("consistency.toml", 84), ("read-split.toml", 15), ("resources.toml", None),
                                        ("isolation.toml", 24), ("isolation-multi.toml", 10),
                                        ("isolation-faults.toml", 6), ("isolation-grmulti.toml", 3)])
def test_every_example_campaign_loads_and_plans_what_its_comment_says(name, runs):
    cspec, lab = load_campaign_spec(ROOT / "examples" / "campaigns" / name)
    planned = plan(cspec, lab)
    assert runs is None or len(planned) == runs
    assert f"{len(planned)} runs" in (ROOT / "examples" / "campaigns" / name).read_text() or runs is None


def test_bad_campaign_spec_names_the_field(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text('name = "x"\nlab = "l.toml"\n[load]\nworkloads = ["oltp_magic"]\nthreads = [0]\n')
    with pytest.raises(SpecError) as info:
        load_campaign_spec(bad)
    text = info.value.render()
    assert "load.workloads" in text and "unknown workloads ['oltp_magic']" in text and "load.threads" in text


def test_read_consistency_is_an_axis_of_the_systems_that_have_it():
    probe = {"consistency": ["eventual", "causal", "wsrep_sync_wait=0", "wsrep_sync_wait=1"], "read_rate": 50}
    runs = plan(spec(repetitions=1, probe=probe), DEMO)
    by = Counter((r.cluster, r.params["consistency"]) for r in runs)
    assert by == {(c, s): 2 for c in ("async", "semisync") for s in ("eventual", "causal")} | {
        ("galera", s): 2 for s in ("wsrep_sync_wait=0", "wsrep_sync_wait=1")}
    assert all(r.probe.read_rate == 50 and r.probe.write_rate == 10 for r in runs)
    assert len({r.config_key for r in runs}) == len(runs)  # the setting is part of the configuration
    assert all(not r.settings for r in runs)  # nothing for the load on these systems


def test_group_replication_levels_that_make_writers_pay_apply_to_the_load():
    gr = load_spec(EXAMPLES / "gr-3.toml")
    runs = plan(spec(repetitions=1, lab="../labs/gr-3.toml", load={"threads": [4]},
                     probe={"consistency": ["EVENTUAL", "BEFORE", "AFTER"]}), gr)
    assert {r.params["consistency"]: r.settings["gr_consistency"] for r in runs} == {
        "EVENTUAL": "EVENTUAL", "BEFORE": "EVENTUAL", "AFTER": "AFTER"}
    with pytest.raises(SpecError, match="the matrix sweeps it too"):
        plan(spec(lab="../labs/gr-3.toml", matrix={"gr_consistency": ["AFTER"]}, probe={"consistency": ["AFTER"]}), gr)


def test_a_read_consistency_no_cluster_has_is_refused_saying_what_each_supports():
    with pytest.raises(SpecError) as err:
        plan(spec(probe={"consistency": ["BEFORE"]}), DEMO)
    text = err.value.render()
    assert "probe.consistency 'BEFORE' is a read consistency of none of the clusters" in text
    assert "mariadb: eventual, causal" in text and "galera: wsrep_sync_wait=0 to wsrep_sync_wait=15" in text


def test_without_a_probe_runs_have_no_consistency():
    assert all(r.probe is None and "consistency" not in r.params for r in plan(spec(), DEMO))


def test_the_semisync_wait_point_is_swept_where_semisync_is_on():
    runs = plan(spec(repetitions=1, load={"threads": [4]}, matrix={"semisync_wait_point": ["AFTER_SYNC", "AFTER_COMMIT"]}),
                DEMO)
    by = Counter((r.cluster, r.settings.get("semisync_wait_point")) for r in runs)
    assert by == {("semisync", "AFTER_SYNC"): 1, ("semisync", "AFTER_COMMIT"): 1, ("async", None): 1,
                  ("galera", None): 1}  # async replicas have semi-sync off: the wait point would only repeat runs
    both = plan(spec(repetitions=1, load={"threads": [4]}, matrix={
        "clusters": ["async"], "semisync": [False, True], "semisync_wait_point": ["AFTER_SYNC", "AFTER_COMMIT"]}), DEMO)
    assert sorted((r.settings["semisync"], r.settings.get("semisync_wait_point", "")) for r in both) == [
        (False, ""), (True, "AFTER_COMMIT"), (True, "AFTER_SYNC")]  # switched off: one run, not one per wait point
    with pytest.raises(SpecError, match="apply to none of the clusters"):
        plan(spec(matrix={"clusters": ["async"], "semisync_wait_point": ["AFTER_SYNC"]}), DEMO)


def test_a_read_split_load_reads_on_the_other_nodes_of_oltp_tables():
    runs = plan(spec(repetitions=1, load={"threads": [4], "read_threads": 2, "workloads": ["oltp_write_only"]}), DEMO)
    assert all(r.axes["read_split"].threads == 2 and r.params["read_threads"] == 2 for r in runs)
    assert {r.config_key for r in runs}.isdisjoint(r.config_key for r in plan(spec(repetitions=1, load={
        "threads": [4], "workloads": ["oltp_write_only"]}), DEMO))  # a read split is another configuration
    single = load_spec(EXAMPLES / "single.toml")
    with pytest.raises(SpecError, match="has one node"):
        plan(spec(lab="../labs/single.toml", load={"read_threads": 2}), single)
    with pytest.raises(SpecError, match="workload insert_single writes others"):
        plan(spec(load={"read_threads": 2, "workloads": ["insert_single"]}), DEMO)


# -- [fault] -----------------------------------------------------------------------------------------------------
CONSISTENCY = load_spec(EXAMPLES / "consistency.toml")


def fault_spec(fault, **kw):
    return spec(repetitions=2, load={"workloads": ["oltp_write_only"], "threads": [4], "time_s": 30},
                fault=fault, **kw)


def test_the_fault_is_an_axis_and_promotion_goes_where_the_system_has_no_failover_of_its_own():
    runs = plan(fault_spec({"kind": ["kill", "freeze"], "failover": "promote"},
                           matrix={"clusters": ["semisync", "gr", "galera"]}), CONSISTENCY)
    assert len(runs) == 3 * 2 * 2
    by = {(r.cluster, r.axes["fault"].kind): r.axes["fault"] for r in runs}
    assert by[("semisync", "kill")].promote and not by[("gr", "kill")].promote and not by[("galera", "freeze")].promote
    assert runs[0].params["fault"] in ("kill write_node", "freeze write_node")


def test_a_fault_moment_drawn_from_a_range_is_seeded_per_run_and_recorded():
    """at_s = [from, to]: each run's moment is drawn uniformly within it, from the campaign's seed and the run (a
    rerun draws the same; another seed others); the configuration is the range, the run's manifest its moment."""
    runs = plan(fault_spec({"kind": "power_cut", "at_s": [3, 6]}, matrix={"clusters": ["galera"]}), CONSISTENCY)
    drawn = [r.axes["fault"].drawn(r.run_id) for r in runs]
    assert all(3 <= d.at_s <= 6 for d in drawn) and len({d.at_s for d in drawn}) == len(drawn)
    # the same seed, the same moments; one configuration
    assert [d.at_s for d in drawn] == [r.axes["fault"].drawn(r.run_id).at_s for r in runs]
    assert runs[0].axes["fault"].identity() == runs[1].axes["fault"].identity() == drawn[0].identity()
    assert drawn[0].as_dict()["at_s"] == drawn[0].at_s and drawn[0].as_dict()["at_range"] == [3, 6]
    other = plan(fault_spec({"kind": "power_cut", "at_s": [3, 6]}, matrix={"clusters": ["galera"]}, seed=2),
                 CONSISTENCY)
    assert [r.axes["fault"].drawn(r.run_id).at_s for r in other] != [d.at_s for d in drawn]
    fixed = plan(fault_spec({"kind": "kill"}), CONSISTENCY)[0].axes["fault"]
    assert fixed.drawn("x") is fixed and "at_range" not in fixed.as_dict()  # a fixed moment: as before


@pytest.mark.parametrize("fault, kw, words", [
    ({"at_s": [5, 40]}, {}, "range ends at 40"),
    ({"at_s": [6, 3]}, {}, "0 < from < to"),
    ({"failover": {"galera": "promote"}}, {"matrix": {"clusters": ["galera"]}}, "galera fails over by itself"),
    ({"kind": "cut"}, {}, "this lab has no [sites]"),
    ({"at_s": 40}, {}, "not within the load"),
    ({"target": "site:far", "kind": "kill"}, {}, "a site is a target of a cut only"),
    ({"target": "elsewhere"}, {}, "unknown fault targets"),
    ({"relay_logs": "discard"}, {}, "no cluster is promoted"),
    ({"relay_logs": ["apply", "discard"], "failover": "promote"}, {"matrix": {"clusters": ["semisync"]}},
     "a replica that applied more than the promoted one could not follow it"),
    ({"kind": "switchover"}, {"matrix": {"clusters": ["galera"]}}, "galera cluster galera has none to move"),
    ({"proxy": "router"}, {"matrix": {"clusters": ["gr"]}}, "MySQL Router fronts a Group Replication group whose lab "
                                                            "spec puts it there"),
])
def test_a_fault_the_lab_cannot_inject_is_refused_when_the_spec_is_loaded(fault, kw, words):
    with pytest.raises(Exception) as err:  # SpecError, or the spec's own validation
        plan(fault_spec(fault, **kw), CONSISTENCY)
    assert words in str(err.value) + str(getattr(err.value, "detail", ""))


def test_a_multi_primary_group_takes_a_kill_and_refuses_a_switchover():
    """Every member of a multi-primary group is a primary: a member killed is a fault it takes (the load moves to a
    survivor), a switchover has no primary role to move."""
    multi = load_spec(EXAMPLES / "gr-3-multi.toml")
    runs = plan(fault_spec({"kind": "kill"}, matrix={"clusters": ["gr"]}), multi)
    faults = [r.axes["fault"] for r in runs]
    assert {(f.kind, f.target, f.promote) for f in faults} == {("kill", "write_node", False)}
    with pytest.raises(SpecError, match="a switchover moves the primary role to another node: group_replication "
                                        "cluster gr has none to move"):
        plan(fault_spec({"kind": "switchover"}, matrix={"clusters": ["gr"]}), multi)


def test_what_a_promotion_does_with_relay_logs_is_an_axis_of_the_promoted_clusters_only():
    """relay_logs = ["apply", "discard"]: two configurations where the lab promotes (a 1+1 semi-sync cluster), one
    where the system fails over by itself; a replica's fault promotes nothing, so it runs once."""
    semi = {"topology": "semisync", "replicas": 1}
    lab = load_spec(EXAMPLES / "consistency.toml").model_copy(deep=True)
    lab = type(lab).model_validate({**lab.model_dump(), "clusters": {**lab.model_dump()["clusters"], "semisync": semi}})
    runs = plan(fault_spec({"relay_logs": ["apply", "discard"], "failover": "promote",
                            "target": ["write_node", "replica"]},
                           matrix={"clusters": ["semisync", "gr"]}), lab)
    semi_runs = {(r.axes["fault"].target, r.axes["fault"].relay_logs) for r in runs if r.cluster == "semisync"}
    assert semi_runs == {("write_node", "apply"), ("write_node", "discard"), ("replica", "apply")}
    assert {r.axes["fault"].relay_logs for r in runs if r.cluster == "gr"} == {"apply"}
    discarding = next(r for r in runs if r.axes["fault"].discards)
    assert discarding.params["failover"] == "promote, relay logs discarded"
    assert discarding.params["fault"] == "kill write_node, relay logs discarded"
    assert "relay_logs" not in next(r for r in runs if r.cluster == "gr").axes["fault"].as_dict()  # old keys unchanged


def test_a_fault_on_a_remote_lab_is_refused():
    from benchlib.remote.spec import RemoteLabSpec

    remote = RemoteLabSpec.model_validate({"kind": "remote", "name": "r", "credentials": {
        "user": "bench", "password_env": "P"}, "clusters": {"c": {"system": "mariadb", "nodes": [
            {"name": "a", "host": "h1", "role": "primary"}, {"name": "b", "host": "h2", "role": "replica"}]}}})
    with pytest.raises(SpecError, match="remote lab's servers are not benchlib's"):
        plan(fault_spec({}), remote)


def test_a_power_cut_kills_every_node_and_promotes_nothing():
    """kind = "power_cut": one step, a kill of every node of the cluster; a cluster the lab would promote is not
    (no replica survives), and asking for its promotion by name is refused."""
    runs = plan(fault_spec({"kind": "power_cut", "failover": "promote", "relay_logs": ["apply", "discard"]},
                           matrix={"clusters": ["semisync", "galera"]}), CONSISTENCY)
    assert sorted({r.cluster: r.axes["fault"].as_dict()["kind"] for r in runs}.items()) == [("galera", "power_cut"), (
        "semisync", "power_cut")] and len(runs) == 2 * 2  # two repetitions, no discard twin: nothing is promoted
    for r in runs:
        assert not r.axes["fault"].promote and [s.as_dict() for s in r.axes["fault"].steps] == [
            {"at_s": 0.0, "do": "kill", "target": "all_nodes"}]
        assert r.params["fault"] == "power_cut"
    with pytest.raises(Exception, match="kills every node: there is no replica to promote"):
        plan(fault_spec({"kind": "power_cut", "failover": {"semisync": "promote"}},
                        matrix={"clusters": ["semisync"]}), CONSISTENCY)


def test_a_switchover_has_the_idle_transaction_as_its_axis_and_promotes_by_its_own_steps():
    runs = plan(fault_spec({"kind": ["switchover", "kill"], "open_transaction": [False, True], "failover": "promote"},
                           matrix={"clusters": ["semisync", "gr"]}), CONSISTENCY)
    labels = sorted({(r.cluster, r.params["fault"]) for r in runs})
    assert labels == [("gr", "kill write_node"), ("gr", "switchover"), ("gr", "switchover, an idle transaction open"),
                      ("semisync", "kill write_node"), ("semisync", "switchover"),
                      ("semisync", "switchover, an idle transaction open")], labels
    sw = [r for r in runs if r.axes["fault"].kind == "switchover"]
    assert not any(r.axes["fault"].promote for r in sw) and all(r.axes["fault"].steps[0].do == "switchover" for r in sw)
    assert "open_transaction" not in next(r for r in runs if r.axes["fault"].kind == "kill").axes["fault"].as_dict()


def test_reads_through_router_go_where_a_group_has_one_and_are_refused_where_none_has():
    with pytest.raises(SpecError, match="probe.router reads through MySQL Router, and no cluster"):
        plan(spec(probe={"router": True}), DEMO)
    lab = load_spec(EXAMPLES / "gr-router.toml")
    runs = plan(spec(repetitions=1, lab="../labs/gr-router.toml", load={"threads": [4]},
                     probe={"consistency": ["BEFORE"], "router": True}), lab)
    assert runs and all(r.probe.router for r in runs)
