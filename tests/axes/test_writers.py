"""Writes on several nodes (``benchlib.axes.writers``, ``benchlib.sysbench.writers``, ``benchlib.workloads.counted``):
here the split of a load over writer nodes, the clients' lines, the reconciliation with the servers' counters and the
campaign's refusals; on real servers, in the module lab of tests/lab/test_galera.py through ``measured_writers``
(one writer node: no conflict; three on disjoint keys: none; three on the same 10 rows: conflicts on every node, and
the clients' count equal to a server counter on every node)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchlib.axes.writers import WritersVariant
from benchlib.axes.writers.reconcile import reconciled
from benchlib.campaign.spec import load_campaign_spec
from benchlib.errors import SpecError
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.writers import parts, split
from benchlib.workloads.counted import frames, totals
from tests.conftest import EXAMPLES


def test_a_load_is_split_over_its_writer_nodes_with_the_same_total():
    assert split(8, 3) == [3, 3, 2] and split(2, 3) == [1, 1, 0]
    opts = SysbenchOptions(workload="oltp_update_index", threads=7, rate=100, writers=3, disjoint=True)
    each = parts(opts, ["g-1", "g-2", "g-3"])
    assert [p.threads for p in each.values()] == [3, 2, 2] and sum(p.rate for p in each.values()) == 100
    assert [(p.key_part, p.key_parts, p.node, p.writers) for p in each.values()] == [
        (1, 3, "g-1", 1), (2, 3, "g-2", 1), (3, 3, "g-3", 1)]
    argv = each["g-2"].argv("run", *each["g-2"].run_args())
    assert argv[:2] == ["env", "BENCHLIB_INNER=oltp_update_index"] and argv[4].endswith("writers.lua")
    assert {"--key-part=2", "--key-parts=3", "--writer=g-2", "--retry=-1"} <= set(argv)
    shared = parts(SysbenchOptions(workload="oltp_update_index", threads=4, writers=2), ["g-1", "g-2"])
    assert {p.key_parts for p in shared.values()} == {1}
    tpcc = parts(SysbenchOptions(workload="tpcc_like", warehouses=3, threads=3, writers=3, disjoint=True),
                 ["g-1", "g-2", "g-3"])["g-3"]
    assert {"--warehouse-part=3", "--warehouse-parts=3", "--writer=g-3"} <= set(tpcc.run_args())
    assert tpcc.argv("run")[0] != "env"  # the mix counts its own commits and errors by node
    plain = SysbenchOptions(workload="oltp_update_index")
    assert not plain.counted and plain.argv("run")[2] == "oltp_update_index"


def test_the_clients_lines_are_summed_by_node_and_second():
    lines = ["benchlib-writer g-1 100 10 0 1213:2", "benchlib-writer g-1 100 5 1 1213:1 1205:1",
             "benchlib-writer g-2 101 7 0 ", "benchlib-tpcc 100 new_order 1 0 1.0"]
    c = frames(lines, origin=99.0)
    assert c.seconds.to_dict("records") == [
        {"t_s": 1.0, "node": "g-1", "committed": 15, "given_up": 1, "errors": 4},
        {"t_s": 2.0, "node": "g-2", "committed": 7, "given_up": 0, "errors": 0}]
    assert totals(c) == {"g-1": {"committed": 15, "given_up": 1, "errors": 4, "e1205": 1, "e1213": 3},
                         "g-2": {"committed": 7, "given_up": 0, "errors": 0}}


def test_the_server_counters_that_add_up_to_the_clients_errors_are_named():
    server = {"Handler_rollback": 40.0, "wsrep_local_cert_failures": 31.0, "wsrep_local_bf_aborts": 9.0,
              "Com_rollback": 0.0}
    assert reconciled({"errors": 40, "e1213": 40}, server) == ["Handler_rollback",
                                                               "wsrep_local_cert_failures+wsrep_local_bf_aborts"]
    assert reconciled({"errors": 42}, server, slack=2) == ["Handler_rollback",
                                                           "wsrep_local_cert_failures+wsrep_local_bf_aborts"]
    assert reconciled({"errors": 0}, {"Handler_rollback": 0.0, "gr_conflicts_detected": 0.0}) == [
        "Handler_rollback", "gr_conflicts_detected", "gr_conflicts_detected = the group's 3101 errors"]
    # a member whose clients saw no error, beside one whose did (a recorded campaign): its comparisons by number hold
    # too, so that the configuration's words say what held on every node
    assert reconciled({"errors": 0}, {"gr_local_rollback": 0.0, "gr_conflicts_detected": 1.0}, {"e3101": 1}) == [
        "gr_local_rollback", "gr_local_rollback = its clients' 3101 errors",
        "gr_conflicts_detected = the group's 3101 errors"]
    # a multi-primary group member (measured): its local rollbacks are its clients' 3101s, the group's conflicts
    # every member's 3101s; its 1180s and 1213s no group counter counts
    member = {"Handler_rollback": 1881.0, "gr_local_rollback": 922.0, "gr_conflicts_detected": 1537.0}
    # every member's errors, and its Handler_rollback twice each error at commit (3101, 1180) and once each 1213
    assert reconciled({"errors": 945, "e3101": 922, "e1180": 14, "e1213": 9}, member,
                      {"errors": 1590, "e3101": 1537}) == ["gr_local_rollback = its clients' 3101 errors",
                                                           "gr_conflicts_detected = the group's 3101 errors",
                                                           "Handler_rollback = its clients' 3101s and 1180s twice and "
                                                           "1213s once"]
    # a member whose clients saw 3101s only: its local rollbacks equal all of them, and its 3101s alike
    assert reconciled({"errors": 33, "e3101": 33}, {"gr_local_rollback": 33.0, "gr_conflicts_detected": 40.0},
                      {"errors": 40, "e3101": 40}) == [
        "gr_local_rollback", "gr_local_rollback = its clients' 3101 errors",
        "gr_conflicts_detected = the group's 3101 errors"]


def _spec(tmp_path: Path, lab_file: str, clusters: list[str], writers: str) -> Path:
    (tmp_path / "lab.toml").write_text((EXAMPLES / lab_file).read_text())
    spec = tmp_path / "campaign.toml"
    spec.write_text(f'name = "w"\nlab = "lab.toml"\nrepetitions = 1\n[load]\nworkloads = ["oltp_update_index"]\n'
                    f'threads = [6]\ntime_s = 3\n[matrix]\nclusters = {clusters}\n[writers]\n{writers}\n'.replace(
                        "'", '"'))
    return spec


def test_flow_control_and_queues_are_given_per_writer_node_over_the_load_only():
    """Galera's paused time and messages sent, Group Replication's throttled time, and each node's queue, from the
    sampler's rows inside the load window (rows before it do not count)."""
    from types import SimpleNamespace

    import pandas as pd

    from benchlib.axes.writers import queues

    rows = []
    for t in range(0, 13):  # the load runs from 2 s to 12 s
        for node, pause_ms, sent in (("g-1", 0, 0), ("g-2", 200, 1)):  # g-2 paused 0.2 s a second, one message
            rows += [("r1", float(t), node, "wsrep_flow_control_paused_ns", t * pause_ms * 1e6, True, False),
                     ("r1", float(t), node, "wsrep_flow_control_sent", float(t * sent), True, False),
                     ("r1", float(t), node, "wsrep_local_recv_queue", 9.0 if t < 2 else float(t % 3), False, False)]
    cluster = pd.DataFrame(rows, columns=["run_id", "t_s", "node", "metric", "value", "counter", "reset"])
    seconds = pd.DataFrame({"run_id": ["r1", "r1"], "t_s": [3.0, 3.0], "node": ["g-1", "g-2"]})
    a = SimpleNamespace(frames={"cluster": cluster, "writer_seconds": seconds},
                        runs=pd.DataFrame({"run_id": ["r1"], "load_start_s": [2.0], "load_end_s": [12.0]}))
    nodes = queues.per_node(a, pd.DataFrame({"run_id": ["r1"], "cluster": ["g"], "writer_nodes": [2]}))
    got = nodes.set_index("node")
    assert got.paused.round(3).to_dict() == {"g-1": 0.0, "g-2": 0.2} and got.fc_sent.to_dict() == {"g-1": 0, "g-2": 10}
    assert got.throttled.isna().all() and got.queue_max.to_dict() == {"g-1": 2.0, "g-2": 2.0}  # not the 9 before it
    said = queues.queue_words(queues.summary(nodes, ["cluster"]))
    assert said == ("flow control paused them 0%, 20% of the load (g-1, g-2; messages sent 0, 10); their queues held "
                    "a mean 1.0, 1.0 transactions (at most 2)")


