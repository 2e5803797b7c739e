"""The read split axis as benchlib registers it (the entry point ``benchlib.axes.read_split.axis:AXIS``): what it has,
and where its planner, run hook, analysis, charts and report are (imported when used)."""

from __future__ import annotations

from typing import Any

from benchlib.axis import Axis, AxisRun, RunContext
from benchlib.axes.read_split import ReadSplitRecord

__all__ = ["AXIS", "ReadSplitAxis"]


class ReadSplitAxis(Axis):
    name = "read_split"
    title = "the read split"
    order = 20
    asked = "load.read_threads"
    record = ReadSplitRecord

    def active(self, spec: Any) -> bool:
        return bool(spec.load.read_threads > 0)

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        from benchlib.axes.read_split.plan import variants

        return variants(spec, lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.read_split.run import hook

        return hook(ctx)


AXIS = ReadSplitAxis()
