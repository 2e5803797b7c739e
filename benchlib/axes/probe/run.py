"""The probe axis beside a run's load: the stale-read probe (``benchlib.sampling.stale_reads``) on a cluster with
replicas, its sessions under the run's read consistency; its frames, its table in the audit, and in the manifest the
setting it ran under and the system's default (the weakest: what the costs are against)."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd

from benchlib.axis import AxisRun, RunContext
from benchlib.sampling.stale_reads import TABLE, StaleReadProbe
from benchlib.systems import consistency

__all__ = ["ProbeRun", "hook"]


class ProbeRun(AxisRun):
    def __init__(self, ctx: RunContext):
        options = ctx.variant.options
        self.setting = consistency.for_system(ctx.system, options.consistency)
        self.record = {**options.as_dict(), "consistency": self.setting.name,
                       "default": consistency.supported(ctx.system)[0]}
        self.probe = StaleReadProbe(ctx.lab.connect, ctx.nodes[0], ctx.nodes[1:], self.setting, options,
                                    time.monotonic) if len(ctx.nodes) > 1 else None

    def probes(self) -> list[Any]:
        if self.probe is None:
            return []
        self.probe.prepare()
        return list(self.probe.probes)

    def tables(self) -> list[str]:
        return [TABLE] if self.probe is not None else []

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        if self.probe is None:
            return {}
        writes, reads = self.probe.frames(origin)
        return {"probe_writes": writes, "probe_reads": reads}

    def manifest(self) -> dict[str, object]:
        return self.record


def hook(ctx: RunContext) -> ProbeRun:
    return ProbeRun(ctx)
