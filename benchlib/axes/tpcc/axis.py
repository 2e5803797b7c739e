"""The TPC-C-like workloads' axis as benchlib registers it (the entry point ``benchlib.axes.tpcc.axis:AXIS``)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.tpcc import FACTS, TpccPlan, TpccRecord, _facts
from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.schema import Cell
from benchlib.workloads.tpcc import MIXES, TPCC_ERRORS, TPCC_LATENCY, TPCC_ORDERS, TPCC_TYPES

__all__ = ["AXIS", "TpccAxis"]


class TpccAxis(Axis):
    """What a TPC-C-like run did by transaction type, the server's new orders, and the consistency conditions."""

    name = "tpcc"
    title = "the TPC-C-like mix"
    order = 65
    asked = "a TPC-C-like workload in load.workloads (tpcc_like, tpcc_like_23)"
    facts_columns = FACTS
    record = TpccRecord
    frames = (TPCC_TYPES, TPCC_ERRORS, TPCC_LATENCY, TPCC_ORDERS)

    def active(self, spec: Any) -> bool:
        return any(w in MIXES for w in spec.load.workloads)

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        return {c: [TpccPlan()] for c in clusters}

    def run(self, ctx: RunContext) -> AxisRun | None:
        if ctx.options.workload not in MIXES:
            return None
        from benchlib.axes.tpcc.run import TpccRun

        return TpccRun(ctx)

    def facts(self, record: TpccRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.tpcc.analysis import TpccAnalysis

        return TpccAnalysis(a)


AXIS = TpccAxis()
