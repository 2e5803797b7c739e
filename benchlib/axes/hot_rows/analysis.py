"""The hot-rows axis's analysis: per cluster and key distribution, the share of the counted row writes that landed
on the hottest rows, pooled over the runs, against the share the distribution should put there."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.axis import AxisAnalysis
from benchlib.sysbench.keys import KeyDistribution

__all__ = ["HotRowsAnalysis", "findings", "summary"]


def summary(a: Any) -> pd.DataFrame:
    """One row per cluster and distribution: runs counted, row writes counted, the measured share (pooled) and the
    expected one; runs not counted and why."""
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    if "hot_rows_counted" not in runs or runs.hot_rows_counted.isna().all():
        return pd.DataFrame()
    rows = []
    for (cluster, keys), g in runs.groupby(["cluster", "keys"], sort=True, dropna=False):
        counted = g[g.hot_rows_counted.fillna(0) > 0]
        n = int(counted.hot_rows_counted.sum())
        hot = float((counted.hot_share * counted.hot_rows_counted).sum())
        rows.append({"cluster": cluster, "keys": keys, "runs": len(g), "runs_counted": len(counted), "rows": n,
                     "measured": hot / n if n else float("nan"),
                     "expected": float(g.hot_share_expected.dropna().iloc[0]) if g.hot_share_expected.notna().any()
                     else float("nan"),
                     "why_not": next((str(w) for w in g.get("hot_rows_why_not", pd.Series(dtype=object)).dropna()
                                      if w), "")})
    return pd.DataFrame(rows)


def findings(a: Any) -> list[str]:
    """A sentence per cluster and distribution: the share measured on the hottest rows against the expected one."""
    table = a.record.campaign.get("hot_rows")
    fraction = float(table.get("fraction", 0.01)) if isinstance(table, dict) else 0.01
    out = []
    for r in summary(a).itertuples():
        keys = KeyDistribution.parse(str(r.keys)).words() if isinstance(r.keys, str) else "its keys"
        if not r.rows:
            out.append(f"{r.cluster}, keys {keys}: where the writes landed was not counted"
                       + (f" ({r.why_not})" if r.why_not else ""))
            continue
        out.append(f"{r.cluster}, keys {keys}: {r.measured:.1%} of the {r.rows:,} row writes counted in the write "
                   f"node's binary log over {r.runs_counted} run{'s' if r.runs_counted != 1 else ''} landed on the "
                   f"hottest {fraction:.0%} of rows (the distribution puts {r.expected:.1%} there)")
    return out


class HotRowsAnalysis(AxisAnalysis):
    """``a.axis("hot_rows")``: ``summary`` (per cluster and distribution), ``findings``."""

    @cached_property
    def summary(self) -> pd.DataFrame:
        return summary(self.a)

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a)
