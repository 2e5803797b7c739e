"""The history axis as benchlib registers it (the entry point ``benchlib.axes.history.axis:AXIS``)."""

from __future__ import annotations

from typing import Any

from benchlib.analysis.isolation.history import HISTORY
from benchlib.axes.history import HistoryRecord, HistorySpec, HistoryVariant, levels_of
from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.errors import SpecError

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
        table: HistorySpec = spec.axes[self.name]
        system = {c: lab.system_of(c) for c in clusters}
        for level in table.isolation:
            if not any(level in levels_of(system[c]) for c in clusters):
                raise SpecError(f"{source}: [history] isolation {level!r} is a level of none of the clusters "
                                f"{clusters}", hint="snapshot-isolation is MariaDB's innodb_snapshot_isolation")
        if table.on == "replicas" and not any(len(lab.nodes_of(c)) > 1 for c in clusters):
            raise SpecError(f"{source}: [history] on = \"replicas\", and no cluster of {clusters} has more than one "
                            "node", hint="on = \"write\" on a single server")
        return {c: [HistoryVariant(level, table.on, table) for level in table.isolation
                    if level in levels_of(system[c])] for c in clusters}

    def run(self, ctx: RunContext) -> AxisRun | None:
        from benchlib.axes.history.run import HistoryRun

        return HistoryRun(ctx)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.history.analysis import HistoryAnalysis

        return HistoryAnalysis(a)

    def report(self, a: Any, said: list[str]) -> str | None:
        from benchlib.axes.history.report import section

        return section(a, said)


AXIS = HistoryAxis()
