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
from benchlib.catalogue import BASELINE
from benchlib.charts.catalogue import CATALOGUE, dress, show

__all__ = ["CATALOGUE", "dress", "open_campaign", "show", "show_lag", "show_runs", "why"]


def open_campaign(campaign: str | Path, *, baseline: str = BASELINE, problems: bool = True) -> CampaignAnalysis:
    """Set the notebook's chart renderer, analyse ``campaign`` against ``baseline`` and (``problems``) display its
    errors and warnings first, grouped as the report groups them; returns the analysis."""
    charts.use_renderer()
    a = analyze(campaign, baseline=baseline)
    if problems:
        from IPython.display import display

        display(views.problems_first(a))
    return a


def why(a: CampaignAnalysis):
    """Each throughput ratio with why it is what it is: the report's sentences, then the numbers beside the
    baseline's (``views.why``: what confounds it, fsyncs a commit, the commit wait, CPU a transaction, what bound the
    host), returned as a frame (the notebook shows it)."""
    from benchlib.analysis.headline import ratio_findings

    for f in ratio_findings(a):
        print(f"{f.what}: {f.verdict}.")
        print("".join(f"  - {c}\n" for c in f.because))
    return views.why(a)


def show_runs(a: CampaignAnalysis, run_ids: list[str]) -> None:
    """The stability chart of chosen runs, one line each (the report's averages each configuration), the host's
    CPU and disk writes under them when the campaign recorded host metrics."""
    iv, trim, labels = views.stability(a, run_ids)
    fig = charts.stability_over_time(iv, trim=trim, labels=labels, host=views.host_load(a, list(trim)))
    dress(fig, a, "stability").show()


def show_lag(a: CampaignAnalysis, run_id: str = "") -> None:
    """Replica lag per node over run ``run_id``; empty: the report's chart (the run with the highest lag)."""
    if not run_id:
        return show(a, "lag")
    lag, load_end, catch = views.lag_of_run(a, run_id)
    dress(charts.lag_over_time(lag, load_end=load_end, catch_up_s=catch, title=f"Replica lag: {run_id}"), a,
          "lag").show()


def compare_campaigns(a: str | Path, b: str | Path, **options):
    """Campaign ``b`` against campaign ``a`` (``benchlib.analysis.across.compare_campaigns``, same options): prints
    the comparison as ``benchlib compare`` does, draws its ratios, and returns it."""
    from benchlib.analysis.across import compare_campaigns as compare
    from benchlib.charts.across import campaigns_ratio

    charts.use_renderer()
    c = compare(a, b, **options)
    print(c.words())
    if not c.matched.empty:
        campaigns_ratio(c).show()
    return c


def show_history(runs, measure: str = "summary_tps"):
    """The history of the runs ``runs`` (rows of the run index, one configuration): printed campaign by campaign
    with its change points, drawn, and returned (``benchlib.analysis.history``)."""
    from benchlib.analysis.history import history
    from benchlib.charts.across import history_chart

    charts.use_renderer()
    h = history(runs, measure=measure)
    print(h.words())
    if not h.points.empty:
        history_chart(h).show()
    return h
