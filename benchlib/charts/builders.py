"""The comparative charts. Vocabulary shared by every builder (as in plotly express):

``x``, ``y``          columns on the axes
``color``             column whose values get one colour each (topologies keep their house colour)
``error_low/high``    columns with the interval's ends (whiskers)
``title``             the chart title; every builder has a sensible default

Frames are tidy: one row per observation, as ``benchlib.analysis`` and ``load_campaign`` return them.
"""

from __future__ import annotations

from collections import Counter
from itertools import cycle
from typing import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchlib.catalogue import BASELINE, house_color
from benchlib.charts.axes import category_axis, log_axis, short_name, threads_axis
from benchlib.charts.errors import ChartError
from benchlib.charts.theme import HEIGHT, OKABE_ITO, TEMPLATE, lighter


def _need(df: pd.DataFrame, columns: Iterable[str | None], chart: str) -> None:
    missing = [c for c in dict.fromkeys(columns) if c is not None and c not in df.columns]
    if missing:
        raise ChartError(f"{chart}: no column {', '.join(repr(c) for c in missing)} in the frame",
                         hint=f"columns: {', '.join(map(str, df.columns))}")
    if df.empty:
        raise ChartError(f"{chart}: the frame is empty", hint="nothing to draw: check the campaign's filters")


def _colors(values: Iterable) -> dict:
    """One colour per value: a topology's house colour, else the next Okabe-Ito colour no other value has."""
    values = list(dict.fromkeys(values))
    out = {v: c for v in values if (c := house_color(str(v)))}
    spare = cycle([c for c in OKABE_ITO if c not in out.values()] or OKABE_ITO)
    return {v: out[v] if v in out else next(spare) for v in values}


def _whiskers(d: pd.DataFrame, y: str, low: str | None, high: str | None, *, positive: bool = True) -> dict | None:
    """Error bars from interval columns; for a ``positive`` quantity (throughput, latency, a ratio, a cost) the
    lower end is never drawn below zero (an interval computed on the linear scale can reach past it)."""
    if not low or not high:
        return None
    lower = d[low].astype(float)
    if positive:  # an unbounded end (-inf) stays unbounded: no whisker rather than one down to zero
        lower = lower.where(~np.isfinite(lower) | (lower >= 0), 0.0)
    up = (d[high] - d[y]).replace([np.inf, -np.inf], np.nan)
    down = (d[y] - lower).replace([np.inf, -np.inf], np.nan)
    return dict(type="data", array=up.tolist(), arrayminus=down.tolist(), visible=True, thickness=1.5, width=5)


def _whisker_bars(fig: go.Figure, d: pd.DataFrame, x: str, y: str, low: str | None, high: str | None,
                  **bar) -> None:
    """Whiskers on an invisible bar (same ``width``/``offset`` as given), only where the interval is finite and has
    a width: plotly draws an unbounded or empty one as a cap on the bar's top, which reads as a tiny interval."""
    if not low or not high:
        return
    lo, hi = d[low].astype(float), d[high].astype(float)
    shown = d[np.isfinite(lo) & np.isfinite(hi) & (hi > lo)]
    if not shown.empty:
        fig.add_bar(x=shown[x].astype(str), y=shown[y], marker_color="rgba(0,0,0,0)", showlegend=False,
                    hoverinfo="skip", error_y=_whiskers(shown, y, low, high), **bar)


DASHES = ("solid", "dash", "dot", "dashdot")


def _dash_styles(values: Iterable) -> dict:
    """One dash style per value, in order of first appearance."""
    return {v: DASHES[i % len(DASHES)] for i, v in enumerate(dict.fromkeys(values))}


def _legend_above_panel_titles(fig: go.Figure) -> None:
    """A chart of panels with titles: the legend sits above the first panel's title, under the chart's title
    (the top margin holds both). Call once the figure's height and bottom margin are final."""
    height = fig.layout.height or HEIGHT
    plot_h = height - 100 - (fig.layout.margin.b if fig.layout.margin.b is not None else 60)
    fig.update_layout(margin=dict(t=100), legend=dict(yanchor="bottom", y=1 + 30 / plot_h))


def _figure(title: str, **layout) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(template=TEMPLATE, title=title, **layout)
    return fig


