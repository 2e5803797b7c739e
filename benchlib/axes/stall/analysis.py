"""The stall axis's analysis: what the stalled replica served while its applier stood still, from the stale-read
probe's reads on that node. Per run: its reads, the share that were stale and the stalest (how long the first value it
missed had been known), and how long a causal read waited; per configuration (cluster, read consistency, stall
length) the same pooled, the share with its 95% interval and one-sided upper bound, runs as the unit (the rare-event
bounds of ``benchlib.analysis.staleness.rare_rate``: a stall's stale reads come together, in the one run). ``StallAnalysis`` makes them ``a.axis("stall").measures`` and ``.summary``."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.analysis.staleness import rare_rate
from benchlib.axis import AxisAnalysis

__all__ = ["StallAnalysis", "findings", "measures", "summary"]


def measures(a: Any) -> pd.DataFrame:
    """One row per ok run with a stall and the probe: the stalled node's reads in flight while it stood still (sent
    before it ended, returned after it began) and how many were stale, the same before and after it, the stalest
    read and the longest causal wait (ms, the whole run), and how long the stall held."""
    runs = a.runs
    if "stalled_node" not in runs or runs.stalled_node.isna().all():
        return pd.DataFrame()
    reads = a.frames.get("probe_reads", pd.DataFrame())
    rows = []
    for r in runs[(runs.status == "ok") & runs.stalled_node.notna()].itertuples():
        mine = reads[(reads.run_id.astype(str) == r.run_id) & (reads.node.astype(str) == r.stalled_node)] \
            if not reads.empty else reads
        done = mine[mine.stale.notna()] if len(mine) else mine
        t0, t1 = r.stalled_from_s, r.stalled_to_s
        # in flight while it stood still: a causal read sent just before the stop waits through all of it
        during = done[(done.t_sent_s <= t1) & (done.t_returned_s >= t0)] if t0 == t0 and t1 == t1 else done.iloc[:0]
        rows.append({"run_id": r.run_id, "cluster": r.cluster, "stall_s": getattr(r, "stall_s", None),
                     "node": r.stalled_node, "held_s": r.stalled_for_s,
                     "setting": str(done.setting.iloc[0]) if len(done) else "",
                     "reads": int(len(during)), "stale": int(during.stale.sum()) if len(during) else 0,
                     "reads_outside": int(len(done) - len(during)),
                     "stale_outside": int(done.stale.sum() - (during.stale.sum() if len(during) else 0)),
                     "stalest_ms": float(done.staleness_ms.max()) if len(done) else float("nan"),
                     "longest_wait_ms": float(done.wait_ms.max()) if len(done) and done.wait_ms.notna().any()
                     else float("nan")})
    return pd.DataFrame(rows)


def summary(a: Any) -> pd.DataFrame:
    """Per cluster, read consistency and stall length: the stalled replica's stale share with its 95% interval and
    one-sided upper bound, the stalest read and the longest causal wait over the runs."""
    m = a.axis("stall").measures
    if m.empty:
        return pd.DataFrame()
    rows = []
    for (cluster, setting, stall_s), g in m.groupby(["cluster", "setting", "stall_s"], dropna=False, sort=True):
        n, k = int(g.reads.sum()), int(g.stale.sum())
        rate = rare_rate(g.stale, g.reads)
        n_out, k_out = int(g.reads_outside.sum()), int(g.stale_outside.sum())
        rows.append({"cluster": cluster, "setting": setting, "stall_s": stall_s, "runs": len(g),
                     "node": ", ".join(sorted(set(g.node))), "held_s": float(g.held_s.median()), "reads": n,
                     "stale": k, "stale_share": k / n if n else float("nan"), "stale_low": rate.low, "stale_high": rate.high,
                     "stale_upper": rate.upper,
                     "reads_outside": n_out, "stale_share_outside": k_out / n_out if n_out else float("nan"),
                     "stalest_ms": float(g.stalest_ms.max()), "longest_wait_ms": float(g.longest_wait_ms.max())})
    return pd.DataFrame(rows)


def findings(a: Any) -> list[str]:
    """A sentence per configuration: what the stalled replica served."""
    out = []
    for r in a.axis("stall").summary.itertuples():
        if r.reads == 0:
            out.append(f"{r.cluster}: the probe read nothing on {r.node} while its applier stood still")
            continue
        outside = (f"; {r.stale_share_outside:.0%} of its {r.reads_outside} reads before and after it"
                   if r.reads_outside else "")
        share = (f"{r.stale_share:.0%} stale (95% {r.stale_low:.0%}–{r.stale_high:.0%}, {r.stale} of {r.reads})"
                 if r.stale else f"none of {r.reads} stale (95% upper bound {r.stale_upper:.1%})")
        reads = (f"{r.setting or 'default'} reads on {r.node} while its applier stood still ({r.held_s:.1f} s a run): "
                 f"{share}{outside}")
        stalest = f", the stalest {r.stalest_ms / 1000:.1f} s old" if r.stale else ""
        waited = (f"; a causal read waited up to {r.longest_wait_ms / 1000:.1f} s"
                  if r.longest_wait_ms == r.longest_wait_ms and r.longest_wait_ms > 0 else "")
        out.append(f"{r.cluster}: {reads}{stalest}{waited} (over {r.runs} run{'s' if r.runs != 1 else ''})")
    return out


class StallAnalysis(AxisAnalysis):
    """``a.axis("stall")``: ``measures`` (per run), ``summary`` (per configuration), ``findings``."""

    axis = "stall"

    @cached_property
    def measures(self) -> pd.DataFrame:
        return measures(self.a)

    @cached_property
    def summary(self) -> pd.DataFrame:
        return summary(self.a)

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a)
