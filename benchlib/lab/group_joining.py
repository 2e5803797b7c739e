"""A group member's START GROUP_REPLICATION running on a thread of its own (``Joining``): the lab goes on once the
member is ONLINE, while the statement's trailing second (the plugin's own wait) finishes apart; the server refuses
another START or STOP on that member meanwhile, so whoever sends one waits for it first."""

from __future__ import annotations

import atexit
import threading
from typing import Any

import pymysql

from benchlib.lab import sql
from benchlib.lab.layout import NodePlan

__all__ = ["Joining"]


class Joining:
    """A START GROUP_REPLICATION of a joiner, running on a thread of its own with its own connection (closed when it
    returns): whether it still runs, and the server's error when it failed. The server refuses another START or STOP
    GROUP_REPLICATION on the member until it has returned: ``settle`` waits for it first, and so does this process
    before it exits."""

    RUNNING: dict[tuple[str, int], "Joining"] = {}  # (host, port) of the member -> its START still running

    def __init__(self, node: NodePlan, conn: Any):
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, args=(conn,), name="gr-join", daemon=True)
        Joining.RUNNING[(node.listen_host, node.port)] = self
        self.thread.start()

    @classmethod
    def settle(cls, nodes: list[NodePlan], timeout: float = 150.0) -> None:
        """Until the START GROUP_REPLICATION of each of ``nodes`` still running has returned."""
        for n in nodes:
            joining = cls.RUNNING.pop((n.listen_host, n.port), None)
            if joining is not None:
                joining.thread.join(timeout)

    @classmethod
    def settle_all(cls, timeout: float = 150.0) -> None:
        for joining in list(cls.RUNNING.values()):
            joining.thread.join(timeout)
        cls.RUNNING.clear()

    def _run(self, conn: Any) -> None:
        try:
            sql.execute(conn, "START GROUP_REPLICATION")
        except pymysql.err.MySQLError as exc:
            self.error = str(exc.args[-1] if exc.args else exc)
        finally:
            conn.close()

    def running(self) -> bool:
        return self.thread.is_alive()

    def failed(self) -> str | None:
        return None if self.running() else self.error


atexit.register(Joining.settle_all)  # a process that exits leaves no START GROUP_REPLICATION half done
