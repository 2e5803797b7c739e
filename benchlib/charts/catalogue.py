"""The named charts of a campaign: what a report (and a study) can show, built from its analysis.

Each entry is (title, builder of a ``CampaignAnalysis``); ``figures`` builds every one the
campaign has data for. ``benchlib.report`` publishes them; ``benchlib.studies`` names them.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from benchlib import charts
from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.axis import AXES
from benchlib.charts.left_out import LeftOut
from benchlib.charts.theme import HEIGHT

__all__ = ["CATALOGUE", "dress", "figures", "show"]


#: a stability chart needs runs at least this long: shorter ones plot a handful of points, not a trend
MIN_STABILITY_S = 30


def _ratio(a):
    return charts.ratio_bars(views.ratios(a, "tps"), x="label", color="topology")


def _one_thread_count(a, chart: str) -> None:
    """A chart over client threads needs two thread counts or more: one is a point per cluster, not a curve."""
    threads = views.configs(a).get("threads")
    if threads is not None and threads.nunique() == 1:
        raise LeftOut(f"{chart} needs two thread counts or more; this campaign ran {threads.iloc[0]:g} only (the "
                      "throughput ratio above and the configurations table give the values)",
                      hint="sweep threads in the campaign's matrix")


def _throughput(a):
    _one_thread_count(a, "a curve over client threads")
    c = views.configs(a)
    dash = "durability" if "durability" in c and c.durability.nunique() > 1 else None
    return charts.throughput_vs_threads(c, color="cluster", dash=dash, error_low="ci_low", error_high="ci_high")


def _latency(a):
    _one_thread_count(a, "a curve over client threads")
    return charts.latency_vs_threads(views.one_durability(views.configs(a)), color="cluster")


def _stability(a):
    """Each configuration's runs averaged second by second (one run: its own line), min-max band."""
    if views.measured(a).empty:
        why = next((note for axis in AXES.values() if (note := axis.page_notes(a).get("stability"))), None)
        if why:
            raise LeftOut(why)
    s = views.stability_by_config(a, min_s=MIN_STABILITY_S)
    iv = s["intervals"]
    longest = iv.groupby("run_id", observed=True).t_s.max().max() if len(iv) else 0
    if longest < MIN_STABILITY_S:
        raise LeftOut(f"runs of {longest:.0f} s are too short to show stability over time (it takes "
                      f"{MIN_STABILITY_S} s or more: a warm-up, then a steady window; examples/campaigns/"
                      "stability.toml runs them on the demo lab)",
                      hint="run longer loads (campaign duration) to see it")
    return charts.stability_over_time(iv, average_by="config", trim=s["trim"], labels=s["labels"], host=s["host"],
                                      color_by=s["topology"])


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


def _runs(a) -> str:
    lo, hi = (int(a.configs.runs.min()), int(a.configs.runs.max())) if "runs" in a.configs and len(a.configs) else (0, 0)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _n_runs(a) -> str:
    n = _runs(a)
    return f"{n} run{'' if n == '1' else 's'}"


def _ratio_caption(a) -> str:
    """What a ratio bar and its whisker are; none where a ratio has no interval (one run a side, no rounds)."""
    c = views.ratios(a, "tps") if not a.comparisons.empty else pd.DataFrame(columns=["ci_low", "ci_high", "durability"])
    bounded = int((np.isfinite(c.ci_low.astype(float)) & np.isfinite(c.ci_high.astype(float))).sum())
    if not bounded:
        whisker = (f"no whisker: with {_n_runs(a)} a side and no repetition rounds there is no interval "
                   "(a campaign with repetitions of 2 or more gives one).")
    else:
        unbounded = len(c) - bounded
        whisker = (f"whisker: 95% interval, {_ratio_method(a)}" +
                   (f"; none where a side has a single run ({unbounded})." if unbounded else "."))
    shade = (" Relaxed durability lighter" + (", its interval on the right." if bounded else ".")
             if c.durability.nunique() > 1 else "")
    return f"Bar: ratio of mean throughput to the baseline's; {whisker}{shade}"


def _ratio_method(a) -> str:
    c = a.comparisons
    if "method" in c and (c.method == "blocks").any():
        return f"two-way model (round + configuration) on log run means over {_runs(a)} rounds"
    return f"Fieller's interval on {_n_runs(a)} a side"


def _stability_caption(a) -> str:
    runs, long_only = views.long_runs(a, MIN_STABILITY_S)  # the runs the chart draws, without drawing them again
    if long_only and runs.groupby("config").size().max() == 1:
        which = f"each configuration's long run (load.stability_s, {MIN_STABILITY_S} s or more)"
    else:
        which = (f"each configuration's mean over its runs of {MIN_STABILITY_S} s or more" if long_only
                 else "each configuration's mean over its runs") + " (band: slowest to fastest run)"
    host = "host" in a.frames.get("cluster", pd.DataFrame()).get("node", pd.Series(dtype=str)).astype(str).str[:4].unique()
    return (f"Per-second throughput and latency: {which}, in its topology's colour; grey: the steady window after "
            "the warm-up cut" + (";<br>below, the host's CPU busy (dotted: the share lost to others, steal and "
                                 "processes outside the lab) and its disk writes" if host else "")
            + "; under the chart: the runs' verdicts.")