def ratio_bars(df: pd.DataFrame, *, x: str = "topology", y: str = "ratio", color: str | None = None,
               error_low: str | None = "ci_low", error_high: str | None = "ci_high", shade: str | None = "durability",
               light: str = "relaxed", baseline: str = BASELINE, title: str | None = None,
               confounded: str | None = "confounded_by") -> go.Figure:
    """Ratio against the baseline per topology (and cluster size: put it in ``x``). With ``shade``, both levels
    on one bar: the ``light`` level (relaxed durability) as the wide bar in a lighter shade of the colour, the
    other (durable) in front of it over its left half; each has one interval, drawn in its own half of the bar
    (durable left, relaxed right), so two whiskers never sit on each other. A bar whose ``confounded`` column names
    something (what else differs between its two clusters) is hatched, and its hover says what."""
    color = color or x
    _need(df, [x, y, color, error_low, error_high, shade], "ratio_bars")
    confounded = confounded if confounded in df else None
    colors = _colors(df[color])
    fig = _figure(title or f"Throughput relative to {baseline}", barmode="overlay", hovermode="closest",
                  yaxis_title=f"throughput, × {baseline}", xaxis_title="", bargap=0.25)
    groups = [(None, df)] if shade is None else sorted(df.groupby(shade, dropna=False), key=lambda g: g[0] != light)
    both = len(groups) > 1
    for level, d in groups:
        is_light = level == light
        for c, dc in d.groupby(color, sort=False):
            base = colors[c]
            xs, name = dc[x].astype(str), f"{c}" + (f" {level}" if level is not None else "")
            hover = f"{name}: %{{y:.3f}}<extra></extra>"
            marks = dc[confounded].fillna("").astype(str) if confounded else None
            pattern = None
            if marks is not None and (marks != "").any():
                pattern = dict(shape=["/" if m else "" for m in marks], fillmode="overlay", solidity=0.3)
                hover = f"{name}: %{{y:.3f}}%{{customdata}}<extra></extra>"
            # bar, and where its interval is: the wide light bar has its whisker over its right half
            width, offset, fill = ((0.6, None, base) if not both else (0.8, -0.4, lighter(base)) if is_light
                                   else (0.4, -0.4, base))
            fig.add_bar(x=xs, y=dc[y], name=name, marker_color=fill, width=width, offset=offset,
                        legendgroup=str(c), hovertemplate=hover, marker_pattern=pattern,
                        customdata=[f" (hatched: confounded by {m})" if m else "" for m in marks]
                        if pattern else None)
            w_width, w_offset = (0.4, 0.0) if both and is_light else (width, offset)
            _whisker_bars(fig, dc, x, y, error_low, error_high, width=w_width, offset=w_offset, legendgroup=str(c))
    fig.add_hline(y=1.0, line_dash="dash", line_color="#444", annotation_text=baseline, annotation_position="top left",
                  annotation_bgcolor="rgba(255,255,255,0.85)")  # legible where it sits over the first bar
    category_axis(fig, df[x])
    return fig


def throughput_vs_threads(df: pd.DataFrame, *, x: str = "threads", y: str = "tps_mean", color: str = "topology",
                          dash: str | None = None, error_low: str | None = None, error_high: str | None = None,
                          title: str | None = None) -> go.Figure:
    """Throughput against client threads, one line per ``color`` (and ``dash``, e.g. durability)."""
    _need(df, [x, y, color, dash, error_low, error_high], "throughput_vs_threads")
    fig = _figure(title or "Throughput vs client threads", xaxis_title="client threads", yaxis_title="transactions/s")
    threads_axis(fig.update_xaxes, df[x])
    _lines(fig, df, x, y, color, dash, error_low, error_high)
    return fig


def _lines(fig, df, x, y, color, dash=None, low=None, high=None, *, row=None, col=None, name_suffix="",
           line_dash=None, showlegend=True, colors: dict | None = None, dashes: dict | None = None) -> None:
    colors = colors or _colors(df[color])
    dashes = dashes or (_dash_styles(df[dash]) if dash else {})
    keys = [color] + ([dash] if dash else [])
    for key, d in df.sort_values(x, kind="stable").groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        c = key[0]
        name = " ".join(str(k) for k in key) + name_suffix
        trace = go.Scatter(x=d[x], y=d[y], mode="lines+markers", name=name, legendgroup=str(c), showlegend=showlegend,
                           line=dict(color=colors[c], dash=line_dash or (dashes[key[1]] if dash else "solid"), width=2.5),
                           marker=dict(size=8), error_y=_whiskers(d, y, low, high))
        fig.add_trace(trace, row=row, col=col) if row else fig.add_trace(trace)


