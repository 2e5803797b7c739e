"""Cost per transaction and CPU-bound flags on a campaign recorded with every probe (data/campaigns/resources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib import charts
from benchlib.analysis import resources, views
from benchlib.analysis.campaign import analyze
from benchlib.charts.catalogue import figures

DATA = Path(__file__).resolve().parents[2] / "data" / "campaigns"


@pytest.fixture(scope="module")
def a():
    return analyze(DATA / "resources")


def test_costs_per_transaction_by_node_and_role(a):
    per_run = resources.cost_per_trx(a)
    assert set(per_run.role) == {"writer", "replica", "member", "host"}
    assert {"cpu_ms", "ctx_switches", "write_kb", "disk_writes", "net_tx_kb"} <= set(per_run.cost)
    writer_cpu = per_run[(per_run.role == "writer") & (per_run.cost == "cpu_ms")]
    assert len(writer_cpu) == len(a.runs) and writer_cpu.per_trx.between(0.01, 100).all()
    # a Galera member applies every write set: it costs CPU, less than the writer that also runs the reads
    galera = per_run[(per_run.cluster == "galera") & (per_run.cost == "cpu_ms")]
    by_role = galera.groupby("role").per_trx.median()
    assert 0 < by_role["member"] < by_role["writer"]
    # durable commits (innodb_flush_log_at_trx_commit=1): about one InnoDB fsync per transaction on the writer
    fsyncs = per_run[(per_run.role == "writer") & (per_run.cost == "innodb_fsyncs")]
    assert len(fsyncs) == len(a.runs) and fsyncs.per_trx.between(0.3, 3).all()
    host = per_run[(per_run.role == "host") & (per_run.cost == "cpu_ms")]
    assert (host.per_s > 0).all() and (host.per_s <= 2 * 1000 * 1.05).all()  # at most 2 CPUs' worth of ms per second


def test_per_configuration_intervals(a):
    c = resources.cost_by_config(a)
    assert (c.runs == 2).all() and len(c.config.unique()) == 6
    ok = c.dropna(subset=["ci_low"])
    assert ((ok.ci_low > 0) & (ok.ci_low <= ok.per_trx) & (ok.per_trx <= ok.ci_high)).all()
    replicas = c[(c.role == "replica") & (c.cost == "cpu_ms") & (c.cluster == "async")]
    writer = c[(c.role == "writer") & (c.cost == "cpu_ms") & (c.cluster == "async")]
    assert len(replicas) == 2 and len(writer) == 2  # two replicas summed into one row per configuration


def test_cpu_bound_flags_match_the_warnings(a):
    bound = resources.cpu_bound(a)
    assert len(bound) == len(a.runs) and (bound.cpus == 2).all()
    assert bound.busy.between(0, 1).all() and bound.iowait.between(0, 1).all()
    flagged = set(bound[bound.bound != ""].config)
    warned = {w.split()[1] for w in a.problems[a.problems.what.str.startswith("CPU-bound")]["where"]}
    assert flagged == warned


def test_the_chart_and_its_view(a):
    costs = views.costs(a)
    assert costs.label.notna().all() and "galera t8" in set(costs.label)
    fig = charts.cost_bars(costs)
    assert len({t.name for t in fig.data if t.name}) == 4 and "cost_per_trx" in figures(a)
    carriers = [t for t in fig.data if not t.name]  # the whiskers, on invisible bars in their bars' slots
    assert carriers and all(t.error_y.array is not None and t.offsetgroup for t in carriers)


def test_a_campaign_recorded_before_the_new_probes_has_cpu_costs_only():
    old = analyze(DATA / "wan")  # process CPU time was sampled then; no host, counters or context switches
    costs = views.costs(old)
    assert set(costs.cost) == {"cpu_ms"} and "host" not in set(costs.role)
    assert resources.cpu_bound(old).empty and not old.problems.what.str.startswith("CPU-bound").any()


def test_host_cpu_and_disk_over_time_under_the_stability_chart(a):
    host = resources.host_over_time(a)
    assert set(host.run_id) == set(a.runs.run_id) and set(host.host) == {host.host.iloc[0]}
    per_run = host.groupby("run_id").size()
    assert (per_run >= 6).all()  # 8 s loads: a value every second of the load
    assert host.t_s.between(0, 10).all()
    assert host.cpu_busy_pct.between(0, 100).all() and host.iowait_pct.between(0, 100).all()
    assert (host.disk_write_mib_s >= 0).all() and host.disk_write_mib_s.median() > 0.1  # durable commits write
    # 8 client threads keep a 2-core host busier than 1 does
    t8 = host[host.run_id.str.contains("-t8-")].cpu_busy_pct.median()
    t1 = host[host.run_id.str.contains("-t1-")].cpu_busy_pct.median()
    assert t8 > t1
    assert "stability" not in figures(a)  # 8 s runs: the report leaves the chart out, with a note
    iv, trim, labels = views.stability(a)
    fig = charts.stability_over_time(iv, trim=trim, labels=labels, host=views.host_load(a, list(trim)))
    titles = [fig.layout[k].title.text for k in fig.layout if k.startswith("yaxis")]
    assert "host CPU %" in titles and "disk MiB/s" in titles


def test_every_chart_says_its_context_under_the_title(a):
    assert views.context(a) == ("oltp_read_write · 1-8 client threads · 2 runs per configuration · local lab, "
                                "2-core host")
    for name, fig in figures(a).items():
        title = fig.layout.title.text
        assert "2-core host" in title and "MariaDB 10.11" in title, name  # a PNG pasted alone still says it


def test_cpu_bound_without_process_rows_still_judges_the_host(a):
    """A remote lab samples its client hosts but no server process: the host's busy share is judged, no node named."""
    from dataclasses import replace

    rates = a.rates[a.rates.metric != "cpu_s"]
    bound = resources.cpu_bound(replace(a, rates=rates))
    assert len(bound) == len(a.runs) and (bound.node == "").all() and bound.node_share.isna().all()
    assert bound.busy.between(0, 1).all()
