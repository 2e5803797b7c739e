"""The fault axis's section of the report page: what each fault did per configuration, how it was measured, what each
system promises (the catalogue's words), the tables folded."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from benchlib import catalogue
from benchlib.page import fold, table

__all__ = ["section"]


def section(a: Any, said: list[str]) -> str:
    """What each fault did, per configuration: sentences, how it was measured, each system's promise, the tables."""
    if not said:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in said)
    runs = a.runs[a.runs.get("fault_at_s", pd.Series(dtype=float)).notna()]
    promised = runs.drop_duplicates("system")
    promises = ""
    if "failover_how" in runs:
        promises = "".join(f"<li><b>{html.escape(catalogue.of(r.system).title)}</b> ({html.escape(str(r.system))}): "
                           f"{html.escape(catalogue.promise(r.system))}</li>"
                           for r in promised.itertuples() if catalogue.promise(r.system))
    how = ("A ledger writer beside sysbench commits one row with its own id per tick on the node that takes the writes, "
           "follows the failover at once, and records each write as acknowledged, failed or unknown. Unavailability: "
           "the longest wait between two acknowledged writes from the last one before the fault on. Lost: "
           "acknowledged, and absent from the surviving primary after the heal. Intervals: order statistics for the "
           "median and p90 (distribution-free), Clopper-Pearson for the share of faults that lose writes. sysbench "
           "cannot follow a failover: it is started again on the new primary, so its throughput is 0 until then.")
    if "fault" in runs and runs.fault.astype(str).str.contains("host_loss|isolation|then_loss").any():
        how += (" Where the write node was cut off from its cluster (host loss, isolation), the ledger writer, its "
                "reader and sysbench stayed on its side of the cut, as an application server beside it would, and "
                "followed the failover once the cut ended; a reader beside the writer counts the reads that returned "
                "a write the failover then lost.")
    out = (f'<h2 id="failover">Failover</h2><ul>{items}</ul><p class="how">{html.escape(how)}</p>'
           + (f"<p>What each system promises when the node taking writes fails:</p><ul>{promises}</ul>"
              if promises else ""))
    s = a.axis("fault").summary
    from benchlib.axes.fault.measures import LOAD_KEYS, SETTING_PREFIXES

    keys = [c for c in s.columns if c in ("cluster", "fault", *LOAD_KEYS) or c.startswith(SETTING_PREFIXES)]
    out += fold("Failover by configuration", table(s, [*keys, "runs", "unavail_median_s", "unavail_median_low_s",
                                                          "unavail_median_high_s", "unavail_p90_s", "unavail_max_s",
                                                          "new_primary_median_s", "writes_elsewhere_median_s",
                                                          "lost_total", "runs_losing", "losing_share_high",
                                                          "lost_median", "lost_span_median_s", "reads_of_lost_total",
                                                          "lost_writes_read_total",
                                                          "fell_back_median_s", "no_ack_commits_median",
                                                          "errant_runs", "errant_median", "errant_max",
                                                          "recovered_95_median_s", "heal_median_s", "heal_how"]))
    out += fold("Failover by run", table(a.axis("fault").failover, ["run_id", *keys, "unavailability_s", "new_primary_node",
                                                        "new_primary_s", "acked", "failed", "unknown", "lost",
                                                        "lost_span_s", "reads_of_lost", "lost_writes_read",
                                                        "fell_back_s",
                                                        "no_ack_commits", "errant", "phantoms", "tps_before", "tps_lowest", "recovered_95_s",
                                                        "lost_cpu", "disturbed",
                                                        "heal_s", "heal_how"]))
    return out