def latency_vs_threads(df: pd.DataFrame, *, x: str = "threads", y: str = "lat_pctl_ms", y_mean: str | None = None,
                       color: str = "topology", percentile: int | str = 95, title: str | None = None) -> go.Figure:
    """Latency (the percentile, and the mean when ``y_mean`` is given, dashed) against client threads,
    logarithmic axes: latency that grows with load stays readable from 1 to 1000 ms."""
    _need(df, [x, y, color, y_mean], "latency_vs_threads")
    fig = _figure(title or "Latency vs client threads", xaxis_title="client threads", yaxis_title="latency, ms (log)")
    threads_axis(fig.update_xaxes, df[x])
    log_axis(fig.update_yaxes, pd.concat([df[y], df[y_mean]]) if y_mean else df[y])
    _lines(fig, df, x, y, color, name_suffix=f" p{percentile}")
    if y_mean:
        _lines(fig, df, x, y_mean, color, name_suffix=" mean", line_dash="dash")
    return fig


def stability_over_time(intervals: pd.DataFrame, *, x: str = "t_s", y: str = "tps", latency: str | None = "lat_pctl_ms",
                        group: str = "run_id", trim: dict | None = None, labels: dict | None = None,
                        average_by: str | None = None, title: str | None = None,
                        host: pd.DataFrame | None = None, color_by: dict | None = None) -> go.Figure:
    """Per-second throughput (and latency below it) of chosen runs; the steady window after the warm-up
    trim shaded; each run's stability label annotated. With ``average_by`` (e.g. "config"), the runs of
    each group are averaged second by second with their min-max band. With ``host`` (``host_over_time``: the
    same ``group`` or ``average_by`` column, ``cpu_busy_pct``, ``disk_write_mib_s`` at ``x``, and ``lost_pct`` where
    interference was measured), the host's CPU busy (dotted: the share lost to others: steal and processes outside
    the lab) and disk writes over the same seconds in two more panels."""
    _need(intervals, [x, y, latency, group, average_by], "stability_over_time")
    host = host if host is not None and not host.empty else None
    if host is not None:
        _need(host, [x, average_by or group, "cpu_busy_pct", "disk_write_mib_s"], "stability_over_time (host)")
    panels = [(y, "transactions/s", 0.6)] + ([(latency, "latency, ms", 0.4)] if latency else [])
    if host is not None:
        lost = "lost_pct" in host and host.lost_pct.notna().any()
        panels += [("cpu_busy_pct", "host CPU %", 0.3), ("disk_write_mib_s", "disk MiB/s", 0.3)]
    rows = len(panels)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06 if host is not None else 0.08,
                        row_heights=[p[2] for p in panels])
    fig.update_layout(template=TEMPLATE, title=title or "Stability over time", hovermode="x unified")
    if host is not None:
        fig.update_layout(height=HEIGHT + 260)
        fig.update_yaxes(range=[0, 105], row=rows - 1, col=1)
    for row, (_, name, _) in enumerate(panels, start=1):
        fig.update_yaxes(title_text=name, row=row, col=1)
    fig.update_xaxes(title_text="seconds since the load started", row=rows, col=1)
    host_row = 3 if latency else 2
    key = average_by or group
    keys = sorted(intervals[key].unique())
    if color_by:  # each group in its topology's colour, the groups of one topology told apart by dash
        topology = {k: color_by.get(k, k) for k in keys}
        by_topology, count = _colors(topology.values()), Counter()
        palette, dashes = {}, {}
        for k in keys:
            palette[k], dashes[k] = by_topology[topology[k]], DASHES[count[topology[k]] % len(DASHES)]
            count[topology[k]] += 1
    else:
        palette, dashes = _colors(keys), {}
    on_top: list = []  # the mean lines, drawn after every band so that no band hides a line
    for i, (k, d) in enumerate(intervals.groupby(key, sort=True)):
        color, dash = palette[k], dashes.get(k, "solid")
        if average_by:
            agg = d.groupby(x)[[y] + ([latency] if latency else [])].agg(["mean", "min", "max"]).reset_index()
            series = [(y, 1)] + ([(latency, 2)] if latency else [])
            for col_name, row in series:
                xs = agg[x]
                fig.add_trace(go.Scatter(x=pd.concat([xs, xs[::-1]]), y=pd.concat([agg[(col_name, "max")],
                                                                                    agg[(col_name, "min")][::-1]]),
                                         fill="toself", fillcolor=lighter(color, 0.75), opacity=0.6, line=dict(width=0),
                                         showlegend=False, hoverinfo="skip"), row=row, col=1)
                on_top.append((go.Scatter(x=xs, y=agg[(col_name, "mean")], mode="lines", name=str(k),
                                          legendgroup=str(k), showlegend=row == 1,
                                          line=dict(color=color, width=2, dash=dash)), row))
        else:
            d = d.sort_values(x)
            fig.add_trace(go.Scatter(x=d[x], y=d[y], mode="lines", name=str(k), legendgroup=str(k),
                                     line=dict(color=color, width=2, dash=dash)), row=1, col=1)
            if latency:
                fig.add_trace(go.Scatter(x=d[x], y=d[latency], mode="lines", name=str(k), legendgroup=str(k),
                                         showlegend=False, line=dict(color=color, width=1.5, dash=dash)), row=2, col=1)
        if host is not None:
            hk = host[host[key] == k]
            shown = ["cpu_busy_pct", "disk_write_mib_s"] + (["lost_pct"] if lost else [])
            if average_by:
                hk = hk.assign(**{x: hk[x].round()}).groupby(x, as_index=False)[shown].mean()
            hk = hk.sort_values(x)
            for offset, col_name in enumerate(("cpu_busy_pct", "disk_write_mib_s")):
                fig.add_trace(go.Scatter(x=hk[x], y=hk[col_name], mode="lines", name=str(k), legendgroup=str(k),
                                         showlegend=False, line=dict(color=color, width=1.5),
                                         hovertemplate=f"{k}: %{{y:.0f}}% busy<extra></extra>" if offset == 0
                                         else None),
                              row=host_row + offset, col=1)
            if lost:  # the CPU others took (steal, processes outside the lab) under the same run's busy line
                fig.add_trace(go.Scatter(x=hk[x], y=hk["lost_pct"], mode="lines", name=f"{k}: lost to others",
                                         legendgroup=str(k), showlegend=False,
                                         line=dict(color=color, width=1.5, dash="dot"),
                                         hovertemplate=f"{k}: %{{y:.1f}}% lost to others<extra></extra>"),
                              row=host_row, col=1)
        if labels and k in labels:
            style = {"dash": " - -", "dot": " · · ·", "dashdot": " -·-"}.get(dash, "")
            fig.add_annotation(text=f"{k}{style}: {labels[k]}", xref="paper", yref="paper", x=0, y=0, yanchor="top",
                               yshift=-68 - 22 * list(labels).index(k), showarrow=False, font=dict(size=12, color=color), xanchor="left")
    for trace, row in on_top:
        fig.add_trace(trace, row=row, col=1)
    if trim:  # one shaded steady window, after the latest warm-up cut of the runs shown (not one mixed per run)
        shown = [k for k in trim if k in set(keys)]
        if shown:
            start = float(intervals[x].min()) - 1 + max(trim[k] for k in shown)
            fig.add_vrect(x0=start, x1=float(intervals[x].max()), fillcolor="#e8e8e8", opacity=0.6, line_width=0,
                          layer="below", row=1, col=1)
            fig.add_annotation(text="steady window", x=start, xref="x", y=1, yref="y domain", xanchor="left",
                               yanchor="top", xshift=4, showarrow=False, font=dict(size=12, color="#555"))
    if labels:  # the coloured label lines under the chart name every run: no legend on top of the titles
        fig.update_layout(margin=dict(b=80 + 22 * len(labels)), height=(fig.layout.height or HEIGHT) + 24 * len(labels),
                          showlegend=False)
    return fig


