"""A cluster's traits as one run recorded them: what, besides its replication mode, sets what it can deliver.

A ratio between two clusters measures their replication modes only when everything else about them is the same:
the servers each runs (on a shared host every replica takes CPU and disk from the writer), the binary log,
durability, buffer pool, redo log, server version, applier threads, the CPUs they ran on, the round trip to their
far nodes. ``traits(manifest)`` reads these off a run's record (the cluster facts and the writer's server variables),
so that analysis compares them without reading a lab spec (``benchlib.analysis.likeness`` does).
Each is a column of the ``runs`` table, named ``cluster_<trait>``.
"""

from __future__ import annotations

import re
from typing import Any

from benchlib import catalogue

__all__ = ["COLUMNS", "TRAITS", "traits"]

#: trait -> what it is, for people
TRAITS = {
    "servers": "servers in the cluster",
    "binlog": "binary log on the write node",
    "sync_binlog": "sync_binlog",
    "flush_log": "innodb_flush_log_at_trx_commit",
    "buffer_pool": "InnoDB buffer pool",
    "redo_log": "InnoDB redo log",
    "performance_schema": "performance_schema",
    "version": "server version",
    "appliers": "applier threads per replica",
    "cpus": "CPUs",
    "row_ids": "row ids of the oltp tables",
}
#: what the likeness check names beside the traits
NAMES = {**TRAITS, "rtt_ms": "round trip to the farthest node"}
COLUMNS = tuple(f"cluster_{t}" for t in TRAITS)


def _on(value: Any) -> bool | None:
    if value is None:
        return None
    return str(value).strip().upper() in ("ON", "1", "YES", "TRUE")


def _mib(value: Any) -> str | None:
    try:
        return f"{int(value) / 2 ** 20:g} MiB"
    except (TypeError, ValueError):
        return None


def _appliers(variables: dict[str, dict[str, Any]], nodes: list[str], system: str | None) -> str | None:
    """How many threads apply replicated transactions on each node besides the writer (on Galera every node's own):
    0 parallel workers is the one SQL thread applying. Several values when the replicas differ."""
    facts = catalogue.get(system)
    if facts is None or not facts.applier_variables:
        return None
    names = facts.applier_variables
    counted = []
    for node in (nodes if facts.multi_writer else nodes[1:]):
        mine = variables.get(node) or {}
        value = next((mine[v] for v in names if mine.get(v) is not None), None)
        try:
            counted.append(max(1, int(value)))
        except (TypeError, ValueError):
            continue
    return ",".join(str(v) for v in sorted(set(counted))) or None


def _version(facts, writer: dict[str, Any]) -> str | None:
    """The server and its version, without what the version string says of the server's options ("-log": a binary
    log is on, which is a trait of its own)."""
    if facts is not None and facts.server:
        return facts.server
    v = (facts.version if facts is not None else None) or writer.get("version")
    return re.sub(r"(-log|-debug)+$", "", str(v)) if v else None


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _row_ids(load: dict[str, Any], facts, writer: dict[str, Any], nodes: list[str]) -> str | None:
    """Which row ids a run's sysbench oltp tables held: all of 1..table_size (recorded since benchlib prepares them so
    on every system), or, for a run an older benchlib recorded, the ids sysbench's AUTO_INCREMENT prepare left: a
    Galera node spaces them by the cluster's size (wsrep_auto_increment_control), a multi-primary group by 7
    (group_replication_auto_increment_increment)."""
    if not str(load.get("workload") or "").startswith("oltp_"):
        return None
    if load.get("row_ids"):
        return "all of 1 to the table size"
    system = catalogue.get(getattr(facts, "system", None) if facts is not None else None)
    how = system.spaced_ids if system is not None else ""
    step = 1
    if how == "cluster size":
        step = len(nodes)
    elif how == "7 when multi-primary" and _on(writer.get("group_replication_single_primary_mode")) is False:
        step = 7
    if step <= 1:
        return "all of 1 to the table size"
    return f"every {_ordinal(step)} id (1, {1 + step}, {1 + 2 * step}, ...)"


def traits(manifest) -> dict[str, Any]:
    """The traits of a run's cluster (``cluster_<trait>`` columns): None where the record does not say."""
    lab = manifest.lab
    facts = lab.facts if lab is not None else None
    nodes = list(lab.nodes) if lab is not None else []
    variables = manifest.server_variables or {}
    writer = variables.get(nodes[0], {}) if nodes else {}
    binlog = _on(writer.get("log_bin"))
    if binlog is None and facts is not None:
        binlog = facts.binlog
    cpus = getattr(facts, "cpus", None) if facts is not None else None
    if cpus is None and facts is not None and facts.placement == "local":
        cpus = "all"  # an embedded lab's servers ran on every CPU of the host, as the lab's other clusters did
    out = {
        "servers": len(nodes) or None,
        "binlog": binlog,
        "sync_binlog": writer.get("sync_binlog") if binlog else None,
        "flush_log": writer.get("innodb_flush_log_at_trx_commit"),
        "buffer_pool": _mib(writer.get("innodb_buffer_pool_size")),
        "redo_log": _mib(writer.get("innodb_redo_log_capacity") or writer.get("innodb_log_file_size")),
        "performance_schema": _on(writer.get("performance_schema")),
        "version": _version(facts, writer),
        "appliers": _appliers(variables, nodes, facts.system if facts is not None else None),
        "cpus": cpus,
        "row_ids": _row_ids(manifest.sysbench or {}, facts, writer, nodes),
    }
    return {f"cluster_{k}": (None if v is None else str(v) if not isinstance(v, bool) else v) for k, v in out.items()}
