"""The probe axis's analysis: the stale reads per cluster and read consistency, what each setting costs the writer
(and a read split's readers) against the cluster's weakest, and both in words. Each function takes the campaign's
``CampaignAnalysis``; ``ProbeAnalysis`` is ``a.axis("probe")`` (``a.axis("probe").stale_reads``), each computed once."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis.comparisons import consistency_costs_of, set_by_consistency_of
from benchlib.axes.probe import ROUTER_READER
from benchlib.analysis.runs import column_is, config_columns
from benchlib.axis import AxisAnalysis

__all__ = ["ProbeAnalysis", "consistency_costs", "consistency_findings", "probe_reads",
           "set_by_consistency", "stale_reads", "weakest"]


def probe_reads(a: Any) -> pd.DataFrame:
    """The stale-read probe's reads of the ok runs (``setting`` as text); empty when no ok run had the probe."""
    reads = a.frames.get("probe_reads")
    if reads is None or reads.empty:
        return pd.DataFrame()
    reads = reads[reads.run_id.isin(set(a.runs.run_id[a.runs.status == "ok"]))].copy()
    reads["setting"] = reads["setting"].astype(str)
    behind = reads["node"].astype(str) == ROUTER_READER
    if behind.any():  # a reader behind MySQL Router: its reads apart from the nodes' own
        reads["via"] = np.where(behind, "router", "nodes")
    return reads


def set_by_consistency(a: Any) -> list[str]:
    """The run parameters that the read consistency decides, ``consistency`` itself included (GR's AFTER levels set
    the load's ``gr_consistency``): a configuration is named once by its setting, and matched with another setting's
    runs on the rest."""
    ok = a.runs[a.runs.status == "ok"]
    return set_by_consistency_of(ok, config_columns(a.param_columns))


def weakest(a: Any) -> dict[str, str]:
    """Per cluster that ran the stale-read probe, its system's default read consistency: the weakest, what the other
    settings' costs are against."""
    if "default_consistency" not in a.runs:
        return {}
    d = a.runs.dropna(subset=["default_consistency"]).drop_duplicates("cluster")
    return dict(zip(d.cluster, d.default_consistency))


def stale_reads(a: Any) -> pd.DataFrame:
    """The stale-read fraction per configuration (cluster, read consistency, and what else the campaign varied that
    the setting does not decide), with its interval and quantiles (``benchlib.analysis.staleness``), over the ok runs
    that had the probe; empty when none had."""
    from benchlib.analysis.staleness import stale_fractions

    reads = a.axis("probe").probe_reads
    if reads.empty:
        return pd.DataFrame()
    ok = a.runs[a.runs.status == "ok"]
    varying = [c for c in config_columns(a.param_columns) if c in reads and c not in
               ("cluster", "topology", *a.axis("probe").set_by_consistency) and ok[c].nunique() > 1]
    return stale_fractions(reads, ["cluster", "setting", *varying, *(["via"] if "via" in reads else [])])


def consistency_costs(a: Any) -> pd.DataFrame:
    """Per cluster and read consistency setting, the writer's throughput and latency against the same cluster's
    weakest (default) setting with the load otherwise the same: ratio, 95% interval, verdict (as ``comparisons``);
    empty without the stale-read probe or with one setting a cluster."""
    from benchlib.analysis.runs import throughput_runs

    return consistency_costs_of(throughput_runs(a.runs), a.param_columns, a.record.margin)


def consistency_findings(a: Any) -> list[str]:
    """The stale reads of each configuration in words, with what its setting cost the writer and the readers against
    the same cluster's weakest setting (``staleness.in_words``); [] without the probe."""
    from benchlib.analysis.staleness import configuration_columns, in_words

    view = a.axis("probe")
    s, costs = view.stale_reads, view.consistency_costs
    if s.empty:
        return []
    keys = [k for k in configuration_columns(s) if k != "setting"]  # the load a setting's row is matched on

    def same_load(df: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
        return df[np.logical_and.reduce([column_is(df[k], row[k]) for k in keys if k in df])]

    out = []
    for _, row in s.iterrows():
        weak = same_load(s, row)
        weak = weak[weak.setting == a.axis("probe").weakest.get(row.cluster)]
        mine = same_load(costs[costs.setting == row.setting], row) if not costs.empty else costs
        out.append(in_words(row, mine, weak.iloc[0] if len(weak) else None))
    return out


class ProbeAnalysis(AxisAnalysis):
    """``a.axis("probe")``: the probe's reads, the stale reads per configuration (also its ``measures``), what each
    read consistency costs, and both in words (also its ``findings``)."""

    axis = "probe"

    @cached_property
    def probe_reads(self) -> pd.DataFrame:
        return probe_reads(self.a)

    @cached_property
    def set_by_consistency(self) -> list[str]:
        return set_by_consistency(self.a)

    @cached_property
    def weakest(self) -> dict[str, str]:
        return weakest(self.a)

    @cached_property
    def stale_reads(self) -> pd.DataFrame:
        return stale_reads(self.a)

    @cached_property
    def consistency_costs(self) -> pd.DataFrame:
        return consistency_costs(self.a)

    @cached_property
    def consistency_findings(self) -> list[str]:
        return consistency_findings(self.a)

    @cached_property
    def measures(self) -> pd.DataFrame:
        return self.stale_reads

    @cached_property
    def decided(self) -> list[str]:
        return [k for k in self.set_by_consistency if k != "consistency"]

    @cached_property
    def findings(self) -> list[str]:
        return self.consistency_findings
