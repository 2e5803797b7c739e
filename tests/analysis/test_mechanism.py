"""Why a ratio is what it is (``benchlib.analysis.mechanism``, ``why``, ``likeness``): on the campaigns recorded on a
2-core VM, and against known truth on real servers: a semi-sync replica behind a link of a known round trip (the
acknowledgement wait is about one round trip and accounts for most of the latency semi-sync adds), one server with
its binary log and one without (2 fsyncs a commit against 1, and a comparison of the two called confounded by the
binary log), and a Galera cluster held back by flow control, one of its nodes starved of CPU (named as such)."""

from __future__ import annotations

import math

import pytest

from benchlib.analysis import mechanism
from benchlib.analysis.campaign import analyze
from benchlib.analysis.headline import ratio_findings
from benchlib.analysis.why import limit_words
from benchlib.campaign.runner import run_campaign
from benchlib.lab.spec import LabSpec
from tests.campaigns import campaign_toml
from tests.hog import CpuCap
from tests.recorded import RECORDED

RTT_MS = 10.0


@pytest.fixture(scope="module")
def demo_vm():
    return analyze(RECORDED / "demo-vm-1")


def _tps(a):
    c = a.comparisons
    return c[c.metric == "tps"]


def test_a_semi_sync_1p1_against_an_async_1p2_on_one_host_is_confounded_by_its_servers(demo_vm):
    semi = _tps(demo_vm)[_tps(demo_vm).cluster == "semisync"]
    assert len(semi) == 2 and (semi.confounded_by == "servers").all() and not semi.like_for_like.any()
    said = [f for f in ratio_findings(demo_vm) if f.what.startswith("semisync")]
    assert all("confounded by servers in the cluster, 2 servers in semisync against 3 servers in async" in f.verdict
               and "the same number of servers" in f.verdict and "difference is real (" not in f.verdict.split(
                   "(as measured")[0] for f in said)


def test_galera_against_async_names_the_binary_log_as_its_design_with_its_fsyncs(demo_vm):
    galera = _tps(demo_vm)[_tps(demo_vm).cluster == "galera"]
    # 3 servers each: the binary log is Galera's design, not a confound; recorded by an older benchlib, whose sysbench
    # tables on Galera held every 3rd id: that confounds it
    assert (galera.confounded_by == "row_ids").all()
    design = {d.trait: d for u in galera.unlike for d in u if d.kind == "design"}
    assert design["binlog"].this == "off" and design["binlog"].baseline == "on"
    e = mechanism.explain(demo_vm, galera)
    two = e.loc[galera[galera.threads == 2].index[0]]
    assert 0.9 <= two.fsyncs <= 1.1 and 1.9 <= two.base_fsyncs <= 2.2  # the note's 1.01 against 1.02 + 1.02
    assert two.limit == "fsync" and two.base_limit == "fsync"  # a third of the CPU idle, a commit waiting its fsyncs
    words = next(f.why for f in ratio_findings(demo_vm) if f.what.startswith("galera") and "at 2 client" in f.what)
    assert "1.0 fsync a commit on its write node against 2.0" in words and "keeps no binary log, by design" in words


def test_like_for_like_pairs_are_not_confounded_and_unlike_ones_are():
    a = analyze(RECORDED / "replica-count")
    c = _tps(a)
    pairs = {(r.cluster, r.baseline_clusters): r.confounded_by for r in c.itertuples()}
    assert pairs[("semi1", "async1")] == "" and pairs[("semi2", "async2")] == ""
    assert pairs[("semi1", "async2")] == "servers" and pairs[("semi2", "async1")] == "servers"
    like = c[(c.cluster == "semi1") & (c.baseline_clusters == "async1") & (c.threads == 2)].iloc[0]
    assert 0.90 <= like.ratio <= 1.05 and like.ci_low < 1 < like.ci_high  # the note's 0.98 [0.90, 1.07]


def test_what_bound_the_host_is_said_with_its_numbers():
    assert mechanism.limit_of({"busy": 0.97, "fsyncs": 1.0}) == "CPU"
    assert mechanism.limit_of({"busy": 0.6, "paused": 0.4}) == "flow control"
    assert mechanism.limit_of({"busy": 0.3, "commit_wait_ms": 10.0, "lat_ms": 12.0, "fsyncs": 2.0}) == "replication wait"
    assert mechanism.limit_of({"busy": 0.7, "fsyncs": 2.0}) == "fsync"
    assert mechanism.limit_of({"busy": 0.5, "fsyncs": 0.1}) == ""
    assert limit_words("fsync", {"busy": 0.7}) == "fsync-bound (each commit waits for its fsyncs while the host's CPUs 70% busy)"
    assert limit_words("flow control", {"paused": 0.42}) == "held back by flow control (its writer paused 42% of the time)"


# -- known truth, on real servers --------------------------------------------------------------------------------------

LAB = {
    "name": "t-why",
    "defaults": {"durability": "durable", "buffer_pool": "64M"},
    "clusters": {
        "async": {"topology": "async", "replicas": 1},
        "semi": {"topology": "semisync", "replicas": 1},
        "on": {"topology": "single", "binlog": True},
        "off": {"topology": "single", "binlog": False},
        "galera": {"topology": "galera", "nodes": 3, "applier_threads": 1, "fc_limit": 1},
    },
    "sites": {"far": {"nodes": ["async-2", "semi-2"], "rtt_ms": RTT_MS}},
}


