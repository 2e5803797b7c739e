"""WAN sites: nodes in their own namespace behind a delayed link (TUN relay here: no netem)."""

from __future__ import annotations

import statistics
import subprocess
import time

import pytest

from benchlib.lab import sql, wan
from tests.conftest import example_spec, leftovers, needs_root
from tests.lab.test_async import rows_on, write_rows

pytestmark = [needs_root]


def commit_latencies_ms(lab, node, table, n=15) -> list[float]:
    """Single-row autocommit INSERT latency, as in study 001."""
    out = []
    with lab.connect(node, user="bench", tcp=True) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS sbtest", f"CREATE TABLE sbtest.{table} (id INT PRIMARY KEY)")
        with conn.cursor() as cur:
            for i in range(n):
                t0 = time.perf_counter()
                cur.execute(f"INSERT INTO sbtest.{table} VALUES (%s)", (i,))
                out.append((time.perf_counter() - t0) * 1000)
    return out


@pytest.fixture(scope="module")
def wan_lab(labs):
    return labs.up(example_spec("wan-semisync.toml", "t-wan"))


def test_far_node_lives_in_its_namespace(wan_lab):
    far = wan_lab.node("semi-2")
    assert far.site == "far" and far.netns in wan.list_namespaces()
    pids = subprocess.run(["ip", "netns", "pids", far.netns], capture_output=True, text=True).stdout.split()
    assert str(wan_lab.pid(far)) in pids
    listening = subprocess.run(["ip", "netns", "exec", far.netns, "ss", "-ltnH"], capture_output=True, text=True).stdout
    assert f"{far.listen_host}:{far.port}" in listening


def test_measured_rtt_within_two_percent(wan_lab):
    m = wan.measure_rtt(wan_lab.node("semi-2"), samples=21)
    assert abs(m["median_ms"] - 100) <= 2, m


def test_replication_crosses_the_link(wan_lab):
    write_rows(wan_lab, "semi-1", "w", [1, 2])
    with wan_lab.connect("semi-1") as conn:
        pos = sql.scalar(conn, "SELECT @@GLOBAL.gtid_binlog_pos")
    with wan_lab.connect("semi-2") as conn:
        assert sql.scalar(conn, "SELECT MASTER_GTID_WAIT(%s, 10)", (pos,)) == 0
    assert rows_on(wan_lab, "semi-2", "w") == [1, 2]


def test_semisync_commit_costs_one_rtt(wan_lab):
    lat = statistics.median(commit_latencies_ms(wan_lab, "semi-1", "lat_semi"))
    assert 99 <= lat <= 110, lat  # the ack comes back from 100 ms away
    wan_lab.set({"semisync": "off"})
    lat_async = statistics.median(commit_latencies_ms(wan_lab, "semi-1", "lat_async"))
    assert lat_async < 5, lat_async
    wan_lab.set({"semisync": "on"})


def test_jitter_and_galera_across_sites(fresh_labs):
    spec = example_spec("wan-galera.toml", "t-wang", clusters={"galera": {"topology": "galera", "nodes": 3}},
                        sites={"west": {"nodes": ["galera-3"], "rtt_ms": 40, "jitter_ms": 4}})
    lab = fresh_labs.up(spec)
    assert all(s.detail["cluster_size"] == 3 for s in lab.status())
    m = wan.measure_rtt(lab.node("galera-3"), samples=21)
    # jitter is applied (the round trips spread) around the requested RTT; packets never overtake each
    # other on a link, so one may wait behind an earlier, more delayed one: the upper bound is loose.
    assert abs(m["median_ms"] - 40) <= 2.5 and m["min_ms"] >= 35.5 and m["max_ms"] <= 52, m
    assert m["max_ms"] - m["min_ms"] >= 2, m
    write_rows(lab, "galera-1", "g", [1])
    assert rows_on(lab, "galera-3", "g") == [1]


def test_down_removes_namespace_relay_and_tun(fresh_labs):
    lab = fresh_labs.up(example_spec("wan-semisync.toml", "t-wandown"))
    assert lab.layout.hub_tun in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    lab.down()
    assert leftovers(lab) == []
