"""The probe axis beside a run's load: the stale-read probe (``benchlib.sampling.stale_reads``) on a cluster with
replicas, its sessions under the run's read consistency; its frames, its table in the audit, and in the manifest the
setting it ran under and the system's default (the weakest: what the costs are against)."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd

from benchlib.axes.probe import ROUTER_READER
from benchlib.axis import AxisRun, RunContext
from benchlib.sampling.stale_reads import TABLE, StaleReadProbe
from benchlib.systems import consistency

__all__ = ["ProbeRun", "hook"]


def _through(front: Any, connect: Any) -> Any:
    """``connect``, except for ``ROUTER_READER``: a connection through Router's read-only port."""
    def through(node: str, **kw: Any) -> Any:
        return front.connect(kw.get("timeout", 2.0), port="ro") if node == ROUTER_READER else connect(node, **kw)
    return through


class ProbeRun(AxisRun):
    def __init__(self, ctx: RunContext):
        options = ctx.variant.options
        self.setting = consistency.for_system(ctx.system, options.consistency)
        self.record = {**options.as_dict(), "consistency": self.setting.name,
                       "default": consistency.supported(ctx.system)[0]}
        readers, connect = list(ctx.nodes[1:]), ctx.lab.connect
        if options.router:  # an application's reader behind the group's MySQL Router, on its read-only port
            proxies = ctx.lab.proxy()
            front = proxies.front(ctx.cluster, lambda: None, "router") if proxies is not None else None
            if front is not None:
                readers.append(ROUTER_READER)
                connect = _through(front, ctx.lab.connect)
        self.probe = StaleReadProbe(connect, ctx.nodes[0], readers, self.setting, options,
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