@pytest.mark.measures  # latencies set against each other: alone, not beside the suite's other process (40 s)
def test_explanations_match_known_truth_on_real_servers(labs, tmp_path):
    lab = labs.up(LabSpec.model_validate(LAB))
    (tmp_path / "lab.toml").write_text(_toml(LAB))
    commits = tmp_path / "commits.toml"
    commits.write_text(campaign_toml("commits", "lab.toml", clusters=["async", "semi", "on", "off"],
                                     workloads=["oltp_write_only"], threads=[1], time_s=3, repetitions=3))
    a = analyze(run_campaign(commits, runs_dir=tmp_path / "runs", progress="none").path)
    by = mechanism.by_config(a).set_index("cluster")

    # the semi-sync replica is RTT_MS away: each commit waits about one round trip for its acknowledgement ...
    wait = by.at["semi", "commit_wait_ms"]
    assert 0.8 * RTT_MS <= wait <= 1.5 * RTT_MS, by[["commit_wait_ms", "lat_ms"]]
    assert "semi-sync acknowledgement" in by.at["semi", "wait_kind"] and math.isnan(by.at["async", "commit_wait_ms"])
    # ... which accounts for most of what semi-sync adds to a transaction's latency against async (like for like:
    # both replicas far away, and async's commits wait for neither)
    semi = next(f for f in ratio_findings(a) if f.what.startswith("semi ") and "async" in f.what)
    assert "accounts for" in semi.why and "comes with" not in semi.why.split(";")[0], semi.why
    assert "confounded" not in semi.verdict, semi.verdict
    extra = by.at["semi", "lat_ms"] - by.at["async", "lat_ms"]
    assert 0.7 <= wait / extra <= 1.3, (wait, extra)

    # the binary log on and off: 2 fsyncs a commit against 1 (InnoDB's prepare and the binary log's group commit)
    assert 1.8 <= by.at["on", "fsyncs"] <= 2.2 and 0.9 <= by.at["on", "binlog_fsyncs"] <= 1.1, by
    assert 0.9 <= by.at["off", "fsyncs"] <= 1.1 and by.at["off", "binlog_fsyncs"] == 0, by
    # and set side by side, the two differ by their binary log, which confounds the ratio (same topology)
    against_on = analyze(a.path, baseline="on")
    off = _tps(against_on)[_tps(against_on).cluster == "off"]
    assert (off.confounded_by == "binlog").all(), off[["cluster", "baseline_clusters", "confounded_by"]]

    # a Galera node starved of CPU (a noisy neighbour) cannot apply at the writer's pace: with a low fc_limit, flow
    # control holds the whole cluster to its pace, and the mechanism names it
    starved = tmp_path / "starved.toml"
    starved.write_text(campaign_toml("starved", "lab.toml", clusters=["galera"], workloads=["oltp_write_only"],
                                     threads=[16], time_s=6, repetitions=1))
    if not CpuCap.available():
        pytest.skip("no cgroup cpu controller to starve a node with")
    with CpuCap(lab.pid("galera-3"), 0.02):
        g = analyze(run_campaign(starved, runs_dir=tmp_path / "runs", progress="none").path)
    run = mechanism.per_run(g).iloc[0]
    assert run.paused >= 0.15 and run.limit == "flow control", run
    assert "held back by flow control" in limit_words(run.limit, run.to_dict())


def _toml(spec: dict) -> str:
    """The lab spec as TOML (flat tables of scalars and lists)."""
    import json

    lines = [f'name = "{spec["name"]}"', "[defaults]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in spec["defaults"].items()]
    for name, c in spec["clusters"].items():
        lines.append(f"[clusters.{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in c.items()]
    for name, s in spec["sites"].items():
        lines.append(f"[sites.{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in s.items()]
    return "\n".join(lines) + "\n"


def test_row_lock_waits_and_reads_from_disk_are_named_as_what_bound_the_host():
    from benchlib.analysis.mechanism import limit_of
    from benchlib.analysis.why import limit_words

    hot = {"busy": 0.5, "lat_ms": 10.0, "commit_wait_ms": 0.05, "lock_wait_ms": 6.0, "fsyncs": 2.0, "threads": 8}
    assert limit_of(hot) == "row locks"
    assert limit_words("row locks", hot) == ("bound by contention on hot rows (6.0 ms of a transaction waiting for "
                                             "row locks, 60% of its time)")
    big = {"busy": 0.3, "lat_ms": 10.0, "pages_read": 12.0, "bp_miss": 0.08, "disk_busy": 0.9, "fsyncs": 2.0}
    assert limit_of(big) == "IO"
    assert limit_words("IO", big) == ("IO-bound (12.0 pages read from disk a transaction, 8.0% of buffer-pool reads "
                                      "missed, the busiest disk 90% busy)")
    assert limit_of({**big, "disk_busy": 0.1, "iowait": 0.02}) == "fsync"  # reads a quiet disk keeps up with
    assert limit_words("row locks", {**hot, "commit_wait_ms": 3.0}).endswith("of its time; a commit waited 3.0 ms for "
                                                                             "replication)")  # the locks' holders'
    assert limit_of({**hot, "lock_wait_ms": 2.0}) == "fsync"  # waits, but not for most of a transaction's time
    assert limit_of({**hot, "threads": 1}) == "fsync"  # one client thread: the waits are other sessions' (heartbeat)
