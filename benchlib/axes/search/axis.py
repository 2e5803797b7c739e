"""The search axis as benchlib registers it (the entry point ``benchlib.axes.search.axis:AXIS``): what it has,
and where its planner, run hook, analysis, charts and report are (imported when used)."""

from __future__ import annotations

from typing import Any

from benchlib.axis import Axis

__all__ = ["AXIS", "SearchAxis"]


class SearchAxis(Axis):
    name = "search"
    title = "the sustained-throughput search"
    order = 40
    docs = "docs/campaigns/sustained.md"
    asked = "sustained = true"
    counts_for_throughput = False  # its open-loop runs are judged by rate (benchlib.analysis.sustained)
    marker = "search"

    def active(self, spec: Any) -> bool:
        return bool(spec.sustained)


AXIS = SearchAxis()
