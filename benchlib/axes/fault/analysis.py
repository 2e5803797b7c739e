"""The fault axis's analysis: per fault run what the fault cost (unavailability, new primary, lost writes, recovery:
``benchlib.analysis.failover``), its distribution per configuration with intervals, and that in words. ``ATTRIBUTES``
makes them attributes of a ``CampaignAnalysis`` (``a.failover``), computed once."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from benchlib.analysis import failover as measured
from benchlib.analysis import failover_settings as settings

__all__ = ["ATTRIBUTES", "failover", "failover_findings", "failover_summary", "findings", "measures"]


def failover(a: Any) -> pd.DataFrame:
    """One row per ok fault run: unavailability, new primary, lost writes, recovery; empty without fault runs."""
    return measured.measures(a.runs, a.frames)


def failover_summary(a: Any) -> pd.DataFrame:
    """Per fault configuration: unavailability's distribution with intervals, lost writes with their bound."""
    return measured.summary(a.failover)


def failover_findings(a: Any) -> list[str]:
    """The failover summary in words, a sentence per configuration, and the failover time against each swept setting
    that decides it beside its prediction ([] without fault runs)."""
    return measured.in_words(a.failover_summary) + (settings.in_words(a.failover) if not a.failover.empty else [])


measures = failover
findings = failover_findings

ATTRIBUTES: dict[str, Callable[[Any], Any]] = {"failover": failover, "failover_summary": failover_summary,
                                                 "failover_findings": failover_findings}
