"""MySQL Group Replication, single- or multi-primary.

Settings: durability, flow control (mode, applier and certifier thresholds, period, member quota,
hold and release percent, min and max quota), the consistency of transactions and the
secondaries' applier threads (each secondary leaves and rejoins); each member
reports its own state and queues (``performance_schema.replication_group_member_stats``).
"""

from __future__ import annotations

from typing import Any, Mapping

from benchlib.systems.replication import MYSQL8_APPLIER_SQL
from benchlib.systems.settings import COMMON, Setting, read_var, set_global
from benchlib.systems.sql import query
from benchlib.systems.values import choice, int_range
from benchlib.systems import failover, positions
from benchlib.systems import invariants as inv
from benchlib.systems.base import ReadSetting, Stall, System
from benchlib.systems.group_replication.facts import CONSISTENCY
from benchlib.systems.mysql.system import RESTART_SETTINGS

__all__ = ["SYSTEM", "GROUP_MEMBER_STATS_SQL", "GROUP_REPLICATION_CHANNEL", "GROUP_THROTTLE_SQL", "SETTINGS", "VARIABLES",
           "group_member_stats", "group_throttle", "node_status", "readiness", "reads"]


#: recorded in each run's manifest
#: the time a member's transaction messages took to reach the group (a round trip to a majority: what a commit waits
#: for before certification) and how many it sent; the same for every consensus round
COUNTERS = ("Gr_data_messages_sent_count", "Gr_data_messages_sent_roundtrip_time_sum",
            "Gr_all_consensus_proposals_count", "Gr_all_consensus_time_sum")
VARIABLES = ("group_replication_single_primary_mode", "group_replication_consistency",
             "group_replication_flow_control_mode", "group_replication_flow_control_applier_threshold",
             "group_replication_flow_control_certifier_threshold", "group_replication_flow_control_period",
             "replica_parallel_workers", "group_replication_paxos_single_leader",
             "group_replication_member_expel_timeout", "group_replication_unreachable_majority_timeout")


def _gr(name: str, parse, help_: str, variable: str) -> Setting:
    var = f"group_replication_{variable}"
    return Setting(name, parse, f"{var}: {help_}" if help_ else var, set_global(var), read_var(var))


GROUP_REPLICATION_CHANNEL = "group_replication_applier"
GROUP_MEMBER_STATS_SQL = """
SELECT m.MEMBER_HOST, m.MEMBER_PORT, m.MEMBER_STATE, m.MEMBER_ROLE, s.COUNT_TRANSACTIONS_IN_QUEUE,
       s.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE, s.COUNT_TRANSACTIONS_CHECKED,
       s.COUNT_TRANSACTIONS_REMOTE_APPLIED, s.COUNT_TRANSACTIONS_LOCAL_PROPOSED, s.COUNT_CONFLICTS_DETECTED
FROM performance_schema.replication_group_members m
LEFT JOIN performance_schema.replication_group_member_stats s USING (MEMBER_ID)
WHERE m.MEMBER_ID = @@server_uuid
"""


def group_member_stats(row: Mapping[str, Any]) -> dict[str, float]:
    """One member's own row (query every member for its own: remote rows refresh once per period); empty when it
    is in no group (no stats)."""
    if row.get("COUNT_TRANSACTIONS_IN_QUEUE") is None:
        return {}
    out = {"certifier_queue": float(row["COUNT_TRANSACTIONS_IN_QUEUE"]),
           "applier_queue": float(row.get("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE") or 0),
           "checked": float(row["COUNT_TRANSACTIONS_CHECKED"]),
           "remote_applied": float(row.get("COUNT_TRANSACTIONS_REMOTE_APPLIED") or 0),
           "local_proposed": float(row.get("COUNT_TRANSACTIONS_LOCAL_PROPOSED") or 0),
           "conflicts": float(row["COUNT_CONFLICTS_DETECTED"])}
    out["backlog"] = out["certifier_queue"] + out["applier_queue"]
    return out


GROUP_THROTTLE_SQL = "SHOW GLOBAL STATUS LIKE 'Gr\\_flow\\_control\\_throttle\\_%'"


def group_throttle(rows) -> dict[str, float]:
    """Flow-control throttling of one member, from the stats component's status variables: time its
    transactions spent throttled (ns, a counter), how many were throttled, how many are now. Empty without
    the component."""
    st = {r["Variable_name"].lower(): r["Value"] for r in rows}
    if "gr_flow_control_throttle_time_sum" not in st:
        return {}
    return {"throttle_time_ns": float(st["gr_flow_control_throttle_time_sum"] or 0) * 1000,
            "throttle_count": float(st.get("gr_flow_control_throttle_count") or 0),
            "throttle_active": float(st.get("gr_flow_control_throttle_active_count") or 0)}


