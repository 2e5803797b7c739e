"""The ledger writer: a client that never stops writing, and remembers every write's outcome (a fault run's measure).

At ``rate`` per second it inserts one row with a unique id into ``benchlib.ledger`` on the node that takes the
writes now, and records, on the sampler's clock, when it sent it, when it returned and how it ended:

- **acked**: the commit returned;
- **failed**: refused before it could commit (no connection, or the server said no: read only, not in the primary
  component, the group lost its majority);
- **unknown**: the connection was lost or the reply did not come within ``timeout_s`` (a frozen or cut-off node):
  it may have committed.

After a failure it asks the cluster at once which node takes writes now (``benchlib.systems.failover``: the group's
primary, a Synced Galera node, or the replica a lab promoted, which the fault run tells it through ``Router.set``)
and writes there from the next tick. What the surviving nodes hold is audited after the heal (the fault run):
an acknowledged write that is absent is **lost**; a failed or unknown one that is present is a phantom (allowed).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pandas as pd
import pymysql

from benchlib.sampling.probe import Probe
from benchlib.axes.fault.frames import LEDGER, LEDGER_READS
from benchlib.systems.failover import Failover

__all__ = ["LedgerReader", "LedgerWriter", "Router", "TABLE", "create_table"]

TABLE = "benchlib.ledger"
LOST_CONNECTION = {2006, 2013, 2055}  # the statement may or may not have committed


def create_table(conn, run: str) -> None:
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS benchlib")
        cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (run VARCHAR(96) NOT NULL, seq BIGINT NOT NULL, "
                    "t_sent DOUBLE NOT NULL, PRIMARY KEY (run, seq))")
        cur.execute(f"DELETE FROM {TABLE} WHERE run = %s", (run,))


@dataclass
class Router:
    """Where the writes go now: the node the cluster's failover names, or the one a lab promoted."""

    node: str
    nodes: Sequence[Any]  # NodeInfo-like: name, host, port
    failover: Failover | None
    connect: Callable[..., Any]
    moves: list[tuple[float, str, str]] = field(default_factory=list)  # (t, node, why)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the client is on its node's side of a cut (an application server beside a primary cut off from its cluster):
    #: it reaches no other node, so a move waits (``pending``) until the cut ends (``unhold``)
    held: bool = False
    pending: tuple[str, float, str] | None = None

    def set(self, node: str, t: float, why: str) -> None:
        with self.lock:
            if self.held:
                self.pending = (node, t, why)
            elif node != self.node:
                self.node = node
                self.moves.append((t, node, why))

    def hold(self) -> None:
        with self.lock:
            self.held = True

    def unhold(self, t: float) -> None:
        """The cut ended: the client reaches every node again, and takes the move that waited."""
        with self.lock:
            self.held, pending, self.pending = False, self.pending, None
        if pending is not None:
            self.set(pending[0], t, pending[2] + " (after the cut)")

    def locate(self, t_now: Callable[[], float]) -> str | None:
        """Ask the cluster which node takes writes now; move there when it is another one."""
        if self.failover is None or self.held:
            return self.node
        found = self.failover.locate(lambda n: self.connect(n, timeout=1.0), self.nodes, self.node)
        if found is not None:
            self.set(found, t_now(), f"{self.failover.how}: {found} takes the writes")
        return found


