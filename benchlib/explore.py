"""What a notebook calls: a campaign opened for exploring in one call, and the report's charts by name.

    from benchlib.explore import open_campaign, show
    a = open_campaign("runs/quick")        # renderer, analysis, and its problems grouped as in the report
    show(a, "latency_vs_threads")           # the report's figure, or one line saying why it is left out

Charts render interactive in JupyterLab and carry a PNG copy for viewers where JavaScript cannot run.
"""

from __future__ import annotations

from pathlib import Path

from benchlib import charts
from benchlib.analysis import views
from benchlib.analysis.campaign import CampaignAnalysis, analyze
from benchlib.charts.catalogue import CATALOGUE, dress, show

__all__ = ["CATALOGUE", "dress", "open_campaign", "show"]


def open_campaign(campaign: str | Path, *, baseline: str = "async", problems: bool = True) -> CampaignAnalysis:
    """Set the notebook's chart renderer, analyse ``campaign`` against ``baseline`` and (``problems``) display its
    errors and warnings first, grouped as the report groups them; returns the analysis."""
    charts.use_renderer()
    a = analyze(campaign, baseline=baseline)
    if problems:
        from IPython.display import display

        display(views.problems_first(a))
    return a
