"""Format a lab's node statuses as text lines (printing happens in the CLI)."""

from __future__ import annotations

from typing import Iterable


def _replication(s) -> str:
    d = s.detail
    if not s.up:
        return "DOWN"
    if "error" in d:
        return f"error: {d['error']}"
    if "io_running" in d:  # a replica
        lag = d.get("seconds_behind_master")
        text = f"IO:{d['io_running']} SQL:{d['sql_running']}"
        if "gtid_slave_pos" in d:
            text += f" gtid_slave_pos={d['gtid_slave_pos'] or '-'}"
        text += f" sbm={'NULL' if lag is None else lag}s"
        if "parallel_threads" in d:
            text += f" parallel={d['parallel_threads']}"
        return text + (f" error: {d['last_error']}" if d.get("last_error") else "")
    if "gtid_binlog_pos" in d:  # a MariaDB primary
        semi = f" semisync={d['semisync']} clients={d['semisync_clients']}" if d.get("semisync") == "ON" else ""
        return f"gtid_binlog_pos={d['gtid_binlog_pos'] or '-'}{semi}"
    if "wsrep_state" in d:  # a Galera node
        return (f"{d['wsrep_state']} {d['cluster_status']} size={d['cluster_size']} ready={d['ready']} "
                f"last_committed={d['last_committed']}")
    return " ".join(f"{k}={v}" for k, v in d.items()) or "up"


def format_status(lab: str, statuses: Iterable) -> list[str]:
    rows = [("NODE", "ROLE", "SITE", "PORT", "PID", "STATE")]
    for s in statuses:
        where = s.site or ("local" if s.pid or not getattr(s, "host", "") else s.host)
        rows.append((s.name, s.role, where, str(s.port), str(s.pid or "-"), _replication(s)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [f"lab {lab}"]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
    return lines
