"""The tidy columns of every frame benchlib writes or reads, with units in their names.

One ``Schema`` per frame kind: column name -> pandas dtype (nullable where a value
may be missing), with a short description. ``validate`` checks a frame on write and
on read: missing or extra columns and wrong dtypes are errors naming the frame and
the column. Analysis code imports this module, never lab code.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchlib.errors import BenchlibError

#: one value of a table's cell: a run's parameter, a fact of the runs table, a setting's value
Cell = str | int | float | bool | None


class SchemaError(BenchlibError):
    """A frame whose columns or types do not match its schema."""


@dataclass(frozen=True)
class Column:
    dtype: str
    doc: str


@dataclass(frozen=True)
class Schema:
    name: str
    columns: dict[str, Column]

    def empty(self) -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=col.dtype) for c, col in self.columns.items()})

    def frame(self, rows: dict[str, list]) -> pd.DataFrame:
        """Build a frame from column lists, cast to the schema's dtypes, validated."""
        df = pd.DataFrame({c: pd.Series(rows[c], dtype=col.dtype) for c, col in self.columns.items()})
        return self.validate(df)

    def validate(self, df: pd.DataFrame, where: str = "") -> pd.DataFrame:
        at = f" ({where})" if where else ""
        missing = [c for c in self.columns if c not in df.columns]
        extra = [c for c in df.columns if c not in self.columns]
        if missing or extra:
            raise SchemaError(
                f"{self.name} frame{at}: " + "; ".join(
                    p for p in (f"missing columns {missing}" if missing else "",
                                f"unexpected columns {extra}" if extra else "") if p),
                hint=f"{self.name} columns: {', '.join(self.columns)}",
            )
        for c, col in self.columns.items():
            if str(df[c].dtype) != col.dtype:
                raise SchemaError(f"{self.name} frame{at}: column {c!r} is {df[c].dtype}, expected {col.dtype}")
        return df[list(self.columns)]


INTERVALS = Schema("intervals", {
    "t_s": Column("float64", "end of the reporting interval, seconds since the load started"),
    "threads": Column("int64", "client threads running"),
    "tps": Column("float64", "transactions per second in the interval"),
    "qps": Column("float64", "queries per second"),
    "reads_per_s": Column("float64", "read queries per second"),
    "writes_per_s": Column("float64", "write queries per second"),
    "other_per_s": Column("float64", "other queries per second (BEGIN, COMMIT ...)"),
    "pctl": Column("float64", "the latency percentile reported (e.g. 95)"),
    "lat_pctl_ms": Column("float64", "latency at that percentile in the interval, ms"),
    "err_per_s": Column("float64", "ignored errors per second (deadlocks, certification failures)"),
    "reconn_per_s": Column("float64", "reconnects per second"),
    "queue_length": Column("Int64", "open loop (--rate): events waiting in sysbench's queue; missing when closed"),
    "concurrency": Column("Int64", "open loop (--rate): events in progress; missing when closed"),
})

#: the read side of a read-split load (``[load] read_threads``): sysbench's per-second lines on each reading node
READ_INTERVALS = Schema("read_intervals", {
    "node": Column("str", "the node the reads ran on (every node but the write node)"),
    **{c: Column(col.dtype, col.doc.replace("transactions", "read-only transactions"))
       for c, col in INTERVALS.columns.items()},
})

HISTOGRAM = Schema("histogram", {
    "lat_ms": Column("float64", "latency bucket value, ms"),
    "count": Column("int64", "events in that bucket over the whole run"),
})

LAG = Schema("lag", {
    "node": Column("str", "the node the heartbeat was read on"),
    "seq": Column("int64", "heartbeat sequence number"),
    "t_commit_s": Column("float64", "sampler clock when the heartbeat's commit returned on the write node, s"),
    "t_seen_s": Column("float64", "sampler clock of the first poll that saw it on this node, s"),
    "t_prev_poll_s": Column("float64", "sampler clock of the poll before that (the heartbeat was not there "
                                       "yet); for a heartbeat never seen, the node's last poll, s"),
    "lag_ms": Column("float64", "t_seen - t_commit: an upper bound of the lag, one clock, no skew; "
                                "NaN: not seen by the node's last poll"),
    "lag_low_ms": Column("float64", "t_prev_poll - t_commit, floored at 0: a lower bound of the lag"),
    "apply_lag_ms": Column("float64", "the node's own apply time minus the commit time (MariaDB replicas, "
                                      "trigger-recorded; same-host clocks); NaN where not recorded"),
})

CLUSTER = Schema("cluster", {
    "t_s": Column("float64", "sampler clock, seconds"),
    "node": Column("str", "node the value belongs to"),
    "metric": Column("str", "what was read, e.g. trx_behind, wsrep_local_recv_queue, cpu_s"),
    "value": Column("float64", "the reading (counters raw, never differenced here)"),
    "counter": Column("bool", "a monotonic counter (rates come from differences) rather than a gauge"),
    "reset": Column("bool", "a counter lower than its previous reading: restarted, never to be differenced"),
})

PROBE_WRITES = Schema("probe_writes", {
    "seq": Column("int64", "the value the stale-read probe's writer committed (one row, a monotonic sequence)"),
    "t_sent_s": Column("float64", "sampler clock when the commit was sent, s"),
    "t_acked_s": Column("float64", "sampler clock when the commit returned (acknowledged), s; NaN: it failed"),
    "write_ms": Column("float64", "t_acked - t_sent, ms"),
    "error": Column("str", "why the commit failed (empty: acknowledged)"),
})

PROBE_READS = Schema("probe_reads", {
    "node": Column("str", "the node the stale-read probe read on"),
    "setting": Column("str", "the read consistency the reading session used (benchlib.systems.consistency)"),
    "t_sent_s": Column("float64", "sampler clock when the read (with its causal wait) was sent, s"),
    "t_returned_s": Column("float64", "sampler clock when it returned, s"),
    "wait_ms": Column("float64", "the causal wait before the read, ms (NaN: the setting has none)"),
    "value": Column("Int64", "the value read; missing when the read failed"),
    "acked_seq": Column("int64", "the writer's last acknowledged value when the read was sent"),
    "error": Column("str", "why the read failed (empty: it returned)"),
    "known_seq": Column("int64", "the newest value known before the read was sent: acknowledged, or returned by an "
                                 "earlier read (Jepsen's 'known')"),
    "stale": Column("boolean", "the read returned a value older than known_seq; missing when it failed"),
    "staleness_versions": Column("Int64", "known_seq - value (0: fresh); missing when the read failed"),
    "staleness_ms": Column("float64", "how long the first value the read missed had been known when it was sent, ms "
                                      "(0: fresh; NaN: failed)"),
    "read_ms": Column("float64", "t_returned - t_sent, ms: the causal wait included"),
})

#: every frame kind a run may write, by name (an axis registers its own: ``benchlib.axis.AXES``)
FRAMES: dict[str, Schema] = {"intervals": INTERVALS, "lag": LAG, "cluster": CLUSTER, "histogram": HISTOGRAM,
                             "probe_writes": PROBE_WRITES, "probe_reads": PROBE_READS,
                             "read_intervals": READ_INTERVALS}
