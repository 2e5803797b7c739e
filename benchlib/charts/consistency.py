"""What a read consistency setting buys and costs: stale-read fractions with their intervals, the staleness of the
stale reads, the cost-and-benefit plane, read latency by setting. Frames from ``benchlib.analysis.views``
(``stale_reads``, ``staleness``, ``consistency_costs``); one row (a point) per configuration, labelled ``label``,
coloured by its ``topology``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from benchlib.charts.axes import log_axis, log_ticks
from benchlib.charts.builders import _colors, _figure, _legend_above_panel_titles, _need
from benchlib.charts.theme import HEIGHT, TEMPLATE, WIDTH
from benchlib.charts.errors import ChartError

__all__ = ["consistency_plane", "read_latency", "rows_height", "stale_fractions", "staleness_ecdf"]

ROW_PX = 34  # per configuration on a chart with one row each


def rows_height(n: int) -> int:
    return max(360, 190 + ROW_PX * n)


def stale_fractions(df: pd.DataFrame, *, y: str = "label", x: str = "fraction", error_low: str = "low",
                    error_high: str = "high", color: str = "topology", title: str | None = None) -> go.Figure:
    """Stale fraction per configuration (a row each), its 95% interval as a whisker; none stale: a hollow point at 0
    with the one-sided upper bound."""
    _need(df, [x, y, error_low, error_high, color], "stale_fractions")
    d = df.sort_values([color, y], ascending=False)
    colors = _colors(d[color])
    fig = _figure(title or "Stale reads by read consistency", hovermode="closest", height=rows_height(len(d)),
                  xaxis_title="stale reads, % of reads on the other nodes", yaxis_title="")
    for c, g in d.groupby(color, sort=False):
        none = g["stale"] == 0 if "stale" in g else g[x] == 0
        for hollow, part in ((False, g[~none]), (True, g[none])):
            if part.empty:
                continue
            fig.add_scatter(
                x=part[x] * 100, y=part[y], mode="markers", name=str(c), legendgroup=str(c),
                showlegend=bool(not hollow or none.all()),
                marker=dict(color=colors[c], size=10, line=dict(color=colors[c], width=2),
                            symbol="circle-open" if hollow else "circle"),
                error_x=dict(type="data", array=((part[error_high] - part[x]) * 100).tolist(),
                             arrayminus=((part[x] - part[error_low]) * 100).clip(lower=0).tolist(),
                             color=colors[c], thickness=1.5, width=4),
                customdata=np.c_[part.get("stale", part[x]), part.get("reads", part[x]), part[error_low] * 100,
                                 part[error_high] * 100],
                hovertemplate="%{y}: %{x:.2f}% (%{customdata[0]} of %{customdata[1]} reads), "
                              "95% %{customdata[2]:.2f}–%{customdata[3]:.2f}%<extra></extra>")
    top = float(np.nanmax(d[error_high].replace([np.inf], np.nan))) * 100 if len(d) else 1.0
    fig.update_xaxes(range=[-0.03 * top, top * 1.05], ticksuffix="%", zeroline=True, zerolinecolor="#bbb")
    fig.update_yaxes(type="category", automargin=True)
    return fig


def staleness_ecdf(df: pd.DataFrame, *, x: str = "staleness_ms", group: str = "label", color: str = "topology",
                   title: str | None = None) -> go.Figure:
    """The distribution of staleness among the stale reads, one step line per configuration (``group``), on a log ms
    axis: how far behind a stale read was (since the first value it missed was acknowledged or read)."""
    _need(df, [x, group, color], "staleness_ecdf")
    colors = _colors(df[color])
    dashes = ("solid", "dash", "dot", "dashdot")
    fig = _figure(title or "How stale the stale reads were", hovermode="closest",
                  xaxis_title="staleness, ms (log)", yaxis_title="share of the stale reads at or below")
    seen: dict = {}
    for (c, label), g in df.groupby([color, group], sort=True):
        v = np.sort(g[x].to_numpy(dtype=float))
        v = v[v > 0]
        if not len(v):
            continue
        k = seen.setdefault(c, 0)
        seen[c] = k + 1
        y = np.arange(1, len(v) + 1) / len(v)
        fig.add_scatter(x=np.r_[v[0], v], y=np.r_[0.0, y], mode="lines", line_shape="hv", name=f"{label} ({len(v):,})",
                        line=dict(color=colors[c], dash=dashes[k % len(dashes)], width=2),
                        hovertemplate=f"{label}: %{{y:.0%}} of its stale reads within %{{x:.0f}} ms<extra></extra>")
    if not fig.data:
        raise ChartError("staleness_ecdf: no stale read with a staleness above 0 ms")
    log_axis(fig.update_xaxes, df[x][df[x] > 0])
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    return fig


WRITER = {"tps": "writer's throughput, × the weakest setting", "lat_pctl_ms": "writer's latency, × the weakest setting"}


def consistency_plane(df: pd.DataFrame, metric: str = "tps", *, x: str = "fraction", y: str = "ratio",
                      panel: str = "cluster", text: str = "setting", symbol: str | None = None,
                      color: str = "topology", title: str | None = None) -> go.Figure:
    """One point per configuration, a panel per cluster (``panel``): the writer's cost against the cluster's
    weakest setting (``metric``: its throughput ratio, or latency for open-loop loads; log axis) over the stale
    fraction it buys, both with their 95% intervals, each point named by its ``text`` (the setting) and shaped by
    ``symbol`` (default: the write rate when the campaign has several)."""
    from plotly.subplots import make_subplots

    _need(df, [x, y, panel, text, color, "low", "high", "ratio_low", "ratio_high"], "consistency_plane")
    if symbol is None and "rate" in df and df["rate"].nunique() > 1:
        symbol = "rate"
    colors = _colors(df[color])
    panels = list(dict.fromkeys(df.sort_values([color, panel])[panel]))
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[str(p) for p in panels])
    fig.update_layout(template=TEMPLATE, hovermode="closest",
                      title=title or "What each read consistency costs the writer and buys the readers")
    shapes = ("circle", "square", "diamond", "triangle-up", "x", "star")
    kinds = list(dict.fromkeys(df[symbol].sort_values())) if symbol else [None]
    # the y range holds every point and the intervals up to 2x beyond them (a wider one runs off the panel)
    pts = df[y].astype(float)
    lo = min(pts.min(), np.nanmax([df["ratio_low"].replace(-np.inf, np.nan).min(), pts.min() / 2]))
    hi = max(pts.max(), np.nanmin([df["ratio_high"].replace(np.inf, np.nan).max(), pts.max() * 2]))
    legend: set[str] = set()  # each symbol (write rate) once in the legend
    for col, p in enumerate(panels, start=1):
        d = df[df[panel] == p]
        c = d[color].iloc[0]
        for k, kind in enumerate(kinds):
            g = d if kind is None else d[d[symbol] == kind]
            if g.empty:
                continue
            ylo, yhi = g["ratio_low"].astype(float), g["ratio_high"].astype(float)
            has = np.isfinite(ylo) & np.isfinite(yhi)
            name = str(c) if kind is None else f"{symbol} {kind:g}" if isinstance(kind, float) else f"{symbol} {kind}"
            fig.add_scatter(
                x=g[x] * 100, y=g[y], mode="markers", name=name, legendgroup=name,
                showlegend=bool(symbol) and name not in legend, marker=dict(
                    color=colors[c], size=10, symbol=shapes[k % len(shapes)], line=dict(color="white", width=1)),
                error_x=dict(type="data", array=((g["high"] - g[x]) * 100).tolist(),
                             arrayminus=((g[x] - g["low"]).clip(lower=0) * 100).tolist(), color=colors[c],
                             thickness=1.2, width=3),
                error_y=dict(type="data", array=(yhi - g[y]).where(has, 0).tolist(),
                             arrayminus=(g[y] - ylo).where(has, 0).tolist(), color=colors[c], thickness=1.2, width=3),
                customdata=np.c_[g[text].astype(str)],
                hovertemplate="%{customdata[0]}: %{x:.2f}% stale, writer %{y:.2f}×<extra></extra>", row=1, col=col)
            legend.add(name)
        fig.add_hline(y=1.0, line_dash="dash", line_color="#888", row=1, col=col)
        # the x range: the points, and the intervals up to 4x the largest fraction (at least 1%)
        most = float(d[x].max())
        top = 100 * max(2 * most, min(float(d["high"].replace(np.inf, np.nan).max()), max(4 * most, 0.01)))
        top = min(top, 100.0)
        x0, x1 = -0.08 * top, min(top * 1.5, 130.0)  # room for the names; never past 100% but for them
        fig.update_xaxes(range=[x0, x1], ticksuffix="%", row=1, col=col)
        _names(fig, d[x].to_numpy(float) * 100, d[y].to_numpy(float), d[text].astype(str).tolist(), col,
               (x0, x1), (lo / 1.1, hi * 1.1), len(panels))
    ticks, labels = log_ticks([lo, hi], steps=(1, 1.5, 2, 3, 5, 7) if hi / lo < 10 else (1, 2, 5))
    fig.update_yaxes(type="log", range=[np.log10(lo / 1.1), np.log10(hi * 1.1)], tickvals=ticks, ticktext=labels)
    fig.update_yaxes(title_text=WRITER.get(metric, metric), row=1, col=1)
    fig.update_xaxes(title_text="stale reads, % of reads", row=1, col=(len(panels) + 1) // 2)
    _legend_above_panel_titles(fig)  # the legend (write rates), if any, and the title block above the panel titles
    return fig


def _names(fig: go.Figure, xs, ys, texts: list[str], col: int, xrange, yrange, panels: int) -> None:
    """Each point's name beside it, moved up or down (with a thin line to its point) where it would cover another
    name: greedy, from the top, on the panel's approximate pixel grid (a log y axis)."""
    width = (WIDTH - 130) / panels * 0.9
    height = HEIGHT - 280
    lx, ly = np.log10(yrange[0]), np.log10(yrange[1])
    placed: list[tuple[float, float, float, float]] = []
    order = np.argsort(-np.asarray(ys, dtype=float), kind="stable")
    for i in order:
        px = (xs[i] - xrange[0]) / (xrange[1] - xrange[0]) * width
        py = (np.log10(ys[i]) - lx) / (ly - lx) * height
        w, h = 6.2 * len(texts[i]) + 4, 15.0
        for shift in (0, -16, 16, -32, 32, -48, 48, -64, 64, -80, 80):
            box = (px + 14, py + shift - h / 2, px + 14 + w, py + shift + h / 2)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                break
        placed.append(box)
        fig.add_annotation(x=xs[i], y=np.log10(ys[i]), text=texts[i], showarrow=True, arrowhead=0, arrowwidth=0.8,
                           arrowcolor="#999", ax=14, ay=-shift, xanchor="left", font=dict(size=11, color="#333"),
                           row=1, col=col)


