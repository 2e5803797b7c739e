"""The history axis as benchlib registers it (the entry point ``benchlib.axes.history.axis:AXIS``)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.history.checker.history import HISTORY
from benchlib.axes.history import HistoryRecord, HistorySpec
from benchlib.axis import Axis, AxisAnalysis, AxisRun, CaptionTable, ChartTable, RunContext

__all__ = ["AXIS", "HistoryAxis"]


class HistoryAxis(Axis):
    """List-append transactions beside the load, checked for isolation anomalies, under each isolation level."""

    name = "history"
    title = "isolation anomalies per isolation level"
    order = 60
    spec = HistorySpec
    record = HistoryRecord
    frames = (HISTORY,)
    section = "history"

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        from benchlib.axes.history.plan import variants

        return variants(spec.axes[self.name], lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.history.run import HistoryRun

        return HistoryRun(ctx)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.history.analysis import HistoryAnalysis

        return HistoryAnalysis(a)

    def charts(self) -> tuple[ChartTable, CaptionTable]:
        from benchlib.axes.history import charts

        return charts.CHARTS, charts.CAPTIONS

    def setting_words(self, params: Any) -> dict[str, str]:
        level = params.get("isolation")
        if level is None or level != level:
            return {}
        return {"isolation": str(level).replace("-", " ").upper() if level != "snapshot-isolation"
                else "snapshot isolation"}

    def report(self, a: Any, said: list[str]) -> str | None:
        from benchlib.axes.history.report import section

        return section(a, said)


AXIS = HistoryAxis()
