"""The named charts of a campaign: what a report (and a study) can show, built from its analysis.

Each entry is (title, builder of a ``CampaignAnalysis``); ``figures`` builds every one the
campaign has data for. ``benchlib.report`` publishes them; ``benchlib.studies`` names them.
"""

from __future__ import annotations

import math
from typing import Callable

import plotly.graph_objects as go

from benchlib import charts
from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.charts.theme import HEIGHT

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
    context = views.context(a)
    for name, (_, build) in CATALOGUE.items():
        try:
            out[name] = with_servers(build(a), servers, context)
        except (AnalysisError, charts.ChartError):  # no data for it; any other error is a bug, raised
            continue
    return out


def with_servers(fig: go.Figure, servers: str, context: str = "") -> go.Figure:
    """The subtitle under the figure's title: the campaign's context (workload, threads, durability, runs, host)
    and the servers line (the system and version of each cluster), so a PNG pasted alone can be understood."""
    lines = [line for line in (context, servers) if line]
    if not lines:
        return fig
    title = fig.layout.title.text or ""
    sub = "<br>".join(f"<sup>{line}</sup>" for line in lines)
    # the title block is pinned to the top; the legend (above the plot, right) starts below it: rows of about
    # three entries at the template's width, so a wide legend never prints over the subtitle
    entries = len({t.name for t in fig.data if t.name and t.showlegend is not False})
    rows = 0 if fig.layout.showlegend is False or not entries else math.ceil(entries / 3)
    extra = max(0, (fig.layout.margin.t or 70) - 70)  # room a chart keeps between legend and plot (panel titles)
    block = 16 + 22 + 20 * len(lines)  # top gap, title line, subtitle lines (px)
    height = fig.layout.height or HEIGHT
    fig.update_layout(title=dict(text=f"{title}<br>{sub}" if title else sub, y=1 - 30 / height, yanchor="top"),
                      margin=dict(t=block + 8 + 26 * rows + extra))
    return fig
