"""The fault axis's analysis: per fault run what the fault cost (unavailability, new primary, lost writes, recovery:
``benchlib.axes.fault.measures``), its distribution per configuration with intervals, and that in words.
``FaultAnalysis`` is ``a.axis("fault")``: each computed once."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.axes.fault import measures as measured
from benchlib.axes.fault import setting_curves as settings
from benchlib.axis import AxisAnalysis

__all__ = ["FaultAnalysis", "failover", "failover_findings", "failover_summary"]


def failover(a: Any) -> pd.DataFrame:
    """One row per ok fault run: unavailability, new primary, lost writes, recovery; empty without fault runs."""
    return measured.measures(a.runs, a.frames)


def failover_summary(a: Any) -> pd.DataFrame:
    """Per fault configuration: unavailability's distribution with intervals, lost writes with their bound."""
    return measured.summary(a.axis("fault").failover)


def failover_findings(a: Any) -> list[str]:
    """The failover summary in words, a sentence per configuration, and the failover time against each swept setting
    that decides it beside its prediction ([] without fault runs)."""
    view = a.axis("fault")
    return measured.in_words(view.summary) + (settings.in_words(view.failover) if not view.failover.empty else [])


class FaultAnalysis(AxisAnalysis):
    """``a.axis("fault")``: ``failover`` (per fault run; also its ``measures``), ``summary`` (per configuration),
    ``findings``."""

    axis = "fault"

    @cached_property
    def failover(self) -> pd.DataFrame:
        return failover(self.a)

    @cached_property
    def measures(self) -> pd.DataFrame:
        return self.failover

    @cached_property
    def summary(self) -> pd.DataFrame:
        return failover_summary(self.a)

    @cached_property
    def findings(self) -> list[str]:
        return failover_findings(self.a)
