"""Axes of the comparative charts: log axes ticked 1-2-5 per decade, client-thread axes ticked where measured,
and categorical axes whose configuration labels read as short ticks (``tick_text``) in natural order."""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from benchlib.charts.theme import HEIGHT

__all__ = ["NAME_TICKS", "SETTING_TICKS", "category_axis", "log_axis", "log_ticks", "natural", "short_name",
           "threads_axis", "tick_text"]


def log_ticks(values: Iterable[float], *, steps: tuple[int, ...] = (1, 2, 5)) -> tuple[list[float], list[str]]:
    """Tick values and their full labels for a log axis over ``values``: 1-2-5 steps per decade by default
    ("20", "50", "100", never plotly's bare "2" next to a "10"), 1-2-3-5 over less than 1.3 decades."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x) and x > 0], dtype=float)
    if not len(v):
        return [], []
    if steps == (1, 2, 5) and v.max() < 20 * v.min():  # under 1.3 decades: a 3 too, so the top values have a tick
        steps = (1, 2, 3, 5)
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max()))
    ticks = [m * 10.0 ** e for e in range(int(lo), int(hi) + 1) for m in steps]
    ticks = [t for t in ticks if v.min() / 1.5 <= t <= v.max() * 1.5] or [float(v.min())]
    return ticks, [f"{t:g}" for t in ticks]


def log_axis(update, values: Iterable[float], *, steps: tuple[int, ...] = (1, 2, 5), from_tick: bool = False,
             **kw) -> None:
    """A log axis ticked by ``log_ticks``; ``from_tick``: it starts at the tick below the smallest value (a cluster
    of values just above a tick would otherwise show no tick beside it)."""
    v = [x for x in values if x is not None and np.isfinite(x) and x > 0]
    vals, text = log_ticks(v, steps=steps)
    if from_tick and v:
        low = max([t for t in vals if t <= min(v)], default=min(v))
        kw["range"] = [np.log10(low / 1.05), np.log10(max(v) * 1.1)]
    update(type="log", tickvals=vals, ticktext=text, **kw)


def threads_axis(update, values: Iterable[float]) -> None:
    """A log axis of client threads ticked at the thread counts measured (1, 8, 64: no unmeasured 10s)."""
    vals = sorted({float(v) for v in values if pd.notna(v) and v > 0})
    if len(vals) > 12:
        log_axis(update, vals)
    else:
        update(type="log", tickvals=vals, ticktext=[f"{v:g}" for v in vals])


def short_name(word: str) -> str:
    """One part of a label as a tick reads it: a topology or workload by its short name, a setting by its own."""
    if word in NAME_TICKS:
        return NAME_TICKS[word]
    if word.startswith("oltp_"):
        return word[5:].replace("_", " ")
    if word.startswith("wsrep_sync_wait="):  # a Galera read consistency
        return "sync wait " + word.partition("=")[2]
    return word


def tick_text(label: str) -> str:
    """A configuration label as a short tick of a few lines, so that many categories side by side stay level
    and never overlap: "galera t32 durability=relaxed" -> "galera<br>32 thr<br>relaxed", "galera (3 nodes) ·
    oltp_update_index fc_limit=16" -> "galera<br>3 nodes<br>update index<br>fc limit 16"."""
    head, _, rest = str(label).partition(" · ")
    m = re.match(r"(.+) \((\d+) nodes\)$", head)  # views.ratios: "topology (N nodes)", then a configuration label
    words = [short_name(m.group(1)), f"{m.group(2)} nodes"] if m else []
    for w in (rest if m else str(label)).split():
        key, _, value = w.partition("=")
        if not value:
            words.append(f"{w[1:]} thr" if w[:1] == "t" and w[1:].replace(".", "").isdigit() else short_name(w))
        elif key == "durability":
            words.append(value)
        else:
            words.append(f"{SETTING_TICKS.get(key, key)} {short_name(value)}".strip())
    return "<br>".join(words)


#: how a setting reads in a tick (tick_text)
SETTING_TICKS = {"fc_limit": "fc limit", "gr_applier_threshold": "fc limit", "parallel_threads": "appliers",
                 "applier_threads": "appliers", "gr_consistency": "", "consistency": ""}
#: topologies and workloads whose names are too long for a tick
NAME_TICKS = {"group_replication": "GR", "insert_single": "insert", "BEFORE_AND_AFTER": "BEFORE+<br>AFTER",
              "BEFORE_ON_PRIMARY_FAILOVER": "BEFORE<br>FAILOVER"}


def natural(label: str) -> tuple:
    """Sort key of a label with numbers in it: numbers compare as numbers (t8 before t32, 5 nodes after 3)."""
    parts = re.split(r"(\d+(?:\.\d+)?)", str(label))
    return tuple(float(p) if i % 2 else p for i, p in enumerate(parts))


def category_axis(fig: go.Figure, labels: Iterable, **where) -> None:
    """Ticks of a categorical x axis as short lines (tick_text), in natural order, upright and smaller when
    there are many; past 16, one line each (" · " between the parts) turned on end, since a block of lines
    turned on end is wider than a category then; the bottom margin grown to hold them."""
    labels = sorted({str(v) for v in labels}, key=natural)
    on_end = len(labels) > 16
    texts = [tick_text(v).replace("<br>", " · ") if on_end else tick_text(v) for v in labels]  # on end: one line
    lines = max((t.count("<br>") + 1 for t in texts), default=1)
    longest = max((len(line) for t in texts for line in t.split("<br>")), default=1)
    size = 15 if len(labels) <= 8 else 13 if len(labels) <= 12 else 11
    fig.update_xaxes(tickmode="array", tickvals=labels, ticktext=texts, tickangle=-90 if on_end else 0,
                     tickfont=dict(size=size), categoryorder="array", categoryarray=labels, **where)
    grow = longest * size * 0.52 if on_end else (lines - 1) * (size + 4)
    fig.update_layout(margin=dict(b=(fig.layout.margin.b or 60) + int(grow)))
    if on_end:  # the plot keeps its height: the chart grows by the ticks (taller than 16:9, never squashed)
        fig.update_layout(height=(fig.layout.height or HEIGHT) + int(grow))
