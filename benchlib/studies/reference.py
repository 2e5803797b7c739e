"""The published figures of the studies (data/reference/published.csv), and ours next to them.

Every published number is matched to its local counterpart by its ``quantity``: one measurer per
quantity in ``MEASURERS`` (a registry, not a chain of ifs). A measurer returns (value, how it was
measured) or NaN with the reason; systems that need a remote lab say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchlib import catalogue
from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.studies.base import Study, commit_latency
from benchlib.studies.judge import mean_of, pick, ratio_row
from benchlib.plugin import Registry

__all__ = ["MEASURERS", "REFERENCE", "figures_of", "measurer", "reference"]

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "reference" / "published.csv"
REMOTE_ONLY = ("group_replication", "aurora")


def reference(study: str | None = None) -> pd.DataFrame:
    """The published figures (data/reference/published.csv), all or one study's."""
    df = pd.read_csv(REFERENCE, dtype={"study": str, "setting": str, "note": str})
    return df[df.study == study].reset_index(drop=True) if study else df


@dataclass
class Context:
    """What every measurer may use of the campaign."""

    a: CampaignAnalysis
    study: Study
    sizes: dict[str, int]
    topo: dict[str, str]
    rtt: dict[str, float]


Measured = tuple[float, str]
MEASURERS: Registry[Callable[[Context, Any], Measured]] = Registry("measured quantity")


def measurer(quantity: str):
    def register(fn: Callable[[Context, Any], Measured]) -> Callable[[Context, Any], Measured]:
        return MEASURERS.register(fn, quantity)
    return register


def _wanted_rtt(row) -> float:
    return float(str(row.setting).split("=")[1]) if "rtt_ms=" in str(row.setting) else 0.0


@measurer("tps_ratio")
def _tps_ratio(c: Context, row) -> Measured:
    clusters = [k for k, t in c.topo.items() if t == row.topology]
    if row.relative_to != catalogue.BASELINE or not clusters:
        return np.nan, ""
    nodes = row.nodes if pd.notna(row.nodes) else None
    best = min(clusters, key=lambda k: abs(c.sizes.get(k, 0) - (nodes or c.sizes.get(k, 0))))
    r = ratio_row(c.a, cluster=best, workload=row.workload, durability=row.durability)
    return (float(r.ratio), f"{best} ({c.sizes.get(best)} nodes)") if r is not None else (np.nan, "")


@measurer("sustained_tps_ratio")
def _sustained_ratio(c: Context, row) -> Measured:
    if row.relative_to != catalogue.BASELINE:
        return np.nan, ""
    sv = views.sustained_or_empty(c.a)
    if sv.empty:
        return np.nan, ""
    where = {"workload": row.workload, **({"durability": row.durability} if pd.notna(row.durability)
                                           and "durability" in sv else {})}
    base, mine = pick(sv, topology=catalogue.BASELINE, **where), pick(sv, topology=row.topology, **where)
    if not len(base) or not len(mine):
        return np.nan, ""
    return (float(mine.sustained_tps.max() / base.sustained_tps.max()),
            f"{mine.cluster.iloc[0]} vs {base.cluster.iloc[0]}, best sustained rates")


@measurer("commit_latency_ms")
def _latency(c: Context, row) -> Measured:
    want = _wanted_rtt(row)
    k = next((k for k, t in c.topo.items() if t == row.topology and (c.rtt.get(k, 0.0) > 0) == (want > 0)), None)
    return (commit_latency(c.a, k), f"{k}, RTT {c.rtt.get(k, 0.0):g} ms") if k else (np.nan, "")


@measurer("tps")
def _tps(c: Context, row) -> Measured:
    if c.study.id != "001":
        return np.nan, ""
    want = _wanted_rtt(row)
    k = next((k for k, t in c.topo.items() if t == row.topology
              and (c.rtt.get(k, 0.0) > 0) == (want > 0 and row.topology != catalogue.BASELINE)), None)
    if not k:
        return np.nan, ""
    value = mean_of(pick(views.measured(c.a), cluster=k, threads=32, workload="oltp_read_write"), "tps_mean")
    return value, f"{k} (absolute TPS of other hardware: not judged)"


@measurer("replica_cpu_pct")
def _replica_cpu(c: Context, row) -> Measured:
    if row.topology != catalogue.BASELINE:
        return np.nan, ""
    try:
        return (mean_of(pick(views.parallel_apply(c.a), parallel_threads=4), "replica_cpu_pct"),
                "one core = 100% (the study: % of 16 cores)")
    except AnalysisError:
        return np.nan, ""


def _lag(c: Context, row) -> Measured:
    if row.topology != catalogue.BASELINE:
        return np.nan, ""
    m = pick(views.measured(c.a), parallel_threads=4)
    if not len(m):
        return np.nan, "4 apply threads, heartbeat lag"
    value = (m.lag_max_ms.max() if row.quantity == "lag_max_s" else m.lag_p95_ms.min()) / 1000
    return value, "4 apply threads, heartbeat lag"


MEASURERS.register(_lag, "lag_max_s")
MEASURERS.register(_lag, "lag_min_s")


@measurer("catch_up_s")
def _catch_up(c: Context, row) -> Measured:
    m = views.measured(c.a)
    if "fc_limit" not in m or not m.fc_limit.notna().any():
        return np.nan, ""
    want = m.fc_limit.min() if "fc_limit=25;" in str(row.setting) + ";" else m.fc_limit.max()
    return (mean_of(pick(m, fc_limit=want, workload="insert_batch", threads=8), "catch_up_s"),
            f"Galera fc_limit {want:g}, insert_batch 8 writers")


def figures_of(a: CampaignAnalysis, study: Study) -> pd.DataFrame:
    """Every published number of the study with, where the campaign has its local counterpart, ours."""
    ref = reference(study.id)
    c = Context(a, study, views.cluster_sizes(a), dict(a.runs[["cluster", "topology"]].drop_duplicates()
                                                        .itertuples(index=False)), views.cluster_rtts(a))
    measured, basis = [], []
    for row in ref.itertuples(index=False):
        if row.topology in REMOTE_ONLY:
            value, how = np.nan, "needs a remote lab (issue 6)"
        elif row.quantity in MEASURERS:
            value, how = MEASURERS[row.quantity](c, row)
        else:
            value, how = np.nan, ""
        measured.append(value)
        basis.append(how or "no local counterpart")
    return ref.assign(measured=measured, measured_how=basis)
