"""Study 003: Multi-threaded replica apply vs lag and replica CPU."""

from __future__ import annotations

from typing import Any

import pandas as pd

from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Published, Study, register
from benchlib.studies.judge import NO, NOT_MEASURED, NOT_SHOWN, YES, claim, compare, pick, remote_claim, values



def _claims_003(a: CampaignAnalysis) -> list[dict[str, Any]]:
    out = []
    m = views.measured(a)
    serial = pick(m, parallel_threads=0)
    verdicts = serial["lag_verdict"].value_counts() if "lag_verdict" in serial and len(serial) else pd.Series()
    holds = (NOT_MEASURED if verdicts.empty else YES if verdicts.get("GROWING", 0) * 2 > verdicts.sum()
             else NO if verdicts.get("SUSTAINED", 0) * 2 > verdicts.sum() else NOT_SHOWN)
    out.append(claim("Serial apply: replica lag keeps growing under write-only load", "grows throughout 30 min",
                      ", ".join(f"{n} {v}" for v, n in verdicts.items()) or None, holds,
                      "lag-growth test (spec F) on the worst replica's heartbeat lag (INCONCLUSIVE: run longer)"))
    cpu = views.replica_cpu(a) if len(m) else pd.DataFrame(columns=["run_id", "replica_cpu_pct"])
    m = m.merge(cpu, on="run_id", how="left")
    for k in (4, 8):
        out.append(compare(f"{k} apply threads: lag far below serial apply", "under 10 s with 4 workers, vs growing",
                        values(pick(m, parallel_threads=k), "lag_p95_ms"), values(pick(m, parallel_threads=0),
                                                                                "lag_p95_ms"),
                        less=True, how="p95 lag per run, ms"))
    out.append(compare("Parallel apply costs replica CPU", "~30% of 16 cores with 4 workers",
                    values(pick(m, parallel_threads=4), "replica_cpu_pct"),
                    values(pick(m, parallel_threads=0), "replica_cpu_pct"), less=False,
                    how="replica CPU % per run, one core = 100"))
    out.append(remote_claim("Aurora replicas lag under 35 ms using ~2.7% CPU", "35 ms, 2.7% of 16 cores", "Amazon Aurora"))
    return out


def _fig_serial_lag(a):
    from benchlib import charts

    m = views.measured(a)
    if "lag_p95_ms" not in m or m.lag_p95_ms.notna().sum() == 0:
        raise AnalysisError("no run with replica lag to show")
    rid = str(m.sort_values("lag_p95_ms").run_id.iloc[-1])
    lag, end, catch = views.lag_of_run(a, rid)
    return charts.lag_over_time(lag, load_end=end, catch_up_s=catch, title=f"Replica lag over time ({rid})")


register(Study("003", "Multi-threaded replica apply vs lag and replica CPU", Published("Replication performance and efficiency: MySQL 5.7 MTS vs Amazon Aurora", "", "2016-03-13",
                    "blog.symedia.pl (the page names no author)",
                    "http://blog.symedia.pl/2016/03/replication-performance-efficiency-aurora-mysql57.html"),
          "write-only load on an async primary, replicas applying with 0, 4 and 8 threads: lag over time and "
          "replica CPU", "Amazon Aurora", _claims_003,
               figures=[("Parallel apply: throughput, lag, replica CPU", "parallel_apply"),
           ("Replica lag over time, worst run", _fig_serial_lag)]))