SETTINGS: dict[str, Setting] = {**COMMON, **{s.name: s for s in [
    _gr("gr_flow_control_mode", choice("QUOTA", "MAJORITY", "DISABLED"), "QUOTA throttles writers when a member "
        "queues past a threshold; MAJORITY only when a majority does (MySQL Enterprise; Community 9.7 refuses it)",
        "flow_control_mode"),
    _gr("gr_applier_threshold", int_range(0, 2_147_483_647), "transactions queued to apply",
        "flow_control_applier_threshold"),
    _gr("gr_certifier_threshold", int_range(0, 2_147_483_647), "transactions queued to certify",
        "flow_control_certifier_threshold"),
    _gr("gr_flow_control_period", int_range(1, 60), "seconds between quota adjustments", "flow_control_period"),
    _gr("gr_member_quota_percent", int_range(0, 100), "share of the quota each writer gets (0: split evenly)",
        "flow_control_member_quota_percent"),
    _gr("gr_hold_percent", int_range(0, 100), "quota kept unused to let a member catch up",
        "flow_control_hold_percent"),
    _gr("gr_release_percent", int_range(0, 1000), "quota growth per period once no member is behind",
        "flow_control_release_percent"),
    _gr("gr_min_quota", int_range(0, 2_147_483_647), "lowest quota (0: none)", "flow_control_min_quota"),
    _gr("gr_max_quota", int_range(0, 2_147_483_647), "highest quota (0: none)", "flow_control_max_quota"),
    Setting("applier_threads", int_range(0, 1024), "replica_parallel_workers of the secondaries' applier: each "
            "secondary leaves the group, takes the value and rejoins (the primary applies nothing remote)",
            lambda v, r, vs: ["STOP GROUP_REPLICATION", f"SET GLOBAL replica_parallel_workers = {int(v)}",
                              "START GROUP_REPLICATION"] if r == "replica" else [],
            read_var("replica_parallel_workers"), replicas_only=True, rejoins=True),
    _gr("gr_member_expel_timeout", int_range(0, 3600), "seconds a member suspected of being gone (after 5 s without "
        "a message) is waited for before it is expelled; the suspicions are checked every 15 s, so the expulsion "
        "comes about 5 + 15 x ceil(E/15) s after the member went silent", "member_expel_timeout"),
    _gr("gr_unreachable_majority_timeout", int_range(0, 31_536_000), "seconds a member cut off from the majority "
        "waits before it leaves the group and stops taking writes for good (0: it waits for ever)",
        "unreachable_majority_timeout"),
    _gr("gr_consistency", choice("EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER", "BEFORE", "AFTER", "BEFORE_AND_AFTER"),
        "transaction consistency guarantee", "consistency"),
]}}


def node_status(conn, role: str) -> dict[str, object]:
    rows = query(conn, GROUP_MEMBER_STATS_SQL)
    if not rows:
        return {"member_state": "OFFLINE"}
    row = rows[0]
    stats = group_member_stats(row)
    return {"member_state": row["MEMBER_STATE"], "member_role": row.get("MEMBER_ROLE"),
            **{k: int(stats[k]) for k in ("certifier_queue", "applier_queue") if k in stats}}


MEMBERS_SQL = ("SELECT MEMBER_ID = @@server_uuid AS ME, MEMBER_STATE "
               "FROM performance_schema.replication_group_members")


def readiness(conn, writer: bool, size: int, node: str) -> list[str]:
    """A member is ready when it is ONLINE in a group whose every member is."""
    rows = query(conn, MEMBERS_SQL)
    mine = next((r["MEMBER_STATE"] for r in rows if r["ME"]), None) or "not a member"
    if mine != "ONLINE":
        return [f"{node}: Group Replication member is {mine}, not ONLINE: START GROUP_REPLICATION on it, or check "
                "its error log"]
    online = sum(r["MEMBER_STATE"] == "ONLINE" for r in rows)
    if online != size:
        return [f"{node}: {online} of the group's {size} members are ONLINE (it lists {len(rows)}): heal or "
                "restart the others, or fix the spec's node list"]
    offline = query(conn, "SELECT @@GLOBAL.offline_mode AS v")
    if offline and int(offline[0]["v"] or 0):  # group_replication_exit_state_action = OFFLINE_MODE (8.4's default)
        return [f"{node}: ONLINE in the group, but offline_mode is still ON since it left the group on an error: "
                "clients without CONNECTION_ADMIN cannot connect to it (SET GLOBAL offline_mode = OFF; a local lab's "
                "heal does it)"]
    return []


def reads(kind, writer: bool) -> list[tuple[str, str, Any]]:
    """What the sampler reads on a member (privilege probe, SQL, parameters): its stats and its applier."""
    return [("performance_schema", GROUP_MEMBER_STATS_SQL, None),
            ("performance_schema", MYSQL8_APPLIER_SQL, (GROUP_REPLICATION_CHANNEL,))]


def _consistency(level: str, doc: str) -> ReadSetting:
    statement = (f"SET SESSION group_replication_consistency = '{level}'",)
    writes = level in ("AFTER", "BEFORE_AND_AFTER")  # the writer pays: its commits wait for every member
    # the load runs under the level when it makes writers pay, else under EVENTUAL (an earlier run may have set AFTER)
    return ReadSetting(level, doc, reader=statement, writer=statement,
                       load={"gr_consistency": level if writes else "EVENTUAL"},
                       waits=level not in ("EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER"))


SYSTEM = System("group_replication", SETTINGS, node_status, readiness, reads, frozenset({"mysql", "percona"}),
                invariants=(inv.group_membership, inv.nodes_answer), positions=positions.GTID,
                locate=failover.gr_primary,
                stall=Stall((f"STOP REPLICA SQL_THREAD FOR CHANNEL '{GROUP_REPLICATION_CHANNEL}'",),
                            (f"START REPLICA SQL_THREAD FOR CHANNEL '{GROUP_REPLICATION_CHANNEL}'",),
                            "the member's applier channel stopped (it goes on certifying and queueing)"),
                restart_settings=RESTART_SETTINGS, variables=VARIABLES, counters=COUNTERS,
                read_settings={level: _consistency(level, doc) for level, doc in CONSISTENCY.items()})
