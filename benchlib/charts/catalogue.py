"""The named charts of a campaign: what a report (and a study) can show, built from its analysis.

Each entry is (title, builder of a ``CampaignAnalysis``); ``figures`` builds every one the
campaign has data for. ``benchlib.report`` publishes them; ``benchlib.studies`` names them.
"""

from __future__ import annotations

from typing import Callable

import plotly.graph_objects as go

from benchlib import charts
from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis

__all__ = ["CATALOGUE", "figures"]


def _ratio(a):
    return charts.ratio_bars(views.ratios(a, "tps"), x="label", color="topology")


def _throughput(a):
    c = views.configs(a)
    dash = "durability" if "durability" in c and c.durability.nunique() > 1 else None
    return charts.throughput_vs_threads(c, color="cluster", dash=dash, error_low="ci_low", error_high="ci_high")


def _latency(a):
    return charts.latency_vs_threads(views.one_durability(views.configs(a)), color="cluster")


def _stability(a):
    iv, trim, labels = views.stability(a)
    return charts.stability_over_time(iv, trim=trim, labels=labels, host=views.host_load(a, list(trim)))


def _flow_control(a):
    return charts.flow_control_sweep(views.flow_control(a))


def _lag(a):
    rid = views.worst_lag_run(a)
    lag, end, catch = views.lag_of_run(a, rid)
    return charts.lag_over_time(lag, load_end=end, catch_up_s=catch, title=f"Replica lag over time ({rid})")


def _catch_up(a):
    return charts.catch_up(views.catch_up(a), error_low="catch_up_min", error_high="catch_up_max")


def _wan(a):
    w = views.wan(a)
    if w.rtt_ms.max() <= 0:
        raise AnalysisError("no WAN site in this campaign's lab")
    return charts.latency_vs_rtt(w[w.threads == w.threads.min()], color="cluster")


def _parallel(a):
    return charts.parallel_apply(views.parallel_apply(a))


def _costs(a):
    return charts.cost_bars(views.costs(a))


def _sustained(a):
    return charts.sustained_vs_peak(views.sustained(a))


#: every chart a report can hold, in report order; a chart whose data the campaign lacks is skipped
CATALOGUE: dict[str, tuple[str, Callable[[CampaignAnalysis], go.Figure]]] = {
    "ratio_vs_baseline": ("Throughput relative to the baseline", _ratio),
    "throughput_vs_threads": ("Throughput vs client threads", _throughput),
    "latency_vs_threads": ("Latency vs client threads", _latency),
    "stability": ("Stability over time", _stability),
    "flow_control": ("Flow control sweep", _flow_control),
    "lag": ("Replica lag over time", _lag),
    "catch_up": ("Catch-up after the load", _catch_up),
    "wan_latency": ("Commit latency vs round-trip time", _wan),
    "parallel_apply": ("Parallel apply", _parallel),
    "sustained": ("Maximum sustained throughput vs peak", _sustained),
    "cost_per_trx": ("Cost per transaction by role", _costs),
}


def figures(a: CampaignAnalysis) -> dict[str, go.Figure]:
    """Every chart of the catalogue that this campaign has data for, each saying which server every cluster ran."""
    out = {}
    servers = views.servers(a)
    for name, (_, build) in CATALOGUE.items():
        try:
            out[name] = with_servers(build(a), servers)
        except (AnalysisError, charts.ChartError):  # no data for it; any other error is a bug, raised
            continue
    return out


def with_servers(fig: go.Figure, servers: str) -> go.Figure:
    """The servers line under the figure's title (the system and version of each cluster)."""
    if servers:
        title = fig.layout.title.text or ""
        fig.update_layout(title_text=f"{title}<br><sup>{servers}</sup>" if title else f"<sup>{servers}</sup>")
    return fig
