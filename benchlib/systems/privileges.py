"""What each probe needs, as the grant to add: a refused probe query becomes one message naming the grant (or,
for a refused login, the password variable to check)."""

from __future__ import annotations

__all__ = ["ACCESS_DENIED", "GRANTS", "WRONG_PASSWORD", "privilege_message"]

#: what each probe needs, as the grant to add
GRANTS = {
    "replica_status": "GRANT REPLICATION CLIENT ON *.* TO {user}   (MariaDB 10.5+: GRANT SLAVE MONITOR ON *.* TO {user})",
    "performance_schema": "GRANT SELECT ON performance_schema.{table} TO {user}",
    "heartbeat_read": "GRANT SELECT ON {schema}.heartbeat TO {user}",
    "heartbeat_write": "GRANT INSERT, UPDATE ON {schema}.heartbeat TO {writer}",
    "schemas": "GRANT ALL PRIVILEGES ON benchlib.* TO {user}; GRANT ALL PRIVILEGES ON sbtest.* TO {user}",
    "set_global": "GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO {user}   (MariaDB, MySQL 5.7: SUPER)",
}
ACCESS_DENIED = {1044, 1142, 1143, 1227, 1370, 3530}  # DB, table, column, specific privilege, routine, role
WRONG_PASSWORD = 1045


def privilege_message(errno: int, server_message: str, *, node: str, probe: str, user: str, **names: str) -> str:
    """One message for a failed probe query: the grant to add for access denied, the password variable to
    check for a refused login; otherwise the server's message."""
    if errno == WRONG_PASSWORD:
        return (f"{node}: the server refused the login of {user!r} (wrong password or host): check the password "
                f"in the environment variable the lab spec names for {node}")
    if errno in ACCESS_DENIED and probe in GRANTS:
        grant = GRANTS[probe].format(user=user, writer=names.get("writer", user), table=names.get("table", "*"),
                                     schema=names.get("schema", "benchlib"))
        return f"{node}: {user!r} lacks a privilege the {probe} probe needs ({server_message}); add it: {grant}"
    return f"{node}: {probe} failed: {server_message}"