def flow_control_sweep(df: pd.DataFrame, *, x: str = "fc_limit", y: str = "tps_mean", lag: str = "lag_p95_ms",
                       color: str = "cluster", dash: str | None = "variant", panel: str | None = "workload",
                       title: str | None = None) -> go.Figure:
    """Throughput (top) and replica lag (below) against the flow-control limit: one line per ``color`` and
    ``dash`` (what else was swept, e.g. durability), a column of panels per ``panel`` (workload) when there are
    several, so that each line varies the limit alone."""
    _need(df, [x, y, lag, color], "flow_control_sweep")
    dash = dash if dash and dash in df and df[dash].nunique() > 1 else None
    panels = list(dict.fromkeys(df[panel])) if panel and panel in df and df[panel].nunique() > 1 else [None]
    fig = make_subplots(rows=2, cols=len(panels), shared_xaxes=True, vertical_spacing=0.08, horizontal_spacing=0.07,
                        subplot_titles=[short_name(str(p)) for p in panels] if panels[0] is not None else None)
    fig.update_layout(template=TEMPLATE, title=title or "Flow control: throughput and replica lag")
    if panels[0] is not None:
        fig.update_layout(height=HEIGHT + 60)
        _legend_above_panel_titles(fig)
    df = df.sort_values([color, dash] if dash else [color], kind="stable")  # legend: by cluster, then variant
    colors, dashes = _colors(df[color]), _dash_styles(df[dash]) if dash else None  # the same in every panel
    for i, p in enumerate(panels, start=1):
        d = df if p is None else df[df[panel] == p]
        for row, col in ((1, y), (2, lag)):
            _lines(fig, d, x, col, color, dash, row=row, col=i, showlegend=row == 1 and i == 1, colors=colors,
                   dashes=dashes)
    settings = sorted({float(v) for v in df[x].dropna() if v > 0})
    fig.update_xaxes(type="log", tickvals=settings, ticktext=[f"{v:g}" for v in settings])  # the limits measured
    fig.update_xaxes(title_text=x.replace("_", " "), row=2)
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title_text="transactions/s", row=1, col=1)
    fig.update_yaxes(title_text="replica lag p95, ms", row=2, col=1)
    return fig


