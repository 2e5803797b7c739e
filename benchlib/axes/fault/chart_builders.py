"""What a fault cost: the failover timeline, unavailability by configuration, acknowledged writes lost. Frames from
``benchlib.axes.fault.views`` (``failover_timeline``, ``failover_runs``, ``failover_summary``); one row per
configuration, labelled ``label``, coloured by its ``topology``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchlib.charts.axes import log_axis
from benchlib.charts.builders import _colors, _figure, _need
from benchlib.charts.consistency import rows_height
from benchlib.charts.errors import ChartError
from benchlib.charts.theme import HEIGHT, TEMPLATE, WIDTH

__all__ = ["failover_timeline", "lost_against_moment", "lost_writes", "unavailability", "unavailability_by_setting"]

def failover_timeline(series: pd.DataFrame, marks: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """A panel per configuration: the ledger writer's acknowledged writes per second in 100 ms bins around the fault
    (t = 0), the unavailability shaded, the new primary and sysbench's restart marked."""
    _need(series, ["t_s", "acked_per_s", "label", "topology"], "failover_timeline")
    labels = list(dict.fromkeys(series.sort_values(["topology", "label"]).label))
    colors = _colors(series.topology)
    rows = len(labels)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=min(0.08, 0.3 / max(rows, 1)),
                        subplot_titles=labels)
    names = {"primary": ("another node named", "#333", "dash"), "load_restarted": ("sysbench restarted", "#888", "dot"),
             "released": ("fault released", "#2a7", "dashdot")}
    shown = set()
    for i, lab in enumerate(labels, start=1):
        g = series[series.label == lab]
        c = colors[g.topology.iloc[0]]
        fig.add_scatter(x=g.t_s, y=g.acked_per_s, mode="lines", line=dict(color=c, width=1.5, shape="hv"),
                        name=lab, showlegend=False, row=i, col=1,
                        hovertemplate=f"{lab}: %{{y:.0f}} writes/s at %{{x:.1f}} s<extra></extra>")
        m = marks[marks.label == lab]
        start, end = m[m.what == "gap_start"].t_s, m[m.what == "gap_end"].t_s
        if len(start) and len(end):
            fig.add_vrect(x0=float(start.iloc[0]), x1=float(end.iloc[0]), fillcolor="#d62728", opacity=0.12,
                          line_width=0, row=i, col=1)
            fig.add_annotation(x=float(end.iloc[0]), y=1, yref=f"y{i if i > 1 else ''} domain", xanchor="left",
                               text=f" unavailable {float(end.iloc[0]) - float(start.iloc[0]):.2f} s", showarrow=False,
                               font=dict(size=11, color="#a00"), row=i, col=1)
        fig.add_vline(x=0, line=dict(color="#d62728", width=1.5), row=i, col=1)
        for what, (text, col, dash) in names.items():
            for t in m[m.what == what].t_s:
                fig.add_scatter(x=[t, t], y=[0, float(g.acked_per_s.max() or 1)], mode="lines",
                                line=dict(color=col, dash=dash, width=1.2), name=text, legendgroup=text,
                                showlegend=text not in shown, row=i, col=1,
                                hovertemplate=f"{text} at %{{x:.2f}} s<extra></extra>")
                shown.add(text)
    fig.update_layout(template=TEMPLATE, width=WIDTH, height=max(420, 150 + 150 * rows),
                      title=title or "Failover timeline: the writer's acknowledged writes around the fault",
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"))
    fig.update_xaxes(title_text="seconds since the fault (red line; shaded: no write acknowledged)", row=rows, col=1)
    fig.update_yaxes(title_text="writes/s", rangemode="tozero")
    return fig


def unavailability(runs: pd.DataFrame, summary: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each fault's unavailability as a point (log seconds), the configuration's median as a bar mark with its 95%
    order-statistic interval; a run never acknowledged again is a hollow triangle at its lower bound."""
    _need(runs, ["label", "topology", "unavailability_s"], "unavailability")
    if runs.unavailability_s.isna().all() and "unavailable_at_least_s" not in runs:
        raise ChartError("no fault run measured an unavailability")
    order = list(summary.sort_values(["topology", "label"], ascending=False).label)
    colors = _colors(runs.topology)
    fig = _figure(title or "Unavailability after the fault, by configuration", hovermode="closest",
                  height=rows_height(len(order)), xaxis_title="seconds without an acknowledged write (log)",
                  yaxis_title="")
    for lab in order:
        g = runs[runs.label == lab]
        c = colors[g.topology.iloc[0]]
        done = g[g.unavailability_s.notna()]
        fig.add_scatter(x=done.unavailability_s, y=[lab] * len(done), mode="markers", showlegend=False,
                        marker=dict(color=c, size=7, opacity=0.55), customdata=np.c_[done.run_id.astype(str)],
                        hovertemplate="%{y}: %{x:.2f} s (%{customdata[0]})<extra></extra>")
        if "unavailable_at_least_s" in g:
            never = g[g.unavailability_s.isna() & g.unavailable_at_least_s.notna()]
            if len(never):
                fig.add_scatter(x=never.unavailable_at_least_s, y=[lab] * len(never), mode="markers",
                                showlegend=False, marker=dict(color=c, size=9, symbol="triangle-right-open"),
                                hovertemplate="%{y}: never acknowledged again, at least %{x:.1f} s<extra></extra>")
        s = summary[summary.label == lab].iloc[0]
        if s.unavail_median_s == s.unavail_median_s:
            hi = s.unavail_median_high_s if s.unavail_median_high_s == s.unavail_median_high_s else s.unavail_median_s
            lo = s.unavail_median_low_s if s.unavail_median_low_s == s.unavail_median_low_s else s.unavail_median_s
            fig.add_scatter(x=[s.unavail_median_s], y=[lab], mode="markers", showlegend=False,
                            marker=dict(color=c, size=16, symbol="line-ns-open", line=dict(width=3, color=c)),
                            error_x=dict(type="data", array=[hi - s.unavail_median_s],
                                         arrayminus=[s.unavail_median_s - lo], color=c, thickness=2, width=6),
                            hovertemplate=(f"{lab}: median %{{x:.2f}} s, 95% {lo:.2f}–{hi:.2f} s; p90 "
                                           f"{s.unavail_p90_s:.2f} s, max {s.unavail_max_s:.2f} s<extra></extra>"))
    values = list(runs.unavailability_s.dropna()) + list(runs.get("unavailable_at_least_s", pd.Series()).dropna())
    log_axis(fig.update_xaxes, values, from_tick=True)  # a 6 s cluster of dots shows the 5 beside it
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=order, automargin=True)
    return fig


def lost_writes(summary: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Per configuration, the share of its faults that lost any acknowledged write (dot) with its exact 95% interval
    (Clopper-Pearson, whisker); the counts beside it: in how many faults, how many writes, at most how many in one."""
    _need(summary, ["label", "topology", "lost_total", "runs_losing", "audited_runs", "losing_share_low",
                    "losing_share_high"], "lost_writes")
    d = summary[summary.audited_runs > 0].sort_values(["topology", "label"], ascending=False)
    if d.empty:
        raise ChartError("no fault run's ledger was audited in this campaign")
    colors = _colors(d.topology)
    share = d.runs_losing / d.audited_runs
    fig = _figure(title or "Faults that lost acknowledged writes, by configuration", hovermode="closest",
                  height=rows_height(len(d)), xaxis_title="share of the faults that lost any acknowledged write "
                  "(whisker: 95% interval)", yaxis_title="")
    fig.add_scatter(x=100 * share, y=d.label, mode="markers", showlegend=False,
                    marker=dict(color=[colors[t] for t in d.topology], size=11),
                    error_x=dict(type="data", symmetric=False, array=100 * (d.losing_share_high - share),
                                 arrayminus=100 * (share - d.losing_share_low), color="#555", thickness=1.5, width=5),
                    hovertemplate="%{y}: %{x:.0f}% of faults lost writes<extra></extra>")
    text = [f"{int(r.runs_losing)} of {int(r.audited_runs)} faults" + (
        f": {int(r.lost_total)} writes, at most {int(r.lost_max)} in one" if r.lost_total else
        f": none (≤ {100 * r.losing_share_high:.0f}%)") for r in d.itertuples()]
    fig.add_scatter(x=[100 * h + 3 for h in d.losing_share_high], y=d.label, mode="text", text=text,
                    textposition="middle right", showlegend=False, hoverinfo="skip", cliponaxis=False)
    fig.update_xaxes(range=[-4, 185], tickvals=[0, 25, 50, 75, 100], ticktext=["0%", "25%", "50%", "75%", "100%"],
                     zeroline=False)
    fig.update_yaxes(type="category", automargin=True)
    return fig


def lost_against_moment(runs: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each fault's acknowledged writes lost (y) against its moment into the load (x: ``fault_moment_s``, drawn
    within a range), a colour per configuration: whether what a fault loses depends on when it comes."""
    _need(runs, ["fault_moment_s", "lost", "label", "topology"], "lost_against_moment")
    d = runs.dropna(subset=["fault_moment_s", "lost"])
    if d.empty:
        raise ChartError("no audited fault run with its moment recorded in this campaign")
    fig = _figure(title or "Acknowledged writes lost against the fault's moment", hovermode="closest",
                  xaxis_title="the fault's moment into the load (s)", yaxis_title="acknowledged writes lost")
    symbols = ("circle", "diamond", "square", "triangle-up", "x", "cross")
    colors = _colors(d.topology)
    for i, (label, g) in enumerate(d.groupby("label", sort=True)):
        fig.add_scatter(x=g.fault_moment_s, y=g.lost, mode="markers", name=str(label),
                        marker=dict(color=colors[g.topology.iloc[0]], size=9, opacity=0.75,
                                    symbol=symbols[i % len(symbols)]),
                        hovertemplate=f"{label}: at %{{x:.2f}} s, %{{y}} lost<extra></extra>")
    fig.update_yaxes(rangemode="tozero")
    return fig


def unavailability_by_setting(runs: pd.DataFrame, expected: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """A panel per setting that decides failover time: each fault's unavailability (dot) at the setting's value, the
    median per value (bar mark), and what the system's mechanism predicts (``expected``: setting, value, seconds,
    words; a dashed line)."""
    _need(runs, ["setting", "value", "unavailability_s", "label", "topology"], "unavailability_by_setting")
    _need(expected, ["setting", "value", "expected_s", "words"], "unavailability_by_setting")
    settings = list(dict.fromkeys(runs.setting))
    colors = _colors(runs.topology)
    fig = make_subplots(rows=1, cols=len(settings), horizontal_spacing=0.12)  # each x-axis title names its setting
    for i, name in enumerate(settings, start=1):
        g = runs[runs.setting == name]
        c = colors[g.topology.iloc[0]]
        fig.add_scatter(x=g.value, y=g.unavailability_s, mode="markers", name=f"{name}: one fault",
                        marker=dict(color=c, size=7, opacity=0.6), showlegend=False, row=1, col=i,
                        hovertemplate=f"{name} = %{{x}}: unavailable %{{y:.2f}} s<extra></extra>")
        med = g.groupby("value").unavailability_s.median()
        fig.add_scatter(x=med.index, y=med.values, mode="markers", name="median of the faults",
                        marker=dict(color=c, size=16, symbol="line-ew-open", line=dict(width=3, color=c)),
                        showlegend=i == 1, legendgroup="median", row=1, col=i,
                        hovertemplate=f"{name} = %{{x}}: median %{{y:.2f}} s<extra></extra>")
        e = expected[expected.setting == name].sort_values("value")
        if len(e):  # the prediction as a function of the setting (the words say which: in the hover and the caption)
            fig.add_scatter(x=e.value, y=e.expected_s, mode="lines", line=dict(color="#333", dash="dash"),
                            name="predicted by the mechanism", legendgroup="predicted", showlegend=i == 1,
                            row=1, col=i, hovertemplate=f"{e.words.iloc[0]}<br>{name} = %{{x:.1f}}: "
                                                        f"%{{y:.1f}} s<extra></extra>")
        fig.update_xaxes(title_text=f"{name} (s)", row=1, col=i)
    fig.update_yaxes(title_text="unavailable (s)", rangemode="tozero")
    fig.update_layout(template=TEMPLATE, width=WIDTH, height=HEIGHT,
                      title=title or "Unavailability against the settings that decide failover time")
    return fig


def rejoin_times(runs: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each rejoin under load: seconds until the restarted node was back in its role (dot) and until its lag stayed
    under 100 ms (hollow diamond), one row per cluster and path, coloured by the write rate."""
    _need(runs, ["cluster", "rejoin_kind", "rejoin_s", "rate"], "rejoin_times")
    d = runs.dropna(subset=["rejoin_s"]).copy()
    if d.empty:
        raise ChartError("no rejoin under load in this campaign")
    d["row"] = d.cluster.astype(str) + " by " + d.rejoin_kind.astype(str)
    order = sorted(d.row.unique(), reverse=True)
    rates = sorted(d.rate.dropna().unique())
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]
    fig = _figure(title or "Rejoin under load, by path and write rate", hovermode="closest",
                  height=rows_height(len(order)), xaxis_title="seconds after the restart (log)", yaxis_title="")
    for i, rate in enumerate(rates):
        g = d[d.rate == rate]
        c = palette[i % len(palette)]
        name = f"{rate:g} trx/s asked" if rate == rate else "closed loop"
        fig.add_scatter(x=g.rejoin_s, y=g.row, mode="markers", name=f"{name}: back in its role", legendgroup=name,
                        marker=dict(color=c, size=9, opacity=0.8),
                        hovertemplate="%{y}: back after %{x:.1f} s<extra></extra>")
        if "settled_s" in g and g.settled_s.notna().any():
            fig.add_scatter(x=g.settled_s, y=g.row, mode="markers", name=f"{name}: lag under 100 ms",
                            legendgroup=name, marker=dict(color=c, size=10, symbol="diamond-open"),
                            hovertemplate="%{y}: lag settled after %{x:.1f} s<extra></extra>")
    values = list(d.rejoin_s) + (list(d.settled_s.dropna()) if "settled_s" in d else [])
    log_axis(fig.update_xaxes, values)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=order, automargin=True)
    return fig
