"""A throughput's dip under a fault: how low it went, when it was back, and what it cost.

From a per-second series (transactions from sysbench's lines, new orders from the server's districts, anything
counted per second), the fault's moment and the level before it:

- **lowest**: the lowest whole second after the fault (a second with no report counts as 0: a load that stopped
  reports nothing);
- **recovered_s**: from the fault until the start of the first of ``RECOVERED_SECONDS`` seconds in a row at
  ``RECOVERED`` (95%) of the level before it; missing when that never came within the load;
- **area_s**: what the dip cost, in seconds of the throughput before it: Σ max(0, before − second) / before over the
  seconds from the fault until it was back (until the load's end when it never was). A 10 s stop is 10 s; a minute
  at half speed is 30 s. HammerDB's users ask for it and cannot get it (its virtual users stop at a reconnect);
- **lost**: the same in the series' own unit (transactions, new orders), ``area_s × before``.

The level before: the median of the seconds before the fault, its first second left out (a ramp-up).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["RECOVERED", "RECOVERED_SECONDS", "before", "dip", "per_second"]

RECOVERED = 0.95  # the share of the throughput before the fault that counts as recovered
RECOVERED_SECONDS = 3  # ... for this many seconds in a row


def per_second(t_s: Any, values: Any, start: float, stop: float) -> pd.Series:
    """The values summed into whole seconds ``(s-1, s]`` for s from ``floor(start) + 1`` to ``floor(stop)``, a second
    with none as 0 (indexed by s, each second's end)."""
    grid = np.arange(math.floor(start) + 1, math.floor(stop) + 1)
    t = np.asarray(t_s, dtype=float)
    seen = pd.Series(np.asarray(values, dtype=float), index=np.ceil(t - 1e-6)).groupby(level=0).sum()
    return pd.Series([float(seen.get(g, 0.0)) for g in grid], index=grid, dtype=float)


def before(t_s: Any, values: Any, t_fault: float) -> float:
    """The level before the fault: the median of the seconds before it, the first one left out when there are more."""
    t = np.asarray(t_s, dtype=float)
    v = np.asarray(values, dtype=float)[np.argsort(t)]
    pre = v[np.sort(t) <= t_fault]
    if len(pre) > 1:
        return float(np.median(pre[1:]))
    return float(pre[0]) if len(pre) else math.nan


def dip(after: pd.Series, level: float, t_fault: float) -> dict[str, float]:
    """``lowest``, ``recovered_s``, ``area_s`` and ``lost`` (see the module) of ``after``: whole seconds after the
    fault (``per_second``), against ``level``."""
    out = {"lowest": float(after.min()) if len(after) else math.nan, "recovered_s": math.nan,
           "area_s": math.nan, "lost": math.nan}
    if not len(after) or not level == level or level <= 0:
        return out
    ok = (after >= RECOVERED * level).astype(int)
    run_len = ok.groupby((ok != ok.shift()).cumsum()).cumsum()
    hit = run_len[(ok == 1) & (run_len >= RECOVERED_SECONDS)]
    until = after.index[-1]
    if len(hit):
        first = hit.index[0] - RECOVERED_SECONDS + 1  # the end of the first of those seconds
        out["recovered_s"] = float(max(0.0, first - 1 - t_fault))  # from the fault to that second's start
        until = first - 1
    short = (level - after[after.index <= until]).clip(lower=0.0)
    out["lost"] = float(short.sum())
    out["area_s"] = out["lost"] / level
    return out
