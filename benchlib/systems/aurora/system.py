"""Amazon Aurora MySQL (a remote lab only): its readers' lag and CPU from ``information_schema.replica_host_status``.

Aurora's parameters live in its DB cluster parameter group, so benchlib sweeps none of them.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from benchlib.systems.base import ReadSetting, System

__all__ = ["SYSTEM", "AURORA_REPLICAS_SQL", "aurora_replicas", "reads"]

AURORA_REPLICAS_SQL = ("SELECT SERVER_ID, SESSION_ID, REPLICA_LAG_IN_MILLISECONDS, LAST_UPDATE_TIMESTAMP, CPU "
                       "FROM information_schema.replica_host_status WHERE SESSION_ID = 'MASTER_SESSION_ID' "
                       "OR LAST_UPDATE_TIMESTAMP > NOW() - INTERVAL 60 SECOND")


def aurora_replicas(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per reader instance (the writer's own row left out): lag in ms and CPU %."""
    out = {}
    for r in rows:
        if r["SESSION_ID"] == "MASTER_SESSION_ID":
            continue
        out[str(r["SERVER_ID"])] = {"lag_ms": float(r["REPLICA_LAG_IN_MILLISECONDS"]), "cpu_pct": float(r["CPU"])}
    return out


def reads(kind, writer: bool) -> list[tuple[str, str, Any]]:
    """What the sampler reads of an Aurora cluster, on its writer (privilege probe, SQL, parameters)."""
    return [("aurora_replicas", AURORA_REPLICAS_SQL, None)] if writer else []


def _no_status(conn, role: str) -> dict[str, object]:
    return {}


SYSTEM = System("aurora", {}, _no_status, reads=reads, kinds=frozenset({"aurora"}),
                sweeps_nothing="Aurora's parameters are set in its DB cluster parameter group, not from SQL",
                read_settings={"eventual": ReadSetting("eventual", "an Aurora replica reads the shared storage as of "
                                                                   "its last redo record applied", waits=False)})