def read_latency(df: pd.DataFrame, *, y: str = "label", p50: str = "read_ms_p50", p99: str = "read_ms_p99",
                 wait: str = "wait_ms_p50", color: str = "topology", title: str | None = None) -> go.Figure:
    """A read's latency per configuration on a log ms axis: the median (dot) and p99 (bar end), and the median
    causal wait inside it (hollow diamond) where the setting waits."""
    _need(df, [y, p50, p99, color], "read_latency")
    d = df.sort_values([color, y], ascending=False)
    colors = _colors(d[color])
    fig = _figure(title or "Read latency by read consistency", hovermode="closest", height=rows_height(len(d)),
                  xaxis_title="read latency on the other nodes, ms (log)", yaxis_title="")
    for c, g in d.groupby(color, sort=False):
        fig.add_scatter(x=g[p50], y=g[y], mode="markers", name=str(c), legendgroup=str(c),
                        marker=dict(color=colors[c], size=10),
                        error_x=dict(type="data", array=(g[p99] - g[p50]).tolist(), arrayminus=[0] * len(g),
                                     color=colors[c], thickness=1.5, width=4),
                        customdata=g[p99], hovertemplate="%{y}: median %{x:.2f} ms, p99 %{customdata:.2f} ms"
                                                         "<extra></extra>")
        if wait in g and g[wait].notna().any():
            w = g.dropna(subset=[wait])
            w = w[w[wait] > 0]
            fig.add_scatter(x=w[wait], y=w[y], mode="markers", name="causal wait (median)", legendgroup="wait",
                            showlegend=not any(t.legendgroup == "wait" for t in fig.data),
                            marker=dict(color=colors[c], size=10, symbol="diamond-open", line=dict(width=2)),
                            hovertemplate="%{y}: the causal wait %{x:.2f} ms (median)<extra></extra>")
    values = pd.concat([d[p50], d[p99], d[wait] if wait in d else pd.Series(dtype=float)])
    log_axis(fig.update_xaxes, values[values > 0])
    fig.update_yaxes(type="category", automargin=True)
    return fig
