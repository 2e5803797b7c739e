"""The hot-rows axis as benchlib registers it (the entry point ``benchlib.axes.hot_rows.axis:AXIS``)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.hot_rows import FACTS, HotRowsPlan, HotRowsRecord, HotRowsSpec, _facts
from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.schema import Cell

__all__ = ["AXIS", "HotRowsAxis"]


class HotRowsAxis(Axis):
    """Where each run's writes landed, against its key distribution."""

    name = "hot_rows"
    title = "where the writes landed"
    order = 60
    spec = HotRowsSpec
    asked = "load.distributions, or a [hot_rows] table"
    facts_columns = FACTS
    record = HotRowsRecord

    def active(self, spec: Any) -> bool:
        return spec.axes.get(self.name) is not None or bool(spec.load.distributions)

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        table = spec.axes.get(self.name) or HotRowsSpec()
        return {c: [HotRowsPlan(table.fraction, table.max_rows)] for c in clusters}

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.hot_rows.run import HotRowsRun

        return HotRowsRun(ctx)

    def facts(self, record: HotRowsRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.hot_rows.analysis import HotRowsAnalysis

        return HotRowsAnalysis(a)


AXIS = HotRowsAxis()