def lag_over_time(lag: pd.DataFrame, *, x: str = "t_s", y: str = "lag_ms", color: str = "node",
                  load_end: float | None = None, catch_up_s: float | None = None, title: str | None = None,
                  y_title: str = "lag, ms") -> go.Figure:
    """Replica lag of each node over a run (time lag, or transactions behind with ``y_title``); the end of
    the load marked, and the catch-up after it."""
    _need(lag, [x, y, color], "lag_over_time")
    fig = _figure(title or "Replica lag over time", xaxis_title="seconds since the load started",
                  yaxis_title=y_title)
    for i, (node, d) in enumerate(lag.sort_values(x).groupby(color, sort=True)):
        fig.add_scatter(x=d[x], y=d[y], mode="lines", name=str(node), line=dict(width=1.8, color=_node_color(i)))
    if load_end is not None:
        fig.add_vline(x=load_end, line_dash="dash", line_color="#444", annotation_text="load ends",
                      annotation_position="top left")
        if catch_up_s is not None:
            fig.add_vrect(x0=load_end, x1=load_end + catch_up_s, fillcolor="#999", opacity=0.15, line_width=0,
                          annotation_text=f"catch-up {catch_up_s:.2f} s", annotation_position="top left",
                          annotation_yshift=-22)  # right of the line, a line below "load ends" (left of it)
    return fig


def _node_color(i: int) -> str:
    from benchlib.charts.theme import OKABE_ITO

    return OKABE_ITO[i % len(OKABE_ITO)]


def catch_up(df: pd.DataFrame, *, x: str = "label", y: str = "catch_up_s", color: str = "topology",
             error_low: str | None = None, error_high: str | None = None, title: str | None = None) -> go.Figure:
    """Time for every node to catch up after the load ends, per configuration."""
    _need(df, [x, y, color, error_low, error_high], "catch_up")
    fig = _figure(title or "Catch-up time after the load", xaxis_title="", yaxis_title="seconds",
                  hovermode="closest", barmode="overlay")  # one bar per category: never a slot per colour
    colors = _colors(df[color])
    for c, d in df.groupby(color, sort=False):
        fig.add_bar(x=d[x].astype(str), y=d[y], name=str(c), marker_color=colors[c], width=0.6, legendgroup=str(c))
        _whisker_bars(fig, d, x, y, error_low, error_high, width=0.6, legendgroup=str(c))
    category_axis(fig, df[x])
    return fig


