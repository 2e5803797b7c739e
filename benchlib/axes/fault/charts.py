"""The fault axis's charts (the chart catalogue adds them after its own): the failover timeline, unavailability, lost
writes, the rejoin; and the line under each."""

from __future__ import annotations

from typing import Any, Callable

from benchlib.axes.fault import chart_builders as builders
from benchlib.axes.fault import views as fault_views
from benchlib.charts.left_out import LeftOut

__all__ = ["CAPTIONS", "CHARTS"]


def _failover_timeline(a):
    return builders.failover_timeline(*fault_views.failover_timeline(a))


def _unavailability(a):
    return builders.unavailability(fault_views.unavailability_runs(a), fault_views.unavailability_summary(a))


def _lost(a):
    return builders.lost_writes(fault_views.failover_summary(a))


def _moment(a):
    runs = fault_views.failover_runs(a)
    if "fault_moment_s" not in runs or not (runs.groupby("label").fault_moment_s.nunique() > 1).any():
        raise LeftOut("lost writes against the moment need fault moments drawn within a range; each configuration's "
                      "faults came at one moment", hint="fault.at_s = [from, to] in the campaign spec")
    return builders.lost_against_moment(runs)


def _settings(a):
    return builders.unavailability_by_setting(*fault_views.unavailability_by_setting(a))


def _rejoin(a):
    return builders.rejoin_times(fault_views.rejoins(a))


CHARTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "failover_timeline": ("Failover timeline", _failover_timeline),
    "unavailability": ("Unavailability after the fault", _unavailability),
    "lost_writes": ("Acknowledged writes lost", _lost),
    "lost_vs_moment": ("Writes lost against the fault's moment", _moment),
    "failover_settings": ("Failover time against its settings", _settings),
    "rejoin": ("Rejoin under load", _rejoin),
}

CAPTIONS: dict[str, Callable[[Any], str]] = {
    "failover_timeline": lambda a: ("Acknowledged writes/s (100 ms bins) in each configuration's median run; red "
                                    "line: the fault; shaded: the longest wait for an acknowledgement."),
    "unavailability": lambda a: ("Dot: one fault; mark: the median, whisker: its 95% order-statistic interval; "
                                 "triangle: never acknowledged again, at least this long."),
    "lost_writes": lambda a: ("Dot: the share of faults that lost an acknowledged write (absent from the survivor "
                              "after the heal); whisker: its exact 95% interval (Clopper-Pearson)."),
    "lost_vs_moment": lambda a: ("Dot: one fault, the acknowledged writes it lost against its moment into the load "
                                 "(drawn within fault.at_s's range, seeded per run)."),
    "failover_settings": lambda a: ("Dot: one fault's unavailability at the setting's value; bar: the median; dashed: "
                                    "what the mechanism predicts.<br>Group Replication: 5 s to suspect + 1 s + "
                                    "15 x ceil(E/15) s (suspicions are processed every 15 s); Galera: evs.suspect_timeout."),
    "rejoin": lambda a: ("A killed node started again under the load: dot, until it was back in its role (Synced, "
                         "ONLINE); hollow diamond, until its lag (the newest ledger write it held) stayed under 100 "
                         "ms."),
}
