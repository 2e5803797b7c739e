"""Run validity rules on cluster frames in the sampler's shape (the live cases are in tests/lab: a semi-sync replica
cut off, a group member expelled, a Galera node isolated)."""

from __future__ import annotations

import pandas as pd

from benchlib.systems import base as systems
from benchlib.systems import invariants as inv

W = inv.Window(["p", "r1", "r2"], 10.0, 30.0)


def frame(rows: list[tuple[float, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["t_s", "node", "metric", "value"])


def every_second(node: str, metric: str, values: dict[tuple[float, float], float], start=10, end=30, usual=1.0):
    """One sample a second from ``start`` to ``end``: ``values`` maps [from, to) time spans to a value (else
    ``usual``)."""
    out = []
    for t in range(start, end + 1):
        v = next((x for (a, b), x in values.items() if a <= t < b), usual)
        out.append((float(t), node, metric, v))
    return out


def test_a_semisync_fallback_names_the_primary_when_and_the_commits_without_ack():
    f = frame(every_second("p", "rpl_semi_sync_master_status", {(17, 36): 0.0})
              + [(float(t), "p", "rpl_semi_sync_master_no_tx", max(0, t - 17) * 3112.0) for t in range(10, 31)])
    (b,) = inv.semisync_holds(f, W)
    assert b.sentence() == "p fell back to async at 7.0 s for 13.0 s: 40,456 commits without a replica's ack"
    quiet = frame(every_second("p", "semisync_status", {}) + every_second("p", "semisync_no_tx", {}))
    assert inv.semisync_holds(quiet, W) == []
    async_all_along = frame(every_second("p", "rpl_semi_sync_master_status", {(0, 99): 0.0}))
    assert inv.semisync_holds(async_all_along, W) == []  # not semi-sync when the load began: nothing to hold
    # a fallback between two status reads still shows in the count of commits without an ack
    brief = frame(every_second("p", "semisync_status", {})
                  + [(float(t), "p", "semisync_no_tx", 0.0 if t < 14 else 812.0) for t in range(10, 31)])
    (b,) = inv.semisync_holds(brief, W)
    assert b.sentence() == "p fell back to async at 3.0 s for 1.0 s: 812 commits without a replica's ack"


def test_stopped_replica_threads_are_named_with_their_span():
    f = frame(every_second("r1", "io_running", {}) + every_second("r1", "sql_running", {(12, 14): 0.0})
              + every_second("r2", "io_running", {}) + every_second("r2", "sql_running", {}))
    (b,) = inv.replica_threads(f, W)
    assert (b.node, b.what, b.at_s, b.for_s) == ("r1", "had its replication SQL thread stopped", 2.0, 2.0)


def test_a_galera_node_out_of_the_primary_component_and_the_size_the_others_saw():
    f = frame(every_second("p", "wsrep_primary", {}) + every_second("r2", "wsrep_primary", {(20, 25): 0.0})
              + every_second("p", "wsrep_cluster_size", {(20, 26): 2.0}, usual=3.0)
              + every_second("r2", "wsrep_local_state", {(20, 27): 0.0}, usual=4.0)
              + every_second("p", "wsrep_local_state", {}, usual=4.0))
    found = {b.sentence() for b in inv.galera_membership(f, W)}
    assert found == {"r2 left the Primary component at 10.0 s for 5.0 s",
                     "p saw the cluster at 2 of 3 nodes at 10.0 s for 6.0 s",
                     "r2 was not Synced at 10.0 s for 7.0 s: wsrep_local_state [0] (4 is Synced)"}


def test_a_member_that_left_the_group_and_a_primary_that_moved():
    f = frame(every_second("p", "gr_online", {}) + every_second("r1", "gr_online", {(15, 99): 0.0})
              + every_second("p", "gr_primary", {(22, 99): 0.0}) + every_second("r2", "gr_primary", {(0, 23): 0.0}))
    found = [b.sentence() for b in inv.group_membership(f, W)]
    assert found == ["r1 was not ONLINE in the group at 5.0 s for 15.0 s",
                     "p stopped being the primary (r2 became it) at 13.0 s"]
    every = frame(every_second("p", "gr_primary", {}) + every_second("r1", "gr_primary", {(18, 19): 0.0})
                  + every_second("r2", "gr_primary", {}))  # multi-primary: each member stays a primary
    assert [b.sentence() for b in inv.group_membership(every, W)] == [
        "r1 stopped being a primary (a multi-primary group's member) at 8.0 s"]
    assert inv.group_membership(frame(every_second("p", "gr_primary", {}) + every_second("r2", "gr_primary", {})),
                                W) == []


def test_a_silent_node_is_named_from_its_own_liveness_rows():
    rows = [r for r in every_second("r1", "alive", {}) if not 14 < r[0] < 21]
    f = frame(rows + every_second("r1", "cpu_s", {}) + every_second("p", "alive", {})
              + every_second("r2", "alive", {}) + every_second("r2", "trx_behind", {}))
    (b,) = inv.nodes_answer(f, W)
    assert b.sentence() == "r1 did not answer the sampler at 4.0 s for 7.0 s"  # its /proc rows do not answer for it
    assert inv.nodes_answer(f[f.metric != "alive"], W) == []  # a run from before liveness rows: nothing to judge


def test_check_orders_breaches_by_when_they_began_and_every_system_registers_its_own():
    f = frame(every_second("r1", "io_running", {(25, 27): 0.0}) + every_second("p", "semisync_status", {(12, 13): 0.0})
              + every_second("r2", "sql_running", {}) + every_second("r1", "sql_running", {})
              + every_second("r2", "io_running", {}))
    found = inv.check(f, W, systems.get("mysql").invariants)
    assert [b.node for b in found] == ["p", "r1"]
    assert inv.group_membership in systems.get("group_replication").invariants
    assert inv.galera_membership in systems.get("pxc").invariants
    assert all(inv.nodes_answer in s.invariants for s in systems.SYSTEMS.values())


def test_a_breach_done_on_purpose_is_excused_and_only_that_one():
    from benchlib.systems.invariants import Breach, excuse

    stalled = Breach("async-3", "had its replication SQL thread stopped", at_s=4.2, for_s=4.0)  # 14.2 s on the clock
    other = Breach("async-2", "had its replication SQL thread stopped", at_s=4.2, for_s=4.0)
    late = Breach("async-3", "had its replication IO thread stopped", at_s=12.0)  # 22 s: long after the stall
    assert excuse([stalled, other, late], 10.0, [("async-3", 13.0, 17.0)]) == [other, late]
    assert excuse([stalled], 10.0, []) == [stalled]
