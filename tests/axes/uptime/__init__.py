"""A throwaway axis, a package of its own declared the way any axis is (one entry point, ``uptime =
"tests.axes.uptime:AXIS"`` in the group ``benchlib.axes``): its spec table ``[uptime]``, a planner, a run hook that
writes one frame, one analysis measure and one report line. ``tests/axes/test_throwaway_axis.py`` installs the entry
point (a distribution's metadata in a temporary folder on ``sys.path``) and runs a campaign with it on a real lab."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
from pydantic import Field

from functools import cached_property

from benchlib.axis import Axis, AxisAnalysis, AxisRun, RunContext
from benchlib.schema import Column, Schema
from benchlib.specs import Strict
from benchlib.systems import sql

UPTIME = Schema("uptime", {"t_s": Column("float64", "seconds on this host's monotonic clock"),
                           "node": Column("str", "the node asked"),
                           "uptime_s": Column("float64", "its server's Uptime status counter")})


class UptimeSpec(Strict):
    label: list[str] = Field(default=["plain"], min_length=1)  # an axis of its own: each label is a configuration


class UptimeVariant:
    def __init__(self, label: str):
        self.label = label

    def identity(self) -> list[Any]:
        return [{"uptime": self.label}]

    def params(self) -> dict[str, Any]:
        return {"uptime_label": self.label}


def variants(spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[UptimeVariant]]:
    return {c: [UptimeVariant(x) for x in spec.axes["uptime"].label] for c in clusters}


class UptimeRun(AxisRun):
    """Reads the write node's Uptime when the load starts and when it has stopped."""

    def __init__(self, ctx: RunContext):
        self.ctx, self.rows = ctx, []

    def _read(self) -> None:
        with self.ctx.lab.connect(self.ctx.nodes[0]) as conn:
            value = float(sql.global_status(conn, "Uptime").get("uptime", "nan"))
        self.rows.append((time.monotonic(), self.ctx.nodes[0], value))

    def start(self) -> None:
        self._read()

    def stop(self) -> str | None:
        self._read()
        return None

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        return {"uptime": UPTIME.frame({"t_s": [r[0] for r in self.rows], "node": [r[1] for r in self.rows],
                                        "uptime_s": [r[2] for r in self.rows]})}

    def manifest(self) -> dict[str, Any]:
        return {"label": self.ctx.variant.label, "reads": len(self.rows)}


def hook(ctx: RunContext) -> UptimeRun:
    return UptimeRun(ctx)


def measures(a: Any) -> pd.DataFrame:
    """Per run: how much the write node's uptime grew over the run (its load and catch-up)."""
    f = a.frames.get("uptime")
    if f is None or f.empty:
        return pd.DataFrame(columns=["run_id", "grew_s"])
    g = f.sort_values("t_s").groupby("run_id", observed=True).uptime_s
    return (g.last() - g.first()).rename("grew_s").reset_index()


def findings(a: Any) -> list[str]:
    m = measures(a)
    return [f"the write node's uptime grew by a median {m.grew_s.median():.0f} s over {len(m)} runs"] if len(m) else []


class UptimeAnalysis(AxisAnalysis):
    @cached_property
    def measures(self) -> pd.DataFrame:
        return measures(self.a)

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a)


class UptimeAxis(Axis):
    name = "uptime"
    title = "the write node's uptime"
    spec = UptimeSpec
    frames = (UPTIME,)

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]]:
        return variants(spec, lab, clusters, source)

    def run(self, ctx: RunContext) -> AxisRun:
        return hook(ctx)

    def analysis(self, a: Any) -> AxisAnalysis:
        return UptimeAnalysis(a)


AXIS = UptimeAxis()
