"""The fault axis as benchlib registers it (the entry point ``benchlib.axes.fault.axis:AXIS``): what it has,
and where its planner, run hook, analysis, charts and report are (imported when used)."""

from __future__ import annotations

from typing import Any

from benchlib.axes.fault import FaultRecord, FaultSpec, _facts
from benchlib.axes.fault.frames import FAULT_EVENTS, LEDGER, LEDGER_READS
from benchlib.axis import Axis, AxisAnalysis, AxisRun, CaptionTable, ChartTable, RunContext
from benchlib.schema import Cell

__all__ = ["AXIS", "FaultAxis"]


class FaultAxis(Axis):
    """Faults, failover and lost writes: a fault run's hook brings its writer and schedule into the run engine's load
    window, and heals the lab after it (``benchlib.axes.fault.run``)."""

    name = "fault"
    title = "faults, failover and lost writes"
    order = 30
    spec = FaultSpec
    breaks = True  # its runs take nodes down on purpose
    counts_for_throughput = False  # a fault run is judged by what the fault did
    marker = "fault_at_s"
    excludes = {"probe": "[probe]", "read_split": "load.read_threads", "search": "sustained = true"}
    apart = "[fault] runs measure a fault with their own writer"
    facts_columns = ("fault_at_s", "fault_moment_s", "failover_how", "new_primary", "survivor", "ledger_writes",
                     "ledger_acked",
                     "ledger_failed", "ledger_unknown", "lost_writes", "phantom_writes", "heal_s", "heal_how",
                     "reads_of_lost", "fell_back_s", "no_ack_commits", "errant", "switchover_s")
    record = FaultRecord
    frames = (LEDGER, LEDGER_READS, FAULT_EVENTS)
    section = "failover"
    report_first = True
    notebook = "failover"
    docs = "docs/campaigns/faults.md"

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        from benchlib.axes.fault.plan import variants

        return variants(spec, lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun:
        from benchlib.axes.fault.run import FaultHook

        return FaultHook(ctx)

    def facts(self, record: FaultRecord | None) -> dict[str, Cell]:
        return _facts(record)

    def analysis(self, a: Any) -> AxisAnalysis:
        from benchlib.axes.fault.analysis import FaultAnalysis

        return FaultAnalysis(a)

    def charts(self) -> tuple[ChartTable, CaptionTable]:
        from benchlib.axes.fault import charts

        return charts.CHARTS, charts.CAPTIONS

    def report(self, a: Any, said: list[str]) -> str | None:
        from benchlib.axes.fault.report import section

        return section(a, said)

    def page_notes(self, a: Any) -> dict[str, str]:
        if a.axis(self.name).failover.empty:
            return {}
        return {"findings": "Every run had a fault inside its load window, so these ratios price the fault and the "
                            "recovery together with the replication: the failover section above says what the fault "
                            "did.",
                "stability": "every run had a fault in its load: the failover timeline shows its throughput around "
                             "the fault instead"}


AXIS = FaultAxis()
