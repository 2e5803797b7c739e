"""Cost per transaction by role: one panel per cost (CPU, context switches, bytes written ...), a bar per role with
its interval (``benchlib.analysis.views.costs`` makes the frame)."""

from __future__ import annotations

from typing import Iterable

import pandas as pd
import plotly.graph_objects as go

from benchlib.charts.axes import category_axis
from benchlib.charts.builders import _legend_above_panel_titles, _need, _node_color, _whisker_bars
from benchlib.charts.errors import ChartError
from benchlib.charts.theme import TEMPLATE

__all__ = ["COST_TITLES", "ROLE_NAMES", "cost_bars"]

COST_TITLES = {"cpu_ms": "CPU ms", "ctx_switches": "context switches", "read_kb": "KB read", "write_kb": "KB written",
               "disk_writes": "disk writes", "disk_write_kb": "disk KB written", "disk_read_kb": "disk KB read",
               "net_tx_kb": "network KB sent", "innodb_fsyncs": "InnoDB fsyncs", "redo_fsyncs": "redo log fsyncs",
               "net_kb": "client-protocol KB"}


#: the roles of cost_by_config, as a legend says them (nodes of one role are summed within a run)
ROLE_NAMES = {"writer": "writer", "replica": "replicas, summed", "member": "other members, summed",
              "host": "host (all processes)"}


def cost_bars(df: pd.DataFrame, *, x: str = "label", y: str = "per_trx", color: str = "role", facet: str = "cost",
              error_low: str | None = "ci_low", error_high: str | None = "ci_high",
              costs: Iterable[str] = ("cpu_ms", "ctx_switches", "write_kb"), title: str | None = None) -> go.Figure:
    """Cost per transaction by configuration (``x``) and role (``color``: writer, replica, member, host), one panel
    per cost, each bar with its interval."""
    from plotly.subplots import make_subplots

    _need(df, [x, y, color, facet, error_low, error_high], "cost_bars")
    panels = [c for c in costs if c in set(df[facet])]
    if not panels:
        raise ChartError(f"cost_bars: none of the costs {list(costs)} in the frame",
                         hint=f"costs: {', '.join(sorted(set(df[facet])))}")
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{COST_TITLES.get(c, c)} per transaction" for c in panels])
    height = 260 * len(panels) + 150
    fig.update_layout(template=TEMPLATE, title=title or "Cost per transaction by role", barmode="group",
                      hovermode="closest", height=height, margin=dict(t=100))
    order = list(ROLE_NAMES)
    roles = sorted(dict.fromkeys(df[color]), key=lambda r: order.index(r) if r in order else len(order))
    for row, cost in enumerate(panels, start=1):
        d = df[df[facet] == cost]
        for i, role in enumerate(roles):
            dr = d[d[color] == role]
            if dr.empty:
                continue
            slot = "others" if role in ("replica", "member") else str(role)  # never both in a cluster
            fig.add_bar(x=dr[x].astype(str), y=dr[y], name=ROLE_NAMES.get(role, str(role)),
                        marker_color=_node_color(order.index(role) if role in order else i),
                        legendgroup=str(role), showlegend=row == 1, offsetgroup=slot,
                        hovertemplate=f"{role}: %{{y:.3g}}<extra></extra>", row=row, col=1)
            _whisker_bars(fig, dr, x, y, error_low, error_high, offsetgroup=slot, legendgroup=str(role), row=row, col=1)
    category_axis(fig, df[x], row=len(panels), col=1)
    fig.update_layout(height=height + fig.layout.margin.b - 60)  # the panels keep their height under long ticks
    _legend_above_panel_titles(fig)
    return fig
