"""The probe axis's charts (the chart catalogue adds them after its own): stale reads per read consistency, how stale
they were, what each setting costs and buys, read latency; and the line under each."""

from __future__ import annotations

from typing import Any, Callable

from benchlib import charts
from benchlib.charts.left_out import LeftOut
from benchlib.axes.probe import views as probe_views

__all__ = ["CAPTIONS", "CHARTS"]


def _stale(a):
    return charts.stale_fractions(probe_views.stale_reads(a))


def _staleness(a):
    return charts.staleness_ecdf(probe_views.staleness(a))


def _plane(a):
    if len(a.axis("probe").stale_reads) > probe_views.MAX_STALE_ROWS:
        raise LeftOut(f"{len(a.axis('probe').stale_reads)} configurations with the stale-read probe: too many points for one plane",
                      hint="a campaign that varies the read consistency and a few loads (examples/campaigns/"
                           "consistency.toml); the table 'What each setting costs the writer' has them all")
    points, metric = probe_views.consistency_costs(a)
    if points.ratio.eq(1.0).all():
        raise LeftOut("the cost-and-benefit plane needs two read consistency settings or more on a cluster; each "
                      "cluster ran one", hint="list several settings in the campaign's [probe] consistency")
    return charts.consistency_plane(points, metric)


def _read_latency(a):
    return charts.read_latency(probe_views.stale_reads(a))


CHARTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "stale_reads": ("Stale reads by read consistency", _stale),
    "staleness": ("How stale the stale reads were", _staleness),
    "consistency_plane": ("What each read consistency costs and buys", _plane),
    "read_latency": ("Read latency by read consistency", _read_latency),
}

CAPTIONS: dict[str, Callable[[Any], str]] = {
    "stale_reads": lambda a: ("Stale: a read older than a value acknowledged before it was sent. Whisker: 95% "
                              "interval, runs as the unit; hollow: none stale, to its 95% interval's upper end."),
    "staleness": lambda a: ("Staleness: how long the first value a read missed had been known when it was sent; "
                            "stale reads per configuration in the legend."),
    "consistency_plane": lambda a: ("x: stale fraction; y: the writer against its cluster's weakest setting (at 1); "
                                    "whiskers: 95% intervals (runs as the unit; rounds model)."),
    "read_latency": lambda a: ("Dot: median read latency on the other nodes; bar: to its p99; hollow diamond: the "
                               "median causal wait, part of the read."),
}