def test_a_campaign_plans_one_configuration_per_writer_count_and_keys(tmp_path):
    from benchlib.campaign.plan import plan

    spec, lab = load_campaign_spec(_spec(tmp_path, "galera-3.toml", ["galera"],
                                         'nodes = [1, 3]\nkeys = ["shared", "disjoint"]\nretry = 2'))
    runs = plan(spec, lab)
    got = sorted((r.options.writers, r.options.disjoint, r.options.retry) for r in runs)
    assert got == [(1, False, 2), (3, False, 2), (3, True, 2)]  # one writer node on "disjoint" keys: shared
    assert {r.axes["writers"] for r in runs} == {WritersVariant(1, "shared", 2), WritersVariant(3, "shared", 2),
                                                 WritersVariant(3, "disjoint", 2)}
    assert runs[0].params["writer_nodes"] in (1, 3) and "writer_keys" in runs[0].params


@pytest.mark.parametrize("lab_file,cluster,why", [
    ("async-1p2r.toml", "async", "its topology async has read-only replicas"),
    ("gr-3.toml", "gr", "it is a single-primary group (its secondaries are read-only)"),
])
def test_writes_on_several_nodes_of_a_cluster_that_cannot_take_them_are_refused(tmp_path, lab_file, cluster, why):
    from benchlib.campaign.plan import plan

    spec, lab = load_campaign_spec(_spec(tmp_path, lab_file, [cluster], "nodes = [1, 3]"))
    with pytest.raises(SpecError, match=re.escape(f"[writers] nodes = 3 on cluster {cluster}: {why}")):
        plan(spec, lab)


