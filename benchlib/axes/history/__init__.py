"""Isolation anomalies, an axis (``[history]`` in a campaign spec): clients run short list-append transactions beside
every run's load (``benchlib.axes.history.run``), under one of ``isolation`` (each a configuration) on the nodes
``on`` names; each run's history is checked by benchlib's own checker (``benchlib.axes.history.checker``), and the
analysis gives each anomaly's rate per 100,000 committed transactions with its interval
(``benchlib.axes.history.analysis``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from benchlib import catalogue
from benchlib.axis import AxisRecord
from benchlib.schema import Cell
from benchlib.specs import Strict

__all__ = ["LEVELS", "HistoryRecord", "HistorySpec", "HistoryVariant", "levels_of", "session_of"]

#: the isolation levels a history may run under, by name: the session's level, and statements after it
LEVELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "read-committed": ("READ COMMITTED", ()),
    "repeatable-read": ("REPEATABLE READ", ()),
    "serializable": ("SERIALIZABLE", ()),
    # MariaDB 10.6.18+/10.11.8+: a REPEATABLE READ transaction that writes a row changed since its snapshot fails
    # with 1020 ("Record has changed since last read") instead of overwriting it
    "snapshot-isolation": ("REPEATABLE READ", ("SET SESSION innodb_snapshot_isolation = ON",)),
}


def levels_of(system: str) -> list[str]:
    """The isolation levels of ``system`` (snapshot-isolation where its server has innodb_snapshot_isolation)."""
    facts = catalogue.get(system)
    return [lv for lv in LEVELS if lv != "snapshot-isolation" or (facts is not None and facts.snapshot_isolation)]


def session_of(level: str) -> tuple[str, tuple[str, ...]]:
    return LEVELS[level]


class HistorySpec(Strict):
    """[history]: the clients beside the load and what they run under."""

    isolation: list[str] = Field(default=["repeatable-read"], min_length=1)  # each a configuration
    #: read consistency settings the clients' sessions run under (``benchlib.systems.consistency``: Galera's
    #: wsrep_sync_wait=N, Group Replication's EVENTUAL ... BEFORE_AND_AFTER), each a configuration of the clusters
    #: whose system has it; empty: each system's default. A causal read (a wait for a writer's token) is the
    #: stale-read probe's, not a history's
    consistency: list[str] = Field(default_factory=list)
    #: where the clients run: the write node; every node (a node that is read-only runs read-only transactions); or
    #: the write node and the replicas, the replicas read-only (reads from replicas)
    on: Literal["write", "every", "replicas"] = "write"
    clients: int = Field(default=4, ge=1, le=64)  # clients, spread over the nodes in turn
    rate: float = Field(default=50.0, gt=0, le=2000)  # transactions a second, each client
    keys: int = Field(default=8, ge=1, le=10_000)  # live keys the clients share (fewer: more contention)
    per_key: int = Field(default=32, ge=2, le=1000)  # appends before a key is retired
    max_ops: int = Field(default=4, ge=1, le=16)  # micro-operations a transaction, at most
    reads: float = Field(default=0.5, ge=0, le=1)  # the share of micro-operations that are reads

    @field_validator("isolation")
    @classmethod
    def _levels(cls, v: list[str]) -> list[str]:
        unknown = [x for x in v if x not in LEVELS]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not an isolation level here: {', '.join(LEVELS)}")
        return list(dict.fromkeys(v))


@dataclass(frozen=True)
class HistoryVariant:
    """One configuration's history: its isolation level and where its clients run."""

    isolation: str
    on: str
    options: Any  # the spec table
    consistency: str | None = None  # a read consistency setting (None: the system's default)
    statements: tuple[str, ...] = ()  # its session statements

    def identity(self) -> list[Any]:
        return [self.isolation, self.consistency]

    def params(self) -> dict[str, Cell]:
        return {"isolation": self.isolation, "history_consistency": self.consistency}


class HistoryRecord(AxisRecord):
    """What a run's manifest records (``history``): the level, where the clients ran and how, what was recorded."""

    isolation: str | None = None
    consistency: str | None = None  # the read consistency setting (None: the system's default)
    on: str | None = None
    clients: int | None = None
    rate: float | None = None
    keys: int | None = None
    per_key: int | None = None
    max_ops: int | None = None
    reads: float | None = None
    nodes: list[str] = Field(default_factory=list)  # each client's node, in order
    read_only: list[str] = Field(default_factory=list)  # the nodes whose clients only read
    transactions: int | None = None  # recorded
