"""The probe axis's views: the stale reads, staleness and read consistency costs of a campaign as the charts and the
consistency notebook draw them, each row labelled and coloured by its cluster's topology."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis
from benchlib.analysis.campaign import config_label as label
from benchlib.analysis.views import _varying, measured
from benchlib.axes.probe.analysis import ProbeAnalysis

__all__ = ["MAX_STALE_ROWS", "consistency_costs", "stale_reads", "staleness"]


def _consistency_labels(a: CampaignAnalysis, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows per cluster and read consistency ``setting``, maybe per load setting) with ``topology`` (the
    colour) and ``label``: the cluster and setting, then what else differs between the rows ("gr AFTER rate=400")."""
    out = df.copy()
    out["topology"] = out.cluster.map(measured(a).drop_duplicates("cluster").set_index("cluster").topology)
    keys = _varying(a, out, ("consistency",))
    out["label"] = [" ".join(filter(None, [f"{r['cluster']} {r['setting']}", label(r, keys)]))
                    for _, r in out.iterrows()]
    return out


#: the most configurations a stale-read chart draws a row (or a point) for; past it each cluster and read
#: consistency pools its runs (a study's matrix of workloads, threads and flow-control limits)
MAX_STALE_ROWS = 16


def stale_reads(a: CampaignAnalysis, *, pooled: bool | None = None) -> pd.DataFrame:
    """The stale-read fraction per configuration (``CampaignAnalysis.stale_reads``) with ``label`` and ``topology``;
    ``pooled`` (default: past MAX_STALE_ROWS configurations): per cluster and setting, over everything else the
    campaign varied."""
    from benchlib.analysis.staleness import stale_fractions

    s = ProbeAnalysis.of(a).stale_reads
    if s.empty:
        raise AnalysisError("no stale-read probe in this campaign", hint="add a [probe] table to the campaign spec")
    if pooled or (pooled is None and len(s) > MAX_STALE_ROWS):
        s = stale_fractions(ProbeAnalysis.of(a).probe_reads, ["cluster", "setting"])
    return _consistency_labels(a, s)


def staleness(a: CampaignAnalysis) -> pd.DataFrame:
    """Every stale read of the ok runs (node, staleness in ms and versions) with its configuration's ``label``
    (``stale_reads``'s) and ``reads``: how many reads that configuration made in all."""
    from benchlib.analysis.staleness import configuration_columns

    s = stale_reads(a, pooled=False)
    keys = configuration_columns(ProbeAnalysis.of(a).stale_reads)
    r = ProbeAnalysis.of(a).probe_reads
    r = r[r.stale.fillna(False).astype(bool)].copy()
    for k in keys:
        if isinstance(r[k].dtype, pd.CategoricalDtype):
            r[k] = r[k].astype(object)
    r = r.drop(columns=[c for c in ("label", "topology", "reads") if c in r])
    out = r.merge(s[[*keys, "label", "topology", "reads"]], on=keys, how="inner")
    if out.label.nunique() > MAX_ECDF_LINES:  # more lines than a reader can tell apart: one per cluster and setting
        out["label"] = out.cluster.astype(str) + " " + out.setting.astype(str)
    return out


#: the most configurations a chart of staleness draws apart (past it, each cluster and setting pools its runs)
MAX_ECDF_LINES = 8


def consistency_costs(a: CampaignAnalysis) -> tuple[pd.DataFrame, str]:
    """(the cost-and-benefit plane's points, the writer's metric): per configuration the stale fraction with its
    interval and the writer's cost against its cluster's weakest setting with its interval (the weakest setting
    itself at 1). The metric is throughput, except for open-loop loads that every configuration held (a fixed rate
    held by every setting: what a setting costs shows in latency); an open-loop load that queued measures the most
    the writer could do, its throughput."""
    from benchlib.analysis.validate import SHORT_OF_RATE
    from benchlib.analysis.staleness import configuration_columns

    s = stale_reads(a, pooled=False)
    costs = ProbeAnalysis.of(a).consistency_costs
    c = a.configs
    held = "rate" in c and c.rate.notna().all() and (c.tps_mean >= (1 - SHORT_OF_RATE) * c.rate).all()
    metric = "lat_pctl_ms" if held else "tps"
    keys = configuration_columns(ProbeAnalysis.of(a).stale_reads)
    c = costs[costs.metric == metric] if not costs.empty else pd.DataFrame(columns=[*keys, "ratio"])
    c = c.rename(columns={"ci_low": "ratio_low", "ci_high": "ratio_high", "verdict": "ratio_verdict"})
    keys = [k for k in keys if k in c.columns]
    for column in ("ratio", "ratio_low", "ratio_high", "ratio_verdict", "weakest"):  # none: every setting is a default
        if column not in c:
            c[column] = pd.Series(dtype=float)
    out = s.merge(c[[*keys, "ratio", "ratio_low", "ratio_high", "ratio_verdict", "weakest"]], on=keys, how="left")
    out.loc[out.ratio.isna() & out.cluster.map(ProbeAnalysis.of(a).weakest).eq(out.setting), "ratio"] = 1.0
    return out.dropna(subset=["ratio"]), metric
