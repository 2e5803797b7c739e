"""Connect to a lab node; the SQL helpers every system uses are re-exported from ``benchlib.systems.sql``."""

from __future__ import annotations

from typing import Any

import pymysql
import pymysql.cursors

from benchlib.lab.layout import NodePlan
from benchlib.lab.secrets import Credentials
from benchlib.systems.sql import execute, global_status, global_variables, query, scalar, slave_status

__all__ = ["connect", "execute", "global_status", "global_variables", "query", "scalar", "slave_status"]


def connect(node: NodePlan, creds: Credentials, *, user: str = "root", timeout: float = 5.0, tcp: bool = False,
            database: str | None = None, read_timeout: float = 60.0) -> pymysql.connections.Connection:
    """Connect to ``node``: over its unix socket (default) or over TCP at its listen address; a statement that
    answers nothing for ``read_timeout`` seconds loses the connection."""
    kwargs: dict[str, Any] = dict(
        user=user,
        password=creds.password(user),
        connect_timeout=timeout,
        read_timeout=max(timeout, read_timeout),
        write_timeout=max(timeout, 60),
        autocommit=True,
        cursorclass=pymysql.cursors.DictCursor,
        database=database,
    )
    if tcp:
        kwargs.update(host=node.listen_host, port=node.port)
    else:
        # a unix socket is a secure channel already: no TLS (pymysql would build a TLS context for every
        # connection, 16 ms of loading the system's certificates, and a run opens about fifteen)
        kwargs.update(unix_socket=str(node.socket), ssl_disabled=True)
    return pymysql.connect(**kwargs)
