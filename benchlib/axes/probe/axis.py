"""The probe axis as benchlib registers it (the entry point ``benchlib.axes.probe.axis:AXIS``): what it has,
and where its planner, run hook, analysis, charts and report are (imported when used)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.probe import ProbeSpec, _facts
from benchlib.axis import Axis, AxisAnalysis, AxisRun, CaptionTable, ChartTable, RunContext
from benchlib.axes.probe import ProbeRecord
from benchlib.schema import Cell

__all__ = ["AXIS", "ProbeAxis"]


class ProbeAxis(Axis):
    """The stale-read probe beside every run, and its read consistency axis."""

    name = "probe"
    title = "stale reads per read consistency"
    order = 10
    spec = ProbeSpec
    facts_columns = ("read_consistency", "default_consistency")
    record = ProbeRecord
    section = "consistency"
    notebook = "consistency"

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        from benchlib.axes.probe.plan import variants

        return variants(spec, lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.probe.run import hook

        return hook(ctx)

    def facts(self, record: ProbeRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.probe.analysis import ProbeAnalysis

        return ProbeAnalysis(a)

    def charts(self) -> tuple[ChartTable, CaptionTable]:
        from benchlib.axes.probe import charts

        return charts.CHARTS, charts.CAPTIONS

    def report(self, a: Any, said: list[str]) -> str | None:
        from benchlib.axes.probe.report import section

        return section(a, said)


AXIS = ProbeAxis()
