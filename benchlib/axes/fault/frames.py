"""The frames a fault run writes: the ledger writer's writes, its reader's reads, the fault's events (registered with
the fault axis, ``FaultAxis.frames``)."""

from __future__ import annotations

from benchlib.schema import Column, Schema

__all__ = ["FAULT_EVENTS", "LEDGER", "LEDGER_READS"]

LEDGER = Schema("ledger", {
    "seq": Column("int64", "the write's unique id within the run (the ledger writer's sequence)"),
    "node": Column("str", "the node the writer sent it to (the proxy's name for a writer behind one)"),
    "via": Column("str", "direct (the writer follows the failover itself) or the proxy it writes through (haproxy)"),
    "t_sent_s": Column("float64", "sampler clock when the INSERT was sent, s"),
    "t_done_s": Column("float64", "sampler clock when it returned or failed, s"),
    "outcome": Column("str", "acked (the commit returned), failed (refused before it could commit: the server "
                             "said no, or no connection) or unknown (the connection was lost or timed out mid-commit)"),
    "error": Column("str", "why it was not acknowledged (empty: acked)"),
    "present": Column("boolean", "after the heal: the write is in the surviving primary's ledger (missing: not "
                                 "audited)"),
})
#: a fault run's ledger reader: the newest ledger write visible beside the writer, read over and over
LEDGER_READS = Schema("ledger_reads", {
    "node": Column("str", "the node read (the one the writer writes to: the client's side of a cut)"),
    "t_sent_s": Column("float64", "sampler clock when the read was sent, s"),
    "t_done_s": Column("float64", "sampler clock when it returned or failed, s"),
    "value": Column("Int64", "the newest ledger write it saw (missing: the read failed)"),
    "error": Column("str", "why the read failed (empty: it returned)"),
    "lost": Column("boolean", "after the heal: the write it returned is absent from the surviving primary (a read "
                              "of a write the failover lost); missing when not audited or the read failed"),
})

FAULT_EVENTS = Schema("fault_events", {
    "t_s": Column("float64", "sampler clock of the event, s"),
    "event": Column("str", "fault, released, primary (a node took the writes), step (a promotion step), "
                           "writer_moved (the ledger writer switched node), load_restarted, heal"),
    "node": Column("str", "the node the event is about (empty: the cluster)"),
    "detail": Column("str", "what happened, in words"),
})
