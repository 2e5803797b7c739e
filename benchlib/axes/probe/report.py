"""The probe axis's section of the report page: stale reads per cluster and read consistency in words, how they were
measured, the table folded, and what each setting costs."""

from __future__ import annotations

import html
from typing import Any

from benchlib.analysis.staleness import configuration_columns
from benchlib.page import fold, table

__all__ = ["section"]


def section(a: Any, said: list[str]) -> str:
    """What the stale-read probe found, per cluster and read consistency: sentences, then the table folded."""
    if not said:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in said)
    how = ("A writer commits a sequence on the write node; a reader on each other node reads it at a fixed rate under "
           "the read consistency named. A read is stale when it returns a value older than one already acknowledged "
           "(or read) before it was sent (Jepsen's definition); staleness is how long the first value it missed had "
           "been known. Intervals take runs as the unit.")
    s = a.axis("probe").stale_reads
    keys = [c for c in configuration_columns(s) if c not in ("cluster", "setting")]
    by_config = table(s, ["cluster", "setting", *keys, "runs", "reads", "stale", "fraction", "low", "high",
                       "staleness_ms_p50", "staleness_ms_p99", "staleness_ms_max", "read_ms_p50", "read_ms_p99",
                       "wait_ms_p50", "failed"])
    out = (f"<h2>Stale reads</h2><ul>{items}</ul><p class=\"how\">{html.escape(how)}</p>"
           + fold("Stale reads by configuration", by_config))
    costs = a.axis("probe").consistency_costs
    if not costs.empty:
        split = costs.metric.astype(str).str.startswith("read_").any()
        whom = "the writer and the read split's readers" if split else "the writer"
        out += fold(f"What each setting costs {whom}, against its cluster's weakest setting",
                     table(costs, ["cluster", "setting", "weakest", *keys, "metric", "ratio", "ci_low", "ci_high",
                                    "verdict", "n", "n_baseline", "method"]))
    return out
