"""What the server's error numbers a benchmark meets mean, in words a report can print beside the count."""

from __future__ import annotations

__all__ = ["MEANING", "said"]

MEANING: dict[int, str] = {
    1020: "record changed since it was read (snapshot isolation)",
    1047: "the node is not ready (a Galera node outside the primary component)",
    1146: "no such table on that node",
    1180: "rolled back at commit",
    1205: "lock wait timeout",
    1213: "deadlock; on Galera also a certification failure",
    2003: "cannot connect to the server",
    2013: "connection lost during the statement",
    3098: "refused by a plug-in: Group Replication's update-everywhere checks refuse SERIALIZABLE in multi-primary "
          "mode",
    3101: "rolled back at commit: Group Replication certification failed",
}


def said(code: int | str, count: int) -> str:
    """'1205: 12 (lock wait timeout)'; a number not in ``MEANING`` bare."""
    words = MEANING.get(int(code)) if str(code).isdigit() else None
    return f"{code}: {count:,}" + (f" ({words})" if words else "")
