"""Small SQL helpers over a pymysql connection (DictCursor): query to dicts, read status and variables."""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["query", "execute", "scalar", "global_status", "global_variables", "slave_status"]


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


def global_variables(conn, names: Iterable[str] | None = None) -> dict[str, str]:
    """Global variables (lower-case names): the ones named, or all of them."""
    if names is None:
        rows = query(conn, "SHOW GLOBAL VARIABLES")
    else:
        names = list(names)
        marks = ",".join(["%s"] * len(names))
        # SHOW ... WHERE works on MariaDB and on MySQL 8 (which has no information_schema.GLOBAL_VARIABLES)
        rows = query(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", [n.lower() for n in names])
    return {r["Variable_name"].lower(): r["Value"] for r in rows}


def slave_status(conn) -> dict[str, Any] | None:
    rows = query(conn, "SHOW SLAVE STATUS")
    return rows[0] if rows else None