def _error(exc: BaseException) -> tuple[str, str]:
    """(outcome, words) of a write that raised."""
    if isinstance(exc, pymysql.MySQLError) and exc.args and isinstance(exc.args[0], int):
        words = f"{exc.args[1] if len(exc.args) > 1 else ''} (error {exc.args[0]})".strip()
        return ("unknown" if exc.args[0] in LOST_CONNECTION else "failed"), words
    return "failed", (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


class _Routed(Probe):
    """A probe with one connection to the node its router names, timed out after ``timeout_s`` on every read."""

    router: Router
    timeout_s: float
    conn: Any = None
    conn_node: str | None = None

    def _open(self, node: str) -> None:
        self.conn, self.conn_node = None, node
        conn = self.router.connect(node, timeout=self.timeout_s)
        conn._read_timeout = conn._write_timeout = self.timeout_s  # pymysql applies them on every socket read/write
        self.conn = conn

    def _connected(self, node: str) -> Any:
        """The connection to ``node``: the open one, or a new one when there is none or the router moved on."""
        if self.conn is None or self.conn_node != node:
            self._drop()
            self._open(node)
        return self.conn

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - a dead connection
                pass
        self.conn = None


class LedgerWriter(_Routed):
    """See the module docstring. Its own lane: a write that hangs blocks nothing else."""

    def __init__(self, router: Router, run: str, clock: Callable[[], float], rate: float = 50.0,
                 timeout_s: float = 1.0, via: str = "direct"):
        self.name, self.interval_s, self.lane, self.via = f"ledger-writer:{via}", 1.0 / rate, None, via
        self.router, self.run, self.clock, self.timeout_s = router, run, clock, timeout_s
        self.rows: list[tuple] = []  # (seq, node, t_sent, t_done, outcome, error)
        self.seq = 0
        self.last_ack = float("nan")
        self.lock = threading.Lock()

    def setup(self) -> None:
        self._open(self.router.node)

    def sample(self, t: float) -> None:
        self.seq += 1
        node = self.router.node
        sent = self.clock()
        try:
            with self._connected(node).cursor() as cur:
                cur.execute(f"INSERT INTO {TABLE} (run, seq, t_sent) VALUES (%s, %s, %s)", (self.run, self.seq, sent))
        except Exception as exc:  # noqa: BLE001 - every outcome is a row, never an error of the sampler
            outcome, words = _error(exc)
            if self.conn is None:
                outcome = "failed"  # it never left: no connection
            self._add(node, sent, outcome, words)
            self._drop()
            try:
                self.router.locate(self.clock)
            except Exception:  # noqa: BLE001
                pass
            return
        self._add(node, sent, "acked", "")

    def _add(self, node: str, sent: float, outcome: str, error: str) -> None:
        done = self.clock()
        with self.lock:
            self.rows.append((self.seq, node, sent, done, outcome, error))
            if outcome == "acked":
                self.last_ack = done

    def acked_since(self, t: float) -> bool:
        return self.last_ack == self.last_ack and self.last_ack > t

    def close(self) -> None:
        self._drop()

    def frame(self, origin: float, present: set[int] | None = None) -> pd.DataFrame:
        """The LEDGER frame, times relative to ``origin``; ``present``: the seqs the audit found (None: not audited)."""
        with self.lock:
            rows = list(self.rows)
        return LEDGER.frame({
            "seq": [r[0] for r in rows], "node": [r[1] for r in rows], "via": [self.via] * len(rows),
            "t_sent_s": [r[2] - origin for r in rows], "t_done_s": [r[3] - origin for r in rows],
            "outcome": [r[4] for r in rows], "error": [r[5] for r in rows],
            "present": [None if present is None else r[0] in present for r in rows],
        })


class LedgerReader(_Routed):
    """A client beside the ledger writer that reads, ``rate`` times a second, the newest ledger write it can see on
    the node the writer writes to (its side of a cut). After the heal, a read that returned a write the surviving
    primary lacks read a write the failover lost: AFTER_COMMIT semi-sync lets other clients read a commit before a
    replica has it; AFTER_SYNC does not."""

    def __init__(self, router: Router, run: str, clock: Callable[[], float], rate: float = 20.0,
                 timeout_s: float = 1.0):
        self.name, self.interval_s, self.lane = "ledger-reader", 1.0 / rate, None
        self.router, self.run, self.clock, self.timeout_s = router, run, clock, timeout_s
        self.rows: list[tuple] = []  # (node, t_sent, t_done, value or None, error)
        self.lock = threading.Lock()

    def sample(self, t: float) -> None:
        node = self.router.node
        sent = self.clock()
        try:
            with self._connected(node).cursor() as cur:
                cur.execute(f"SELECT MAX(seq) AS v FROM {TABLE} WHERE run = %s", (self.run,))
                row = cur.fetchone()
            value, error = (int(row["v"]) if row and row["v"] is not None else 0), ""
        except Exception as exc:  # noqa: BLE001 - every outcome is a row
            value, error = None, _error(exc)[1]
            self._drop()
        with self.lock:
            self.rows.append((node, sent, self.clock(), value, error))

    def close(self) -> None:
        self._drop()

    def frame(self, origin: float, present: set[int] | None = None) -> pd.DataFrame:
        """The LEDGER_READS frame; ``present``: the seqs the survivor holds (None: not audited)."""
        with self.lock:
            rows = list(self.rows)
        return LEDGER_READS.frame({
            "node": [r[0] for r in rows], "t_sent_s": [r[1] - origin for r in rows],
            "t_done_s": [r[2] - origin for r in rows], "value": [r[3] for r in rows], "error": [r[4] for r in rows],
            "lost": [None if present is None or r[3] is None or r[3] == 0 else r[3] not in present for r in rows],
        })
