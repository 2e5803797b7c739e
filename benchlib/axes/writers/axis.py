"""The writers axis as benchlib registers it (the entry point ``benchlib.axes.writers.axis:AXIS``)."""

from __future__ import annotations

from typing import Any

from benchlib import catalogue
from benchlib.axes.writers import FACTS, WritersRecord, WritersSpec, WritersVariant, _facts
from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.errors import SpecError
from benchlib.schema import Cell
from benchlib.sysbench.options import WORKLOADS
from benchlib.workloads.counted import WRITER_ERRORS, WRITER_SECONDS

__all__ = ["AXIS", "WritersAxis", "why_not_everywhere"]


def why_not_everywhere(lab: Any, cluster: str) -> str | None:
    """Why not every node of ``cluster`` takes writes (None: each does)."""
    return catalogue.why_not_everywhere(lab.clusters[cluster])


class WritersAxis(Axis):
    """Writes on one node or on several, on shared or disjoint keys; conflicts counted by the clients and the
    servers."""

    name = "writers"
    title = "writes on several nodes"
    order = 55
    spec = WritersSpec
    excludes = {"fault": "[fault]", "read_split": "load.read_threads", "search": "sustained = true"}
    apart = ("writes on several nodes are measured as a throughput; faults, read splits and the search one writer "
             "at a time")
    facts_columns = FACTS
    record = WritersRecord
    frames = (WRITER_SECONDS, WRITER_ERRORS)

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        table: WritersSpec = spec.axes[self.name]
        out: dict[str, list[Any]] = {}
        if unknown := sorted(set(table.nodes_of) - set(clusters)):
            raise SpecError(f"{source}: [writers] nodes_of names {', '.join(unknown)}, not a cluster of this campaign",
                            hint=f"its clusters: {', '.join(clusters)}")
        if table.retry is not None and (mixes := [w for w in spec.load.workloads
                                                  if w in WORKLOADS and WORKLOADS[w].dataset == "tpcc"]):
            raise SpecError(f"{source}: [writers] retry = {table.retry} with the workload {mixes[0]}: the TPC-C-like "
                            "mix retries every transaction the server rolls back, a new one of the same type, as a "
                            "terminal would", hint="leave retry out, or give it to the oltp_* workloads alone")
        for c in clusters:
            size = len(lab.nodes_of(c))
            variants = []
            where = f"nodes_of.{c}" if c in table.nodes_of else "nodes"
            for n in table.nodes_of.get(c, table.nodes):
                if n > 1 and (why := why_not_everywhere(lab, c)) is not None:
                    raise SpecError(f"{source}: [writers] {where} = {n} on cluster {c}: {why}",
                                    hint="write on several nodes of a Galera or multi-primary Group Replication "
                                         f"cluster; this one on its write node alone: [writers] nodes_of = "
                                         f"{{ {c} = [1] }}")
                if n > size:
                    raise SpecError(f"{source}: [writers] {where} = {n}, but cluster {c} has {size} nodes")
                for keys in table.keys:
                    v = WritersVariant(n, keys if n > 1 else "shared", table.retry)
                    if v not in variants:  # one writer node on "disjoint" keys is one on all of them
                        variants.append(v)
            out[c] = variants
        return out

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.writers.run import WritersRun

        return WritersRun(ctx)

    def setting_words(self, params: Any) -> dict[str, str]:
        nodes = params.get("writer_nodes")
        if nodes is None or nodes != nodes:
            return {}
        n, retry = int(nodes), params.get("retry")
        return {"writer_nodes": f"{n} writer node{'s' if n != 1 else ''}",
                "writer_keys": ("" if n == 1 else "each on its own keys" if params.get("writer_keys") == "disjoint"
                                else "all on the same keys"),
                "retry": "" if retry is None or retry != retry else f"given up after {int(retry)} retries"}

    def facts(self, record: WritersRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.writers.analysis import WritersAnalysis

        return WritersAnalysis(a)


AXIS = WritersAxis()
