"""Small SQL helpers over pymysql: connect to a lab node, query to dicts, read status."""

from __future__ import annotations

from typing import Any, Iterable

import pymysql
import pymysql.cursors

from benchlib.lab.layout import NodePlan
from benchlib.lab.secrets import Credentials


def connect(node: NodePlan, creds: Credentials, *, user: str = "root", timeout: float = 5.0, tcp: bool = False,
            database: str | None = None) -> pymysql.connections.Connection:
    """Connect to ``node``: over its unix socket (default) or over TCP at its listen address."""
    kwargs: dict[str, Any] = dict(
        user=user,
        password=creds.password(user),
        connect_timeout=timeout,
        read_timeout=max(timeout, 60),
        write_timeout=max(timeout, 60),
        autocommit=True,
        cursorclass=pymysql.cursors.DictCursor,
        database=database,
    )
    if tcp:
        kwargs.update(host=node.listen_host, port=node.port)
    else:
        kwargs.update(unix_socket=str(node.socket))
    return pymysql.connect(**kwargs)


def query(conn, sql: str, args: Iterable[Any] | None = None) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def execute(conn, *statements: str) -> None:
    with conn.cursor() as cur:
        for stmt in statements:
            cur.execute(stmt)


def scalar(conn, sql: str, args: Iterable[Any] | None = None) -> Any:
    rows = query(conn, sql, args)
    return next(iter(rows[0].values())) if rows else None


def global_status(conn, prefix: str) -> dict[str, str]:
    """``SHOW GLOBAL STATUS LIKE 'prefix%'`` as a dict (lower-case names)."""
    return {r["Variable_name"].lower(): r["Value"] for r in query(conn, "SHOW GLOBAL STATUS LIKE %s", (prefix + "%",))}


def global_variables(conn, names: Iterable[str]) -> dict[str, str]:
    names = list(names)
    marks = ",".join(["%s"] * len(names))
    # SHOW ... WHERE works on MariaDB and on MySQL 8 (which has no information_schema.GLOBAL_VARIABLES)
    rows = query(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", [n.lower() for n in names])
    return {r["Variable_name"].lower(): r["Value"] for r in rows}


def slave_status(conn) -> dict[str, Any] | None:
    rows = query(conn, "SHOW SLAVE STATUS")
    return rows[0] if rows else None
