"""The read split's planning: other nodes to read on, and the oltp dataset (sbtest1..N) to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchlib.errors import SpecError
from benchlib.sysbench.options import WORKLOADS
from benchlib.schema import Cell

__all__ = ["ReadSplitVariant", "variants"]


@dataclass(frozen=True)
class ReadSplitVariant:
    threads: int  # sysbench threads reading on each node besides the write node

    def identity(self) -> list[Any]:
        return [{"read_threads": self.threads}]

    def params(self) -> dict[str, Cell]:
        return {"read_threads": self.threads}


def variants(spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[ReadSplitVariant]]:
    alone = [c for c in clusters if lab.clusters[c].node_count < 2]
    if alone:
        raise SpecError(f"{source}: load.read_threads reads on the nodes besides the write node; cluster {alone[0]} "
                        "has one node", hint="leave it out of matrix.clusters, or set load.read_threads = 0")
    wide = [w for w in spec.load.workloads if WORKLOADS[w].dataset != "oltp"]
    if wide:
        raise SpecError(f"{source}: load.read_threads reads the sbtest tables; workload {wide[0]} writes others",
                        hint="an oltp_* workload (oltp_write_only is the usual write side of a read split)")
    return {c: [ReadSplitVariant(spec.load.read_threads)] for c in clusters}