def latency_vs_rtt(df: pd.DataFrame, *, x: str = "rtt_ms", y: str = "lat_pctl_ms", color: str = "topology",
                   rtt_multiples: Iterable[float] = (1, 2), title: str | None = None) -> go.Figure:
    """Commit latency against the WAN round-trip time, with dashed reference lines at 1 and 2 RTTs:
    a synchronous commit costs at least one round trip."""
    _need(df, [x, y, color], "latency_vs_rtt")
    fig = _figure(title or "Commit latency vs WAN round-trip time", xaxis_title="round-trip time, ms",
                  yaxis_title="commit latency, ms")
    top = float(df[x].max()) or 1.0
    for k in rtt_multiples:
        fig.add_scatter(x=[0, top], y=[0, k * top], mode="lines", name=f"{k:g} RTT", showlegend=True,
                        line=dict(color="#999", dash="dash" if k == 1 else "dot", width=1), hoverinfo="skip")
    _lines(fig, df, x, y, color)
    return fig


def parallel_apply(df: pd.DataFrame, *, x: str = "parallel_threads", y: str = "tps_mean", lag: str = "lag_p95_ms",
                   cpu: str | None = "replica_cpu_pct", color: str = "cluster", dash: str | None = "variant",
                   title: str | None = None) -> go.Figure:
    """Parallel replica apply: throughput, replica lag and replica CPU against the applier threads, one line per
    ``color`` and ``dash`` (what else was swept)."""
    _need(df, [x, y, lag, cpu, color], "parallel_apply")
    dash = dash if dash and dash in df and df[dash].nunique() > 1 else None
    panels = [(y, "transactions/s"), (lag, "replica lag, ms")] + ([(cpu, "replica CPU, %")] if cpu else [])
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    fig.update_layout(template=TEMPLATE, title=title or "Parallel apply: throughput, lag and replica CPU",
                      height=220 * len(panels) + 120)
    for i, (col, label) in enumerate(panels, start=1):
        low, high = (f"{col}_low", f"{col}_high") if f"{col}_low" in df and f"{col}_high" in df else (None, None)
        _lines(fig, df, x, col, color, dash, low=low, high=high, row=i, col=1, showlegend=i == 1)
        fig.update_yaxes(title_text=label, row=i, col=1, rangemode="tozero")
    settings = sorted({float(v) for v in df[x].dropna()})
    fig.update_xaxes(tickvals=settings, ticktext=[f"{v:g}" for v in settings])  # the settings measured, no 0.5s
    fig.update_xaxes(title_text="replica applier threads", row=len(panels), col=1)
    return fig


def sustained_vs_peak(df: pd.DataFrame, *, x: str = "label", peak: str = "peak_tps", sustained: str = "sustained_tps",
                      failing: str | None = "first_failing_tps", color: str = "topology", flag: str | None = "fc_limited",
                      title: str | None = None) -> go.Figure:
    """Maximum sustained throughput against peak (closed-loop) throughput per configuration: the peak as a
    wide bar in a lighter shade, the sustained rate in front of it with a whisker up to the first failing
    rate (the bracket), FC_LIMITED written above the configurations where flow control throttled it."""
    _need(df, [x, peak, sustained, failing, color, flag], "sustained_vs_peak")
    fig = _figure(title or "Maximum sustained throughput vs peak", barmode="overlay", hovermode="closest",
                  xaxis_title="", yaxis_title="transactions/s", bargap=0.25)
    colors = _colors(df[color])
    for c, d in df.groupby(color, sort=False):
        base = colors[c]
        fig.add_bar(x=d[x].astype(str), y=d[peak], name=f"{c} peak", marker_color=lighter(base), width=0.8,
                    legendgroup=str(c), hovertemplate=f"{c} peak: %{{y:.0f}} tps<extra></extra>")
        err = None
        if failing:
            up = (d[failing] - d[sustained]).clip(lower=0)
            err = dict(type="data", array=up.tolist(), arrayminus=[0] * len(d), visible=True, thickness=1.5, width=5)
        fig.add_bar(x=d[x].astype(str), y=d[sustained], name=f"{c} sustained", marker_color=base, width=0.45,
                    legendgroup=str(c), error_y=err,
                    hovertemplate=f"{c} sustained: %{{y:.0f}} tps<extra></extra>")
        if flag:
            for _, row in d[d[flag].fillna(False).astype(bool)].iterrows():
                fig.add_annotation(x=str(row[x]), y=float(max(row[peak], row[failing] if failing else 0) or 0),
                                   text="FC_LIMITED", showarrow=False, yshift=12, font=dict(size=11))
    category_axis(fig, df[x])
    return fig
