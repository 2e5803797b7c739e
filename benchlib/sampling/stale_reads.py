"""The stale-read probe: one writer, a reader on every other node, one clock (sysbench cannot tag its reads).

The writer commits a monotonic sequence into one row on the write node at ``write_rate`` per second and notes, on the
sampler's clock, when each commit was sent and when it returned (acknowledged). A reader per other node reads the row
at ``read_rate`` per second under the cluster's read consistency setting (``benchlib.systems.consistency``: a session
setting, or a causal wait for the writer's last acknowledged GTID before the read). Per read: when it was sent and
returned, the causal wait, the value read and the last value acknowledged before the read was sent. Whether a read is
stale, by how many versions and by how long, is Jepsen's definition (``benchlib.analysis.staleness``), computed from
these raw rows when the frames are built. A read that fails (a causal wait that timed out, a member refusing reads)
is kept with its error, never dropped.

Reads come at a fixed rate, each at a random moment of its period, so that they see every phase of the writer's
commits alike. Readers under a setting whose reads may wait (causal, GR BEFORE, Galera's read bit) have a thread
each: a wait blocks its reader only, never the others' fixed rate. Readers that never wait share one thread and read
in turn at each tick (a thread's wake-up costs more CPU here than a read: 0.99% of a core against 1.57% with a thread
each, bench/). The probe's own table is in the consistency audit's list.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import pandas as pd
import pymysql

from benchlib.analysis.staleness import classify
from benchlib.sampling.probe import Connect, Probe
from benchlib.schema import PROBE_READS, PROBE_WRITES
from benchlib.systems.consistency import ReadSetting

__all__ = ["ProbeOptions", "StaleReadProbe", "TABLE"]

TABLE = "benchlib.stale_probe"
WRITE = f"UPDATE {TABLE} SET seq = %s WHERE id = 1"
READ = f"SELECT seq FROM {TABLE} WHERE id = 1"


@dataclass(frozen=True)
class ProbeOptions:
    """The probe's rates (campaign parameters) and the read consistency its sessions use."""

    write_rate: float = 10.0  # commits per second on the write node
    read_rate: float = 10.0  # reads per second on each other node (10 and 10: about 1% of a core, bench/)
    consistency: str | None = None  # a name of benchlib.systems.consistency (None: the system's default)
    wait_timeout_s: float = 10.0  # a causal wait longer than this is a failed read
    router: bool = False  # a reader through the group's MySQL Router read-only port too (node "router:ro")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Log:
    writes: list[tuple] = field(default_factory=list)  # (seq, t_sent, t_acked, error)
    reads: list[tuple] = field(default_factory=list)  # (node, t_sent, t_waited, t_returned, value, acked, error)
    acked: int = 0  # the last value acknowledged
    token: str = ""  # the writer's token after it (causal reads)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _error(exc: BaseException) -> str:
    if isinstance(exc, pymysql.MySQLError) and len(exc.args) > 1:
        return f"{exc.args[1]} (error {exc.args[0]})"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _Writer(Probe):
    def __init__(self, connect: Connect, node: str, log: _Log, clock: Callable[[], float], setting: ReadSetting,
                 rate: float):
        self.name, self.interval_s = f"stale-writer:{node}", 1.0 / rate
        self.connect, self.node, self.log, self.clock, self.setting = connect, node, log, clock, setting

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        self.cur = self.conn.cursor(pymysql.cursors.Cursor)
        for statement in self.setting.writer:
            self.cur.execute(statement)
        self.cur.execute(f"SELECT seq FROM {TABLE} WHERE id = 1")
        self.seq = int(self.cur.fetchone()[0])
        self.log.acked = self.seq

    def sample(self, t: float) -> None:
        self.seq += 1
        sent = self.clock()
        try:
            self.cur.execute(WRITE, (self.seq,))
            acked = self.clock()  # the commit returned: the token's query after it is not part of the write
            token = self.setting.token(self.conn) if self.setting.token else ""
        except (pymysql.MySQLError, OSError) as exc:
            self.log.writes.append((self.seq, sent, float("nan"), _error(exc)))
            self.seq -= 1  # not acknowledged: the next commit writes the same value again
            self._reconnect()
            return
        with self.log.lock:
            self.log.writes.append((self.seq, sent, acked, ""))
            self.log.acked, self.log.token = self.seq, token

    def _reconnect(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass
        try:
            self.setup()
        except (pymysql.MySQLError, OSError):
            pass  # the next commit fails too, and says why

    def close(self) -> None:
        self.conn.close()


class _RandomPhase(Probe):
    """A fixed rate, each tick at a random moment of its period (stratified sampling): the reads fall at every phase
    of the writer's fixed-rate commits alike, so the stale fraction estimates the share of time a node is behind
    (a fixed phase would miss every lag shorter than it), and the count stays one a period."""

    def _schedule(self, rate: float, seed: int) -> None:
        self.interval_s = 1.0 / rate
        self.rng = random.Random(seed)
        self.offset_s = self._phase = self.rng.uniform(0, self.interval_s)  # the first period starts with the sampler

    def next_due(self, last_due: float, now: float) -> float:
        period = last_due - self._phase  # the start of the period just sampled (ticks skipped move it by whole ones)
        self._phase = self.rng.uniform(0, self.interval_s)
        return period + self.interval_s + self._phase


class _Reader(_RandomPhase):
    def __init__(self, connect: Connect, node: str, log: _Log, clock: Callable[[], float], setting: ReadSetting,
                 rate: float, timeout: float, seed: int):
        self.name = f"stale-reader:{node}"
        self._schedule(rate, seed)
        self.connect, self.node, self.log, self.clock, self.setting = connect, node, log, clock, setting
        self.timeout = timeout
        self.conn: Any = None

    def setup(self) -> None:
        self.conn = self.connect(self.node)
        self.cur = self.conn.cursor(pymysql.cursors.Cursor)
        for statement in self.setting.reader:
            self.cur.execute(statement)

    def sample(self, t: float) -> None:
        with self.log.lock:
            acked, token = self.log.acked, self.log.token
        sent = self.clock()
        waited = sent
        try:
            if self.conn is None:
                self.setup()
            if self.setting.wait is not None:
                if not self.setting.wait(self.conn, token, self.timeout):
                    raise TimeoutError(f"the causal wait for the writer's last commit timed out after "
                                       f"{self.timeout:g} s")
                waited = self.clock()
            self.cur.execute(READ)
            row = self.cur.fetchone()
            value = int(row[0]) if row else None
            error = "" if row else "the probe's row is not there"
        except (pymysql.MySQLError, OSError, TimeoutError) as exc:
            value, error = None, _error(exc)
            self._drop()  # the next read starts a new session
        self.log.reads.append((self.node, sent, waited, self.clock(), value, acked, error))

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None  # the next read connects anew

    def close(self) -> None:
        self._drop()


class _Readers(_RandomPhase):
    """Readers whose reads never wait, on one thread: at each tick every node is read in turn (one wake-up a tick for
    all of them: a wake-up costs more CPU here than a read)."""

    def __init__(self, readers: list[_Reader], rate: float, seed: int):
        self.name, self.readers = f"stale-readers:{','.join(r.node for r in readers)}", readers
        self._schedule(rate, seed)

    def setup(self) -> None:
        for r in self.readers:
            try:
                r.setup()
            except (pymysql.MySQLError, OSError):
                r.conn = None  # its reads connect again, and each says why it failed

    def sample(self, t: float) -> None:
        for r in self.readers:
            r.sample(t)

    def close(self) -> None:
        for r in self.readers:
            r.close()


class StaleReadProbe:
    """The writer on ``writer`` and a reader on each of ``readers``, under ``setting``."""

    def __init__(self, connect: Connect, writer: str, readers: list[str], setting: ReadSetting,
                 options: ProbeOptions, clock: Callable[[], float]):
        self.connect, self.writer_node, self.setting, self.options = connect, writer, setting, options
        self.log = _Log()
        self.writer = _Writer(connect, writer, self.log, clock, setting, options.write_rate)
        # readers whose reads may wait have a thread each, so that one waiting never holds back another's fixed
        # rate; readers that never wait share one (``_Readers``); each at a random moment of every period
        self.readers = [_Reader(connect, r, self.log, clock, setting, options.read_rate, options.wait_timeout_s, i + 1)
                        for i, r in enumerate(readers)]
        self.reading: list[Probe] = (list(self.readers) if setting.waits or len(self.readers) < 2 else
                                     [_Readers(self.readers, options.read_rate, 0)])

    def prepare(self, timeout: float = 10.0) -> None:
        """Create the probe's table and row on the write node; wait until every reader's node has it."""
        conn = self.connect(self.writer_node)
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS benchlib")
                cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id TINYINT PRIMARY KEY, seq BIGINT NOT NULL) "
                            "ENGINE=InnoDB")
                cur.execute(f"INSERT IGNORE INTO {TABLE} VALUES (1, 0)")
        finally:
            conn.close()
        deadline = time.monotonic() + timeout
        for reader in self.readers:
            conn = self.connect(reader.node)
            try:
                with conn.cursor() as cur:
                    while True:
                        try:
                            cur.execute(READ)
                            if cur.fetchone():
                                break
                        except pymysql.err.ProgrammingError:
                            pass  # the table is on its way
                        if time.monotonic() > deadline:
                            break  # its reads will say so
                        time.sleep(0.02)
            finally:
                conn.close()

    @property
    def probes(self) -> list[Probe]:
        return [self.writer, *self.reading]

    def frames(self, origin: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(PROBE_WRITES, PROBE_READS), times relative to ``origin`` on the sampler's clock."""
        w = self.log.writes
        writes = PROBE_WRITES.frame({
            "seq": [r[0] for r in w],
            "t_sent_s": [r[1] - origin for r in w],
            "t_acked_s": [r[2] - origin for r in w],
            "write_ms": [(r[2] - r[1]) * 1000 for r in w],
            "error": [r[3] for r in w],
        })
        rd = self.log.reads
        raw = pd.DataFrame({
            "node": pd.Series([r[0] for r in rd], dtype="str"),
            "setting": pd.Series([self.setting.name] * len(rd), dtype="str"),
            "t_sent_s": pd.Series([r[1] - origin for r in rd], dtype="float64"),
            "t_returned_s": pd.Series([r[3] - origin for r in rd], dtype="float64"),
            "wait_ms": pd.Series([(r[2] - r[1]) * 1000 if self.setting.wait else float("nan") for r in rd],
                                 dtype="float64"),
            "value": pd.Series([r[4] for r in rd], dtype="Int64"),
            "acked_seq": pd.Series([r[5] for r in rd], dtype="int64"),
            "error": pd.Series([r[6] for r in rd], dtype="str"),
        })
        return writes, PROBE_READS.validate(classify(raw, writes))
