"""A whole campaign analysed: per-run assessments, per-configuration agreement, ratios against a
baseline, and a validation pass listing every problem with a severity (statistics spec G).

    a = analyze("runs/quick")            # or analyze(frames) with frames from load_campaign
    a.runs          one row per run: trim, mean +- SE, n_eff, CoV, class and flags, latency, lag verdict
    a.configs       one row per configuration: mean, 95% interval, h, CoV, Q/p/I2, agreement verdict
    a.comparisons   one row per (configuration, baseline): ratio, Fieller interval, p, BH q, verdict
    a.problems      severity (error | warning | info), run or configuration, what, and the fix

The parts live in modules of one concern each: ``runs`` (run parameters and each run's assessment),
``comparisons`` (configurations, ratios against the baseline, what read consistency costs) and ``validate`` (the
problems); this module puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from benchlib.analysis import interference
from benchlib.analysis.compare import TARGET
from benchlib.analysis.comparisons import (HEADLINE_METRICS, baseline_comparisons, configurations,
                                           consistency_costs_of, headline_rows, set_by_consistency_of, settled)
from benchlib.analysis.resources import window_rates
from benchlib.analysis.runs import (LOAD_KEYS, NOT_CONFIG, AnalysisError, assess_all, column_is, config_columns,
                                    config_label, param_columns, read_side, run_inputs)
from benchlib.analysis.validate import bound_problems, sorted_problems, unreported_tail, validate
from benchlib.store import CampaignRecord, load_campaign, read_campaign_record

__all__ = ["HEADLINE_METRICS", "LOAD_KEYS", "NOT_CONFIG", "AnalysisError", "CampaignAnalysis", "analyze",
           "config_columns", "config_label", "headline_rows", "settled"]


@dataclass
class CampaignAnalysis:
    runs: pd.DataFrame
    configs: pd.DataFrame
    comparisons: pd.DataFrame
    problems: pd.DataFrame
    frames: dict[str, pd.DataFrame]
    param_columns: list[str]
    path: Path | None = None
    record: CampaignRecord = field(default_factory=CampaignRecord)  # its campaign.json (empty without a folder)
    rates: pd.DataFrame | None = None  # every counter's rate over each ok run's load window (resources.window_rates)

    @property
    def errors(self) -> pd.DataFrame:
        return self.problems[self.problems.severity == "error"]

    @property
    def warnings(self) -> pd.DataFrame:
        return self.problems[self.problems.severity != "info"]

    @cached_property
    def probe_reads(self) -> pd.DataFrame:
        """The stale-read probe's reads of the ok runs (``setting`` as text); empty when no ok run had the probe."""
        reads = self.frames.get("probe_reads")
        if reads is None or reads.empty:
            return pd.DataFrame()
        reads = reads[reads.run_id.isin(set(self.runs.run_id[self.runs.status == "ok"]))].copy()
        reads["setting"] = reads["setting"].astype(str)
        return reads

    @cached_property
    def set_by_consistency(self) -> list[str]:
        """The run parameters that the read consistency decides, ``consistency`` itself included (GR's AFTER levels
        set the load's ``gr_consistency``): a configuration is named once by its setting, and matched with another
        setting's runs on the rest."""
        ok = self.runs[self.runs.status == "ok"]
        return set_by_consistency_of(ok, config_columns(self.param_columns))

    @cached_property
    def weakest(self) -> dict[str, str]:
        """Per cluster that ran the stale-read probe, its system's default read consistency: the weakest, what the
        other settings' costs are against."""
        if "default_consistency" not in self.runs:
            return {}
        d = self.runs.dropna(subset=["default_consistency"]).drop_duplicates("cluster")
        return dict(zip(d.cluster, d.default_consistency))

    @cached_property
    def stale_reads(self) -> pd.DataFrame:
        """The stale-read fraction per configuration (cluster, read consistency, and what else the campaign varied
        that the setting does not decide), with its interval and quantiles (``benchlib.analysis.staleness``), over
        the ok runs that had the probe; empty when none had."""
        from benchlib.analysis.staleness import stale_fractions

        reads = self.probe_reads
        if reads.empty:
            return pd.DataFrame()
        ok = self.runs[self.runs.status == "ok"]
        varying = [c for c in config_columns(self.param_columns) if c in reads and c not in
                   ("cluster", "topology", *self.set_by_consistency) and ok[c].nunique() > 1]
        return stale_fractions(reads, ["cluster", "setting", *varying])

    @property
    def consistency_findings(self) -> list[str]:
        """The stale reads of each configuration in words, with what its setting cost the writer and the readers
        against the same cluster's weakest setting (``staleness.in_words``); [] without the probe."""
        from benchlib.analysis.staleness import configuration_columns, in_words

        s, costs = self.stale_reads, self.consistency_costs
        if s.empty:
            return []
        keys = [k for k in configuration_columns(s) if k != "setting"]  # the load a setting's row is matched on

        def same_load(df: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
            return df[np.logical_and.reduce([column_is(df[k], row[k]) for k in keys if k in df])]

        out = []
        for _, row in s.iterrows():
            weakest = same_load(s, row)
            weakest = weakest[weakest.setting == self.weakest.get(row.cluster)]
            mine = same_load(costs[costs.setting == row.setting], row) if not costs.empty else costs
            out.append(in_words(row, mine, weakest.iloc[0] if len(weakest) else None))
        return out

    @cached_property
    def failover(self) -> pd.DataFrame:
        """One row per ok fault run: unavailability, new primary, lost writes, recovery (``benchlib.analysis.failover``);
        empty without fault runs."""
        from benchlib.analysis.failover import measures

        return measures(self.runs, self.frames)

    @cached_property
    def failover_summary(self) -> pd.DataFrame:
        """Per fault configuration: unavailability's distribution with intervals, lost writes with their bound."""
        from benchlib.analysis.failover import summary

        return summary(self.failover)

    @property
    def failover_findings(self) -> list[str]:
        """The failover summary in words, a sentence per configuration ([] without fault runs)."""
        from benchlib.analysis.failover import in_words

        return in_words(self.failover_summary)

    @cached_property
    def consistency_costs(self) -> pd.DataFrame:
        """Per cluster and read consistency setting, the writer's throughput and latency against the same cluster's
        weakest (default) setting with the load otherwise the same: ratio, 95% interval, verdict (as
        ``comparisons``); empty without the stale-read probe or with one setting a cluster."""
        ok = self.runs[self.runs.status == "ok"]
        if "search" in ok:
            ok = ok[ok.search.isna()]
        return consistency_costs_of(ok, self.param_columns, self.record.margin)


def analyze(campaign: str | Path | dict[str, pd.DataFrame], *, baseline: str = "async", margin: float | None = None,
            target: float = TARGET, adjust: bool = True) -> CampaignAnalysis:
    """Every statistic of a campaign. ``baseline`` names a topology or a cluster (default: async); ``margin``
    is delta (default: the campaign spec's ``margin``, else 2%); ``adjust``: the ratios may take the CPU lost to
    others as a covariate where that is safe and narrows them (``benchlib.analysis.blocks``)."""
    frames = load_campaign(campaign) if not isinstance(campaign, dict) else campaign
    record = (read_campaign_record(campaign) if not isinstance(campaign, dict) else None) or CampaignRecord()
    if margin is None:
        margin = record.margin
    runs = frames["runs"]
    if runs.empty:
        raise AnalysisError(f"no runs in campaign {campaign if not isinstance(campaign, dict) else ''}".strip(),
                            hint="run it first: benchlib run SPEC")
    params = param_columns(runs)
    ok = runs[runs.status == "ok"]
    assessed = pd.DataFrame(assess_all(run_inputs(ok, frames)))
    batches = dict(zip(assessed.run_id, assessed.pop("_batches"))) if "_batches" in assessed else {}
    table = runs.merge(assessed, on="run_id", how="left") if not assessed.empty else runs.copy()
    cluster = frames.get("cluster", pd.DataFrame())
    rates = window_rates(cluster, ok)
    interfered = interference.per_run(rates, cluster, ok).rename(columns={"host": "interference_host"})
    if not interfered.empty:
        table = table.merge(interfered, on="run_id", how="left")
    table = unreported_tail(table, frames.get("intervals", pd.DataFrame()))
    table = read_side(table, frames.get("read_intervals", pd.DataFrame()))
    # the open-loop runs of sustained-throughput searches are judged by rate (analysis.sustained), not
    # pooled into configurations or ratios
    measured = table[table.search.isna()] if "search" in table else table
    # fault runs are judged by what the fault did (analysis.failover), not pooled into throughput configurations
    measured = measured[measured.fault_at_s.isna()] if "fault_at_s" in measured else measured
    configs = configurations(measured, params, batches, target)
    comparisons = baseline_comparisons(measured, params, baseline, margin, adjust)
    if not comparisons.empty:
        comparisons["settled"] = settled(comparisons, record.settle_within)
    problems = validate(table, configs, params, comparisons, disturbed_above=record.redo_above)
    path = None if isinstance(campaign, dict) else Path(campaign)
    a = CampaignAnalysis(table, configs, comparisons, problems, frames, params, path, record, rates)
    a.problems = sorted_problems(pd.concat([problems, bound_problems(a, params)], ignore_index=True).fillna({"kind": ""}))
    return a
