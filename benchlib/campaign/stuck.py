"""What a hung cluster's nodes were doing when the watchdog stopped the load, from the processlist every MySQL-family
server keeps: per node, the statements running longest, alike ones counted together (a HUNG run names them:
"galera-2: 1 COMMIT in 'wsrep replaying trx' for 11 s; galera-1: 6 COMMIT in 'Waiting for certification' for 11 s")."""

from __future__ import annotations

from typing import Any, Callable

import pymysql

__all__ = ["longest_statements"]

QUERY = ("SELECT user, command, time, state, LEFT(REPLACE(info, '\\n', ' '), 90) FROM information_schema.PROCESSLIST "
         "WHERE command NOT IN ('Sleep', 'Daemon', 'Binlog Dump', 'Binlog Dump GTID') AND time >= %s "
         "AND id <> CONNECTION_ID() ORDER BY time DESC LIMIT 50")


def longest_statements(connect: Callable[[str], Any], nodes: list[str], at_least_s: float) -> str:
    """Per node, the statements running for ``at_least_s`` seconds or more, alike ones (same state, same text)
    counted together, in words, the rarer states first (the one stuck transaction before the many that wait behind
    it); "" when none ran that long (a node that does not answer is skipped: the run's other checks name it)."""
    said: list[tuple[int, str]] = []
    for node in nodes:
        try:
            conn = connect(node)
        except Exception:  # noqa: BLE001 - a node gone or unknown: the run's other checks name it
            continue
        try:
            with conn.cursor(pymysql.cursors.Cursor) as cur:
                cur.execute(QUERY, (int(at_least_s),))
                rows = cur.fetchall()
        except (pymysql.MySQLError, OSError):
            continue
        finally:
            conn.close()
        alike: dict[tuple[str, str], list[int]] = {}
        for _user, command, secs, state, info in rows:
            alike.setdefault((state or command, info or command), []).append(int(secs))
        for (state, info), secs in sorted(alike.items(), key=lambda x: (len(x[1]), -max(x[1])))[:3]:
            said.append((len(secs), f"{node}: {len(secs)} {info} in '{state}' for {max(secs)} s"))
    return "; ".join(words for _, words in sorted(said, key=lambda x: x[0]))
