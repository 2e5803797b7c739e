"""The history axis's chart (the chart catalogue adds it after its own): each anomaly kind's rate per 100,000
committed transactions, per configuration (cluster and isolation level), with its 95% interval; a kind not seen as
a hollow point at its one-sided upper bound. A log axis: the rates span four decades between a replica's stale reads
and a lost update."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from benchlib.axes.history.analysis import CONFIG
from benchlib.axes.history.checker import KINDS
from benchlib.charts.axes import log_axis
from benchlib.charts.builders import _figure, _need
from benchlib.charts.consistency import rows_height
from benchlib.charts.left_out import LeftOut
from benchlib.charts.theme import OKABE_ITO

__all__ = ["CAPTIONS", "CHARTS", "anomaly_rates", "rates_frame"]

#: the kinds always drawn (a bound when not seen): what Jepsen's analyses report for MySQL and Galera
SHOWN = ("lost update", "G-single", "G2-item", "G-single-realtime", "G2-item-realtime")


def rates_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """The history summary (``a.axis("history").summary``) as one row per configuration and kind: ``label``
    ("galera · repeatable-read"), ``kind``, ``count``, ``per_100k``, ``low``, ``high``, ``upper``, ``committed``,
    ``applies`` (False where no appending transaction committed: no anomaly could show, the row says so and has no
    points); the kinds of ``SHOWN`` and any other kind seen somewhere."""
    if summary.empty:
        return pd.DataFrame(columns=["label", "kind", "count", "per_100k", "low", "high", "upper", "committed",
                                     "applies"])
    settings = [c for c in CONFIG if c in summary]  # the summary's keys: the settings that differ, and the level
    labels = summary[["cluster"] + settings].astype(str).agg(" · ".join, axis=1)
    applies = summary.wrote > 0 if "wrote" in summary else pd.Series(True, index=summary.index)
    labels = labels.where(applies, labels + " (no write committed)")
    kinds = [k for k in KINDS if k in SHOWN or (k in summary and (summary[k] > 0).any())]
    rows = [{"label": labels[i], "kind": k, "count": int(r[k]), "per_100k": r[f"{k} per_100k"],
             "low": r[f"{k} low"], "high": r[f"{k} high"], "upper": r[f"{k} upper"], "committed": int(r.committed),
             "applies": bool(applies[i])}
            for i, r in summary.iterrows() for k in kinds]
    return pd.DataFrame(rows)


def anomaly_rates(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Rate per 100,000 committed transactions (log x) per configuration (a row each, kinds side by side within
    it): a filled point with its 95% whisker where seen, a hollow one at the one-sided upper bound where not."""
    _need(df, ["label", "kind", "count", "per_100k", "low", "high", "upper", "committed"], "anomaly_rates")
    labels = list(dict.fromkeys(df.label))[::-1]
    df = df[df.applies] if "applies" in df else df
    kinds = list(dict.fromkeys(df.kind))
    colors = {k: OKABE_ITO[i % len(OKABE_ITO)] for i, k in enumerate(kinds)}
    step = 0.7 / max(len(kinds), 1)
    fig = _figure(title or "Isolation anomalies per 100,000 committed transactions", hovermode="closest",
                  height=rows_height(len(labels) * max(1, len(kinds) // 2)),
                  xaxis_title="anomalies per 100,000 committed transactions (95% interval; hollow: none seen, "
                              "at most)", yaxis_title="")
    for j, k in enumerate(kinds):
        g = df[df.kind == k]
        y = np.array([labels.index(v) for v in g.label], dtype=float) + 0.35 - step * (j + 0.5)
        for hollow, part, yy in ((False, g[g["count"] > 0], y[(g["count"] > 0).to_numpy()]),
                                 (True, g[g["count"] == 0], y[(g["count"] == 0).to_numpy()])):
            if part.empty:
                continue
            x = part.upper if hollow else part.per_100k
            whisker = None if hollow else dict(type="data", array=(part.high - part.per_100k).tolist(),
                                                arrayminus=(part.per_100k - part.low).clip(lower=0).tolist(),
                                                color=colors[k], thickness=1.5, width=3)
            fig.add_scatter(x=x, y=yy, mode="markers", name=k, legendgroup=k,
                            showlegend=not hollow or bool((g["count"] == 0).all()),
                            marker=dict(color=colors[k], size=9, line=dict(color=colors[k], width=2),
                                        symbol="circle-open" if hollow else "circle"),
                            error_x=whisker,
                            customdata=np.c_[part.label, part["count"], part.committed, part.low, part.high],
                            hovertemplate=(f"{k}, %{{customdata[0]}}: " + (
                                "none of %{customdata[2]:,} transactions, at most %{x:.3g} per 100,000"
                                if hollow else "%{customdata[1]} of %{customdata[2]:,}: %{x:.3g} per 100,000, "
                                               "95% %{customdata[3]:.3g}–%{customdata[4]:.3g}") + "<extra></extra>"))
    values = pd.concat([df.loc[df["count"] > 0, ["low", "per_100k", "high"]].stack(),
                        df.loc[df["count"] == 0, "upper"]])
    v = values[values > 0]
    span = [np.log10(v.min() / 1.4), np.log10(v.max() * 1.25)] if len(v) else None
    log_axis(fig.update_xaxes, v.tolist(), range=span)
    fig.update_yaxes(tickvals=list(range(len(labels))), ticktext=labels, range=[-0.6, len(labels) - 0.4],
                     automargin=True, zeroline=False, showgrid=False)
    for i in range(len(labels) - 1):
        fig.add_hline(y=i + 0.5, line=dict(color="#e4e4e4", width=1))
    return fig


def _rates(a: Any) -> go.Figure:
    s = a.axis("history").summary
    if s.empty:
        raise LeftOut("no run recorded a history", hint="a campaign with a [history] table "
                                                        "(examples/campaigns/isolation.toml)")
    return anomaly_rates(rates_frame(s))


CHARTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "anomaly_rates": ("Isolation anomalies by cluster and isolation level", _rates),
}

CAPTIONS: dict[str, Callable[[Any], str]] = {
    "anomaly_rates": lambda a: ("Whisker: 95% interval, runs as the unit; hollow: none seen, at the one-sided upper "
                                "bound. '-realtime': a stale read."),
}
