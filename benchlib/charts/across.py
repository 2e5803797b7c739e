"""Charts across campaigns: two campaigns compared (``benchlib.analysis.across``: each configuration both measured,
its ratio B/A with the 95% interval that counts the day-to-day variation, against 1), and a configuration's history
(``benchlib.analysis.history``: its level campaign by campaign, and where it moved)."""

from __future__ import annotations

import plotly.graph_objects as go

from benchlib.charts.builders import ratio_bars


def campaigns_ratio(c) -> go.Figure:
    """``c``: a ``CampaignComparison``. One bar per configuration, coloured by topology, labelled by what sets the
    configurations apart (the match keys that vary)."""
    from benchlib.analysis.across import METRICS

    m = c.matched.copy()
    varying = [k for k in c.keys if k != "topology" and m[k].nunique() > 1]
    m["configuration"] = [" ".join([str(r["topology"]) if "topology" in m else ""]
                                   + [f"{k} {r[k]}" for k in varying]).strip() for _, r in m.iterrows()]
    color = "topology" if "topology" in m else "configuration"
    _, higher, what = METRICS[c.metric]
    fig = ratio_bars(m, x="configuration", color=color, shade=None, baseline=c.a.name,
                     title=f"{c.b.name} against {c.a.name}: {what.split(' (')[0]}")
    fig.update_layout(yaxis_title=f"{what.split(' (')[0]}, × {c.a.name}" + ("" if higher else " (lower is better)"))
    return fig


def history_chart(h, title: str = "") -> go.Figure:
    """``h``: a ``History``. One point per campaign by when it was made, its runs' 95% interval as a whisker, each
    segment's level as a line, a dashed line where the level moved."""
    from benchlib.charts.builders import _figure

    p = h.points
    fig = _figure(title or f"{h.metric} across campaigns", xaxis_title="campaign made", yaxis_title=h.metric,
                  hovermode="closest", showlegend=False)
    fig.add_scatter(x=p["when"], y=p["mean"], mode="markers", marker={"size": 9, "color": "#1f4e79"},
                    error_y={"type": "data", "symmetric": False, "array": (p.ci_high - p["mean"]).fillna(0),
                             "arrayminus": (p["mean"] - p.ci_low).fillna(0), "color": "#7f9cb5"},
                    text=p.campaign, hovertemplate="%{text}: %{y:,.4g}<extra></extra>")
    for _, seg in p.groupby("segment"):
        fig.add_scatter(x=[seg["when"].min(), seg["when"].max()], y=[seg["mean"].mean()] * 2, mode="lines",
                        line={"color": "#c0504d", "width": 2}, hoverinfo="skip")
    for c in h.changes.itertuples():
        fig.add_vline(x=c.when, line_dash="dash", line_color="#c0504d")
        fig.add_annotation(x=c.when, y=1, yref="paper", text=f"x{c.ratio:.2f}", showarrow=False, yanchor="bottom",
                           font={"color": "#c0504d"})
    return fig