def test_the_tpcc_like_mix_with_retry_is_refused(tmp_path):
    from benchlib.campaign.plan import plan

    path = _spec(tmp_path, "galera-3.toml", ["galera"], "nodes = [3]\nretry = 2")
    path.write_text(path.read_text().replace("oltp_update_index", "tpcc_like"))
    spec, lab = load_campaign_spec(path)
    with pytest.raises(SpecError, match=re.escape("[writers] retry = 2 with the workload tpcc_like: the TPC-C-like")):
        plan(spec, lab)


def test_an_async_baseline_written_on_its_write_node_alone_sits_beside_three_galera_writers(tmp_path):
    from benchlib.campaign.plan import plan

    spec, lab = load_campaign_spec(_spec(tmp_path, "demo.toml", ["async", "galera"],
                                         'nodes = [1, 3]\nnodes_of = { async = [1] }'))
    got = sorted((r.params["cluster"], r.options.writers) for r in plan(spec, lab))
    assert got == [("async", 1), ("galera", 1), ("galera", 3)]
    for writers, said in [('nodes = [1]\nnodes_of = { nope = [1] }', "[writers] nodes_of names nope, not a cluster"),
                          ('nodes_of = { async = [1, 2] }', "[writers] nodes_of.async = 2 on cluster async: its "
                                                             "topology async has read-only replicas")]:
        spec, lab = load_campaign_spec(_spec(tmp_path, "demo.toml", ["async", "galera"], writers))
        with pytest.raises(SpecError, match=re.escape(said)):
            plan(spec, lab)


OLTP_10_ROWS = ('workloads = ["oltp_update_index"]\nthreads = [6]\ntables = 1\ntable_size = 10\n'
                'distributions = ["uniform"]')


def measured_writers(lab, tmp_path: Path, lab_file: str, cluster: str, time_s: int = 4,
                     writers: str = 'nodes = [1, 3]\nkeys = ["shared", "disjoint"]', rates: str = "",
                     load: str = OLTP_10_ROWS):
    """A campaign on the module lab ``lab`` (up already from ``lab_file``: a file of examples/labs/, or a spec's
    text): oltp_update_index on one table of 10 rows, uniform keys, 6 threads, by default on one writer node, on three
    sharing the rows, and on three each on its own (``writers``: the ``[writers]`` table; ``rates``: an open loop's,
    ``"[600]"``; ``load``: the rest of the ``[load]`` table); the campaign's result, the analysis and each run's
    ``writers`` record by (nodes, keys), with the
    run's sysbench summary as ``summary``."""
    from benchlib.analysis.campaign import analyze
    from benchlib.campaign.runner import run_campaign
    from benchlib.store import read_manifest

    text = (lab_file if "\n" in lab_file else (EXAMPLES / lab_file).read_text()).splitlines()
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "lab.toml").write_text("\n".join(f'name = "{lab.name}"' if line.startswith("name =") else line
                                                  for line in text))
    spec = tmp_path / "campaign.toml"
    spec.write_text(f'name = "w"\nlab = "lab.toml"\nrepetitions = 1\nseed = 4\n[load]\n{load}\ntime_s = {time_s}\n'
                    f'{"rates = " + rates if rates else ""}\n[matrix]\nclusters = ["{cluster}"]\n[writers]\n{writers}\n'
                    '[interference]\nredo_above = 1\n')
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    table = result.table()
    assert set(result.counts) == {"ok"}, "\n".join(f"{r.run_id}: {r.reason}" for r in table.itertuples())
    records = {}
    for r in result.plan:
        m = read_manifest(result.path / r.run_id).as_dict()
        rec = m["axes"]["writers"]
        records[(len(rec["nodes"]), rec["keys"])] = {**rec, "summary": m["summary"]}
    return result, analyze(result.path), records


def test_a_configuration_s_writers_are_named_in_words():
    from benchlib.axes.writers.axis import AXIS

    assert AXIS.setting_words({"writer_nodes": 3, "writer_keys": "disjoint", "retry": 2}) == {
        "writer_nodes": "3 writer nodes", "writer_keys": "each on its own keys", "retry": "given up after 2 retries"}
    assert AXIS.setting_words({"writer_nodes": 1, "writer_keys": "shared", "retry": None}) == {
        "writer_nodes": "1 writer node", "writer_keys": "", "retry": ""}
    assert AXIS.setting_words({"threads": 4}) == {}
