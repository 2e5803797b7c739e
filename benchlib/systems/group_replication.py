"""MySQL Group Replication, single- or multi-primary.

Settings: durability, flow control (mode, applier and certifier thresholds, period, member quota,
hold and release percent, min and max quota), the consistency of transactions and the
secondaries' applier threads (each secondary leaves and rejoins); each member
reports its own state and queues (``performance_schema.replication_group_member_stats``).
"""

from __future__ import annotations

from typing import Any

from benchlib.systems import queries as q
from benchlib.systems.settings import COMMON, Setting, read_var, set_global
from benchlib.systems.sql import query
from benchlib.systems.values import choice, int_range

__all__ = ["SETTINGS", "VARIABLES", "node_status"]


#: recorded in each run's manifest
VARIABLES = ("group_replication_single_primary_mode", "group_replication_consistency",
             "group_replication_flow_control_mode", "group_replication_flow_control_applier_threshold",
             "group_replication_flow_control_certifier_threshold", "group_replication_flow_control_period",
             "replica_parallel_workers", "group_replication_paxos_single_leader")


def _gr(name: str, parse, help_: str, variable: str) -> Setting:
    var = f"group_replication_{variable}"
    return Setting(name, parse, f"{var}: {help_}" if help_ else var, set_global(var), read_var(var))


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
            read_var("replica_parallel_workers"), replicas_only=True),
    _gr("gr_consistency", choice("EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER", "BEFORE", "AFTER", "BEFORE_AND_AFTER"),
        "transaction consistency guarantee", "consistency"),
]}}


def node_status(conn, role: str) -> dict[str, Any]:
    rows = query(conn, q.GROUP_MEMBER_STATS_SQL)
    if not rows:
        return {"member_state": "OFFLINE"}
    row = rows[0]
    stats = q.group_member_stats(row)
    return {"member_state": row["MEMBER_STATE"], "member_role": row.get("MEMBER_ROLE"),
            "certifier_queue": int(stats["certifier_queue"]), "applier_queue": int(stats["applier_queue"])}