#: the one-line method under each chart: what a bar, a line and a whisker are
CAPTIONS: dict[str, Callable[[CampaignAnalysis], str]] = {
    "ratio_vs_baseline": _ratio_caption,
    "throughput_vs_threads": lambda a: (f"Mean throughput of {_n_runs(a)} per point; whisker: 95% interval of "
                                        "that mean, run-to-run spread included."),
    "latency_vs_threads": lambda a: f"sysbench's latency percentile per run, mean of {_n_runs(a)}; log scale.",
    "stability": lambda a: _stability_caption(a),
    "flow_control": lambda a: (f"Mean throughput (top) and p95 replica lag (below) per flow-control limit, "
                               f"{_n_runs(a)} each; one line per cluster and what else the campaign swept."),
    "lag": lambda a: ("Heartbeat lag per node (a write every 100 ms, read on every node), in ms; catch-up: until "
                      "every node has applied the last write."),
    "catch_up": lambda a: f"Bar: mean catch-up over {_n_runs(a)}; whisker: fastest to slowest run.",
    "wan_latency": lambda a: ("Commit latency percentile against the largest round trip between sites; dashed: one "
                              "and two round trips."),
    "parallel_apply": lambda a: f"Means of {_n_runs(a)} per setting; whisker: 95% interval over the runs.",
    "sustained": lambda a: ("Light: closed-loop peak; solid: highest fixed rate held with bounded lag; whisker: up "
                            "to the first rate that failed."),
    "cost_per_trx": lambda a: ("A counter's rate over the load window divided by throughput; geometric mean over "
                               "runs; whisker: 95% interval (computed on the log scale)."),
}


def _axis_charts() -> None:
    """Each axis's charts and captions (``Axis.charts``), after the core ones, in the axes' order."""
    for axis in AXES.values():
        charts, captions = axis.charts()
        CATALOGUE.update(charts)
        CAPTIONS.update(captions)


_axis_charts()


def figures(a: CampaignAnalysis, *, left_out: dict[str, str] | None = None) -> dict[str, go.Figure]:
    """Every chart of the catalogue that this campaign has data for, each saying which server every cluster ran
    and, under it, its method. A chart that the campaign cannot support is left out; with ``left_out``, why
    (chart name -> reason) for the ones that have data but cannot say anything (a stability chart of 5 s runs)."""
    out = {}
    servers = views.servers(a)
    context = views.context(a)
    for name, (_, build) in CATALOGUE.items():
        try:
            fig = build(a)
        except LeftOut as exc:
            if left_out is not None:
                left_out[name] = exc.message
            continue
        except (AnalysisError, charts.ChartError):  # no data for it; any other error is a bug, raised
            continue
        caption = CAPTIONS[name](a) if name in CAPTIONS else ""
        out[name] = with_servers(fig, servers, context, caption=caption)
    return out


def dress(fig: go.Figure, a: CampaignAnalysis, name: str | None = None) -> go.Figure:
    """A chart as the report shows it: the campaign's context and servers under the title and, for a chart of
    the catalogue (``name``), its method under the plot; notebooks call it so JupyterLab shows the same look."""
    caption = CAPTIONS[name](a) if name in CAPTIONS else ""
    return with_servers(fig, views.servers(a), views.context(a), caption=caption)


def show(a: CampaignAnalysis, name: str) -> None:
    """For a notebook: the report's chart ``name`` (a key of ``CATALOGUE``), dressed as the report dresses it and
    shown; or one line saying why it is left out (no data for it, or nothing it could say)."""
    title, build = CATALOGUE[name]
    try:
        fig = build(a)
    except (AnalysisError, charts.ChartError) as exc:  # LeftOut included
        print(f"{title}: left out. {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        return
    dress(fig, a, name).show()


def with_caption(fig: go.Figure, caption: str) -> go.Figure:
    """A line of method under the plot (below the x-axis title; ``<br>`` starts another), the bottom margin grown to
    hold it."""
    bottom = fig.layout.margin.b if fig.layout.margin.b is not None else 60
    below = max(bottom, 66) + 6  # plotly sets an x-axis title about 45-65 px under the plot: the caption goes under it
    fig.add_annotation(text=caption, xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                       yshift=-below, showarrow=False, align="left", font=dict(size=12, color="#555"))
    lines = caption.count("<br>") + 1
    fig.update_layout(margin=dict(b=below + 24 + 16 * (lines - 1)))  # the same height: a 16:9 chart stays 16:9
    return fig


def with_servers(fig: go.Figure, servers: str, context: str = "", *, caption: str = "") -> go.Figure:
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
    return with_caption(fig, caption) if caption else fig
