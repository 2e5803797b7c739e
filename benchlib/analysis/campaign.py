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
from pathlib import Path

import pandas as pd

from benchlib.analysis import interference
from benchlib.analysis.compare import TARGET
from benchlib.analysis.comparisons import (HEADLINE_METRICS, baseline_comparisons, configurations, headline_rows, settled)
from benchlib.analysis.resources import window_rates
from benchlib.analysis.runs import (LOAD_KEYS, NOT_CONFIG, AnalysisError, assess_all, config_columns,
                                    config_label, param_columns, read_side, run_inputs)
from benchlib.analysis.validate import bound_problems, sorted_problems, unreported_tail, validate
from benchlib.axis import AXES, AxisAnalysis, judged_on_throughput
from benchlib.catalogue import BASELINE
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

    def axis(self, name: str) -> AxisAnalysis:
        """What the axis ``name`` adds to this analysis (``benchlib.axis``), computed once and kept:
        ``a.axis("fault").summary``, ``a.axis("probe").stale_reads``, ``a.axis("stall").measures``."""
        views = self.__dict__.setdefault("_axis_views", {})
        if name not in views:
            views[name] = AXES.lookup(name).analysis(self)
        return views[name]

    @property
    def decided(self) -> list[str]:
        """Run parameters another parameter decides, over every axis (``AxisAnalysis.decided``): said once."""
        return [k for name in AXES for k in self.axis(name).decided]

    def measures(self, axis: str) -> pd.DataFrame:
        """An axis's measures of this campaign (empty when the axis has none)."""
        return self.axis(axis).measures

    def findings_of(self, axis: str) -> list[str]:
        """An axis's findings in words ([] when it has none)."""
        return list(self.axis(axis).findings)


def analyze(campaign: str | Path | dict[str, pd.DataFrame], *, baseline: str = BASELINE, margin: float | None = None,
            target: float | None = None, adjust: bool = True) -> CampaignAnalysis:
    """Every statistic of a campaign. ``baseline`` names a topology or a cluster (default: async); ``margin``
    is delta (default: the campaign spec's ``margin``, else 2%); ``adjust``: the ratios may take the CPU lost to
    others as a covariate where that is safe and narrows them (``benchlib.analysis.blocks``)."""
    frames = load_campaign(campaign) if not isinstance(campaign, dict) else campaign
    record = (read_campaign_record(campaign) if not isinstance(campaign, dict) else None) or CampaignRecord()
    if margin is None:
        margin = record.margin
    if target is None:
        target = record.target_halfwidth or TARGET
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
    # a search's open-loop runs (judged by rate) and fault runs (by what the fault did) are not pooled into
    # configurations or ratios (``Axis.counts_for_throughput``)
    measured = judged_on_throughput(table)
    configs = configurations(measured, params, batches, target)
    comparisons = baseline_comparisons(measured, params, baseline, margin, adjust)
    if not comparisons.empty:
        comparisons["settled"] = settled(comparisons, record.settle_within)
    problems = validate(table, configs, params, comparisons, disturbed_above=record.redo_above)
    path = None if isinstance(campaign, dict) else Path(campaign)
    a = CampaignAnalysis(table, configs, comparisons, problems, frames, params, path, record, rates)
    a.problems = sorted_problems(pd.concat([problems, bound_problems(a, params)], ignore_index=True).fillna({"kind": ""}))
    return a
