"""Galera: MariaDB Galera Cluster (``galera``) and Percona XtraDB Cluster (``pxc``).

Settings: durability, flow control (``gcs.fc_limit``, ``gcs.fc_factor`` in
``wsrep_provider_options``, read back from it: 4096 reads back as "4K") and the number of
appliers (``wsrep_slave_threads``, PXC 8.0.26+: ``wsrep_applier_threads``).
"""

from __future__ import annotations

import re

from typing import Any

from benchlib.systems.settings import COMMON, Setting
from benchlib.systems.sql import global_status
from benchlib.systems.values import float_range, int_range, sql_literal
from benchlib.systems import failover, positions
from benchlib.systems import invariants as inv
from benchlib.systems.base import NO_RESTART, ReadSetting, Stall, System
from benchlib.systems.mariadb.system import COUNTERS
from benchlib.systems.mysql.system import RESTART_SETTINGS

__all__ = ["SYSTEM", "SETTINGS", "VARIABLES", "galera_number", "node_status", "provider_option", "readiness", "reads"]


#: recorded in each run's manifest (PXC 8.0.26+ names the appliers wsrep_applier_threads)
VARIABLES = ("wsrep_on", "wsrep_provider_options", "wsrep_slave_threads", "wsrep_applier_threads", "wsrep_sync_wait")


def galera_number(text: str) -> float:
    """A number as wsrep_provider_options shows it: 4096 reads back as "4K" (binary multiples)."""
    t = text.strip()
    power = "KMGT".find(t[-1:].upper()) + 1 if t and t[-1:].isalpha() else 0
    return float(t[:-1] if power else t) * 1024**power


def provider_option(options: str, name: str) -> str | None:
    """Value of one option in a ``wsrep_provider_options`` string."""
    for part in (options or "").split(";"):
        k, _, v = part.partition("=")
        if k.strip() == name:
            return v.strip()
    return None


def _provider(name: str, parse, help_: str) -> Setting:
    """A setting kept in ``wsrep_provider_options`` (``gcs.<name>``), read back from that string."""
    option = f"gcs.{name}"

    def matches(got: Any, want: Any) -> bool:
        value = provider_option(str(got), option)
        return value is not None and galera_number(value) == float(want)

    return Setting(name, parse, help_, lambda v, r, vs: [f"SET GLOBAL wsrep_provider_options = '{option}={v}'"],
                   lambda v, vs: {"wsrep_provider_options": v}, matches=matches)


def iso_seconds(text: str) -> float | None:
    """Seconds of an ISO 8601 duration as Galera shows it (``PT5S``, ``PT1M30S``, ``PT0.5S``); None: not one."""
    m = re.fullmatch(r"PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?", (text or "").strip())
    if not m or not any(m.groups()):
        return None
    h, mi, sec = (float(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + sec


def _suspect_timeout() -> Setting:
    """evs.suspect_timeout, in seconds: how long a node may be silent before the others suspect it is gone (a little
    over this, writes block until the new primary component forms). evs.inactive_timeout, the hard limit, must stay
    above it: it is raised with it where needed (its default: 15 s)."""

    def stmts(v: Any, role: str, variables: dict[str, str]) -> list[str]:
        inactive = max(15.0, float(v) + 10.0)
        return [f"SET GLOBAL wsrep_provider_options = 'evs.inactive_timeout=PT{inactive:g}S; "
                f"evs.suspect_timeout=PT{float(v):g}S'"]

    def matches(got: Any, want: Any) -> bool:
        value = iso_seconds(provider_option(str(got), "evs.suspect_timeout") or "")
        return value is not None and abs(value - float(want)) < 1e-6

    return Setting("suspect_timeout", float_range(0.5, 3600.0), "evs.suspect_timeout (s): silence after which a node "
                   "is suspected gone; evs.inactive_timeout is kept 10 s above it (at least 15 s)", stmts,
                   lambda v, vs: {"wsrep_provider_options": v}, matches=matches)


def _applier_var(variables: dict[str, str]) -> str:
    return "wsrep_applier_threads" if "wsrep_applier_threads" in variables else "wsrep_slave_threads"


SETTINGS: dict[str, Setting] = {**COMMON, **{s.name: s for s in [
    _provider("fc_limit", int_range(1, 2_147_483_647), "gcs.fc_limit: receive queue length that triggers flow "
              "control"),
    _provider("fc_factor", float_range(0.0, 1.0), "gcs.fc_factor: fraction of fc_limit at which flow control is "
              "released"),
    _suspect_timeout(),
    Setting("applier_threads", int_range(1, 512), "wsrep_slave_threads: parallel appliers per node (PXC 8.0.26+: "
            "wsrep_applier_threads)",
            lambda v, r, vs: [f"SET GLOBAL {_applier_var(vs)} = {sql_literal(v)}"],
            lambda v, vs: {_applier_var(vs): v}, variables=("wsrep_applier_threads", "wsrep_slave_threads")),
]}}


def node_status(conn, role: str) -> dict[str, object]:
    st = global_status(conn, "wsrep_")
    return {
        "wsrep_state": st.get("wsrep_local_state_comment", "?"),
        "cluster_status": st.get("wsrep_cluster_status", "?"),
        "cluster_size": int(st.get("wsrep_cluster_size", 0) or 0),
        "ready": st.get("wsrep_ready", "OFF"),
        "last_committed": int(st.get("wsrep_last_committed", -1) or -1),
    }


def readiness(conn, writer: bool, size: int, node: str) -> list[str]:
    """A node is ready when it is Synced in a primary component of every node."""
    st = global_status(conn, "wsrep_")
    state, status = st.get("wsrep_local_state_comment"), st.get("wsrep_cluster_status")
    have = int(st.get("wsrep_cluster_size") or 0)
    if state == "Synced" and status == "Primary" and have == size:
        return []
    return [f"{node}: Galera node is {state}, cluster {status}, size {have} (the cluster has {size} nodes): wait "
            "until it is Synced in a primary component of every node, or fix the spec's node list"]


def reads(kind, writer: bool) -> list[tuple[str, str, Any]]:
    """What the sampler reads on a Galera node (privilege probe, SQL, parameters)."""
    return [("status", "SHOW GLOBAL STATUS LIKE 'wsrep%'", None)]


_BITS = "1 reads, 2 UPDATE and DELETE, 4 INSERT and REPLACE, 8 SHOW"
#: a session's wsrep_sync_wait bitmask (bit 1: a SELECT waits for the node to catch up)
READ_SETTINGS = {f"wsrep_sync_wait={bits}": ReadSetting(f"wsrep_sync_wait={bits}",
                                                         f"wsrep_sync_wait bitmask {bits} ({_BITS})",
                                                         reader=(f"SET SESSION wsrep_sync_wait = {bits}",),
                                                         waits=bool(bits & 1))
                 for bits in range(16)}
STALL = Stall(("FLUSH TABLES WITH READ LOCK",), ("UNLOCK TABLES",),
              "FLUSH TABLES WITH READ LOCK held on the node (a backup's lock): its applier waits")
INVARIANTS = (inv.galera_membership, inv.nodes_answer)

SYSTEM = System("galera", SETTINGS, node_status, readiness, reads, frozenset({"mariadb_galera", "pxc"}),
                no_restart=NO_RESTART, invariants=INVARIANTS, positions=positions.GALERA, locate=failover.galera_node,
                stall=STALL, restart_settings=RESTART_SETTINGS, variables=VARIABLES, counters=COUNTERS,
                read_settings=READ_SETTINGS)
