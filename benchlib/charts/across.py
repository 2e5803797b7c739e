"""The chart of two campaigns compared (``benchlib.analysis.across``): each configuration both measured, its ratio
B/A with the 95% interval that counts the day-to-day variation, against 1 (no change)."""

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
