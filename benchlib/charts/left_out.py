"""A chart left out of a report, saying why (the campaign has its data, but the chart would say nothing)."""

from __future__ import annotations

from benchlib.analysis.runs import AnalysisError

__all__ = ["LeftOut"]


class LeftOut(AnalysisError):
    """The campaign has the data but the chart would say nothing (the report says why instead of drawing it)."""
