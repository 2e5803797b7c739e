"""The stall axis as benchlib registers it (the entry point ``benchlib.axes.stall.axis:AXIS``): what it has,
and where its planner, run hook, analysis, charts and report are (imported when used)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.stall import StallRecord, StallSpec, _facts
from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.schema import Cell

__all__ = ["AXIS", "StallAxis"]


class StallAxis(Axis):
    """A replica's applier stalled under the load."""

    name = "stall"
    title = "a replica's applier stalled under the load"
    order = 50
    spec = StallSpec
    docs = "docs/campaigns/faults.md"
    excludes = {"fault": "[fault]"}
    apart = "a stall is measured beside the load, a fault run breaks nodes on purpose"
    facts_columns = ("stalled_node", "stalled_for_s", "stalled_from_s", "stalled_to_s")
    record = StallRecord

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        from benchlib.axes.stall.plan import variants

        return variants(spec, lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.stall.run import hook

        return hook(ctx)

    def facts(self, record: StallRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.stall.analysis import StallAnalysis

        return StallAnalysis(a)


AXIS = StallAxis()
