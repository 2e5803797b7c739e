"""Writes on several nodes, an axis (``[writers]`` in a campaign spec): each run's threads split over the cluster's
first ``nodes`` nodes (the same total; ``benchlib.sysbench.writers``), on the keys they share or each on its own range
(``keys = "disjoint"``; the TPC-C-like mix: each node its own home warehouses), a transaction the server rolls back
retried for ever or at most ``retry`` times. Each run counts what the clients saw by writer node and second
(``benchlib.workloads.counted``: commits, transactions given up, errors by number) and reads every writer node's own
counters just before the load and right after it, so that both counts of the conflicts stand side by side and the
record says which server counters add up to the errors the clients saw."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import Field, field_validator

from benchlib.axes.writers.reconcile import reconciled_nodes
from benchlib.axis import AxisRecord
from benchlib.schema import Cell
from benchlib.specs import Strict

__all__ = ["FACTS", "WritersRecord", "WritersSpec", "WritersVariant"]


class WritersSpec(Strict):
    """[writers]: where a campaign's writes go."""

    #: how many of each cluster's nodes take the writes, the write node first: each a configuration
    nodes: list[int] = Field(default=[1], min_length=1)
    #: "shared": every writer node on all the keys; "disjoint": each on its own range of them; each a configuration
    keys: list[Literal["shared", "disjoint"]] = Field(default=["shared"], min_length=1)
    #: retries of a transaction the server rolled back before the client gives it up (as an application with a
    #: bounded retry loop); left out: for ever, sysbench's own way (a retry draws its keys again)
    retry: int | None = Field(default=None, ge=0, le=1000)
    #: per cluster, its own ``nodes`` (``nodes_of = { async = [1] }``: an async baseline beside write-anywhere clusters
    #: written on 1 and 3 nodes, each compared with it)
    nodes_of: dict[str, list[int]] = Field(default_factory=dict)

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: list[int]) -> list[int]:
        if any(not 1 <= n <= 9 for n in v) or len(set(v)) < len(v) or not v:
            raise ValueError(f"each from 1 to 9 nodes, listed once: {v}")
        return v

    @field_validator("nodes_of")
    @classmethod
    def _nodes_of(cls, v: dict[str, list[int]]) -> dict[str, list[int]]:
        for cluster, nodes in v.items():
            try:
                cls._nodes(nodes)
            except ValueError as e:
                raise ValueError(f"{cluster}: {e}") from None
        return v


@dataclass(frozen=True)
class WritersVariant:
    """One configuration's writers: how many nodes, on which keys, retried how often."""

    nodes: int
    keys: str
    retry: int | None

    def identity(self) -> list[Any]:
        return [self.nodes, self.keys, self.retry]

    def params(self) -> dict[str, Cell]:
        return {"writer_nodes": self.nodes, "writer_keys": self.keys, "retry": self.retry}

    def load_options(self, opts: Any) -> Any:
        """The run's sysbench options with its writers."""
        return replace(opts, writers=self.nodes, disjoint=self.keys == "disjoint", retry=self.retry,
                       count_writes=True)


class WritersRecord(AxisRecord):
    """What a run's manifest records (``writers``): the writer nodes, the keys and the retries; per node what the
    clients counted (committed, given_up, errors and ``eNNNN`` by number) and the server's counters' increase over
    the load; per node the counters equal to the clients' errors (``reconciled``)."""

    nodes: list[str]
    keys: str
    retry: int | None = None
    client: dict[str, dict[str, int]] = {}
    server: dict[str, dict[str, float]] = {}
    reconciled: dict[str, list[str]] = {}
    why_not: str = ""


FACTS = ("writers_committed", "writers_given_up", "writers_errors", "writers_server_rollbacks", "writers_reconciled")


def _facts(r: WritersRecord | None) -> dict[str, Cell]:
    if r is None:
        return dict.fromkeys(FACTS)
    total = {k: sum(c.get(k, 0) for c in r.client.values()) for k in ("committed", "given_up", "errors")}
    rollbacks: list[float] = [s["Handler_rollback"] for s in r.server.values() if "Handler_rollback" in s]
    # made again from the counts (the comparisons improve; the counts are what the run measured)
    again = reconciled_nodes(r.client, r.server) if r.server else r.reconciled
    agreed = set.intersection(*(set(v) for v in again.values())) if again else set()
    return {"writers_committed": total["committed"], "writers_given_up": total["given_up"],
            "writers_errors": total["errors"],
            "writers_server_rollbacks": sum(rollbacks) if rollbacks and len(rollbacks) == len(r.server) else None,
            "writers_reconciled": ", ".join(sorted(agreed)) if again else None}
