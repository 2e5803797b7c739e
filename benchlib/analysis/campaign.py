"""A whole campaign analysed: per-run assessments, per-configuration agreement, ratios against a
baseline, and a validation pass listing every problem with a severity (statistics spec G).

    a = analyze("runs/quick")            # or analyze(frames) with frames from load_campaign
    a.runs          one row per run: trim, mean +- SE, n_eff, CoV, class and flags, latency, lag verdict
    a.configs       one row per configuration: mean, 95% interval, h, CoV, Q/p/I2, agreement verdict
    a.comparisons   one row per (configuration, baseline): ratio, Fieller interval, p, BH q, verdict
    a.problems      severity (error | warning | info), run or configuration, what, and the fix

Size: about 780 lines, over the project's 450; design review 4 splits it into runs, comparisons and validation with issue 36 (axes as units), which moves each axis's add-ons out with it: splitting it before would move the same lines twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis.blocks import block_ratio
from benchlib.analysis.compare import TARGET, adjust, agreement, ratio
from benchlib.analysis import interference
from benchlib.analysis.lag import lag_growth
from benchlib.analysis.resources import window_rates
from benchlib.analysis.series import batch_means
from benchlib.analysis.stability import assess
from benchlib.errors import BenchlibError
from benchlib.store import RUN_FACTS, CampaignRecord, load_campaign, read_campaign_record

#: run parameters that describe the load (a configuration and its baseline share them)
LOAD_KEYS = ["workload", "threads", "rate", "durability"]
#: run parameters that are not part of a configuration
NOT_CONFIG = {"repetition", "config", "search"}


class AnalysisError(BenchlibError):
    """A campaign that cannot be analysed as asked (no runs, unknown baseline or metric)."""


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
        return _set_by_consistency(ok, config_columns(self.param_columns))

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
            return df[np.logical_and.reduce([_column_is(df[k], row[k]) for k in keys if k in df])]

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
        return _consistency_costs(ok, self.param_columns, self.record.margin)


def _param_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in runs.columns if c not in RUN_FACTS and not c.startswith("summary_")]


def config_columns(params: list[str]) -> list[str]:
    return [c for c in params if c not in NOT_CONFIG]


@dataclass
class RunInput:
    """What one run's assessment needs, as plain arrays (cheap to send to a worker process)."""

    run_id: str
    t_s: np.ndarray
    tps: np.ndarray
    lat: np.ndarray
    err: np.ndarray
    lag_t: np.ndarray  # seconds since the load started
    lag_worst: np.ndarray  # the worst node's lag in that second, ms
    load_s: float


def assess_run(r: RunInput) -> dict[str, Any]:
    """The per-run numbers of spec G for one run."""
    out: dict[str, Any] = {"run_id": r.run_id}
    if len(r.tps) == 0:
        return out
    a = assess(r.tps)
    out.update({"seconds": a.n_s, "trim_s": a.trim_s, "trim_frac": a.trim_frac, "tps_mean": a.mean, "tps_se": a.se,
                "n_eff": a.n_eff, "tps_cov": a.cov, "tps_cov_10s": a.cov_batch10, "class": a.main,
                "flags": " ".join(a.flags), "stability": a.label, "stalls": a.stalls,
                "longest_stall_s": a.longest_stall_s,
                "osc_period_s": a.oscillation.period_s if a.oscillation else np.nan,
                "osc_amplitude": a.oscillation.amplitude_rel if a.oscillation else np.nan,
                "err_seconds": int((r.err > 0).sum()),
                "gaps": int(max(0, r.t_s[-1] - r.t_s[0] + 1 - len(r.t_s)))})
    steady_lat = r.lat[a.trim_s:]
    out["lat_pctl_ms"] = float(np.nanmean(steady_lat)) if len(steady_lat) else np.nan
    out["lat_p95_of_seconds_ms"] = float(np.nanpercentile(steady_lat, 95)) if len(steady_lat) else np.nan
    out["_batches"] = batch_means(r.tps[a.trim_s:], count=20)
    in_load = (r.lag_t >= 0) & (r.lag_t < r.load_s)
    if in_load.any():
        lg = lag_growth(r.lag_worst[in_load], r.lag_t[in_load], trim_s=a.trim_s)
        w = r.lag_worst[in_load]
        out.update({"lag_max_ms": float(w.max()), "lag_p95_ms": float(np.percentile(w, 95)),
                    "lag_mean_ms": float(w.mean()), "lag_verdict": lg.verdict, "lag_slope_ms_per_s": lg.slope,
                    "lag_slope_low": lg.slope_low, "lag_slope_high": lg.slope_high, "lag_epsilon": lg.epsilon,
                    "lag_mk_p": lg.mk_p, "lag_start_median_ms": lg.start_median,
                    "lag_end_median_ms": lg.end_median})
    return out


def _inputs(ok: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> list[RunInput]:
    """Split the campaign's frames per run; the worst lag per second is computed for all runs at once."""
    iv = frames["intervals"]
    iv_by = {k: g for k, g in iv.sort_values(["run_id", "t_s"]).groupby("run_id", observed=True)} if not iv.empty else {}
    lag = frames["lag"]
    lag_by: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if not lag.empty and ok.run_id.isin(lag.run_id.unique()).any():  # (frames of failed runs are not analysed)
        lag = lag[["run_id", "t_commit_s", "lag_ms"]].dropna(subset=["lag_ms"])
        rid = lag.run_id.astype("category")
        names = list(rid.cat.categories)
        start = ok.set_index("run_id").load_start_s.astype(float)
        origin = start.reindex(names).to_numpy()  # per category; NaN for runs not analysed
        codes = rid.cat.codes.to_numpy()
        sec = np.floor(lag.t_commit_s.to_numpy() - origin[codes])
        keep = np.isfinite(sec)
        key = codes[keep].astype(np.int64) * 10_000_000 + (sec[keep].astype(np.int64) + 1_000_000)
        order = np.argsort(key, kind="stable")
        key, val = key[order], lag.lag_ms.to_numpy()[keep][order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        worst = np.maximum.reduceat(val, first)
        ukey = key[first]
        run_code, second = ukey // 10_000_000, (ukey % 10_000_000 - 1_000_000).astype(float)
        bounds = np.flatnonzero(np.r_[True, run_code[1:] != run_code[:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:]):
            lag_by[names[run_code[a]]] = (second[a:b], worst[a:b])
    empty = np.array([])
    out = []
    for r in ok.itertuples(index=False):
        g = iv_by.get(r.run_id)
        lt, lw = lag_by.get(r.run_id, (empty, empty))
        load_s = float(r.load_end_s - r.load_start_s) if pd.notna(r.load_end_s) and pd.notna(r.load_start_s) else np.inf
        if g is None:
            out.append(RunInput(r.run_id, empty, empty, empty, empty, lt, lw, load_s))
        else:
            out.append(RunInput(r.run_id, g.t_s.to_numpy(float), g.tps.to_numpy(float), g.lat_pctl_ms.to_numpy(float),
                                g.err_per_s.to_numpy(float), lt, lw, load_s))
    return out


def _assess_all(inputs: list[RunInput]) -> list[dict[str, Any]]:
    """Every run's assessment; spread over the machine's cores for large campaigns."""
    import os

    workers = os.cpu_count() or 1
    if len(inputs) < 64 or workers < 2:
        return [assess_run(r) for r in inputs]
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(assess_run, inputs, chunksize=max(1, len(inputs) // (4 * workers))))


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
    params = _param_columns(runs)
    ok = runs[runs.status == "ok"]
    assessed = pd.DataFrame(_assess_all(_inputs(ok, frames)))
    batches = dict(zip(assessed.run_id, assessed.pop("_batches"))) if "_batches" in assessed else {}
    table = runs.merge(assessed, on="run_id", how="left") if not assessed.empty else runs.copy()
    cluster = frames.get("cluster", pd.DataFrame())
    rates = window_rates(cluster, ok)
    interfered = interference.per_run(rates, cluster, ok).rename(columns={"host": "interference_host"})
    if not interfered.empty:
        table = table.merge(interfered, on="run_id", how="left")
    table = _unreported_tail(table, frames.get("intervals", pd.DataFrame()))
    table = _read_side(table, frames.get("read_intervals", pd.DataFrame()))
    # the open-loop runs of sustained-throughput searches are judged by rate (analysis.sustained), not
    # pooled into configurations or ratios
    measured = table[table.search.isna()] if "search" in table else table
    # fault runs are judged by what the fault did (analysis.failover), not pooled into throughput configurations
    measured = measured[measured.fault_at_s.isna()] if "fault_at_s" in measured else measured
    configs = _configs(measured, params, batches, target)
    comparisons = _comparisons(measured, params, baseline, margin, adjust)
    if not comparisons.empty:
        comparisons["settled"] = settled(comparisons, record.settle_within)
    problems = validate(table, configs, params, comparisons, disturbed_above=record.redo_above)
    path = None if isinstance(campaign, dict) else Path(campaign)
    a = CampaignAnalysis(table, configs, comparisons, problems, frames, params, path, record, rates)
    a.problems = _sorted(pd.concat([problems, _bound_problems(a, params)], ignore_index=True).fillna({"kind": ""}))
    return a


#: the comparisons a campaign is judged on: the writers' throughput, and a read split's readers'
HEADLINE_METRICS = ("tps", "read_tps")


def settled(comparisons: pd.DataFrame, within: float | None = None) -> pd.Series:
    """Per comparison, whether it is settled: its 95% interval lies within +- ``within`` of its ratio (the campaign's
    ``settle_within``: the precision asked for, whatever the verdict), or, without ``within``, its verdict is no
    longer INCONCLUSIVE."""
    if comparisons.empty:
        return pd.Series(dtype=bool)
    if within is not None:
        return comparisons.half_width_rel.astype(float) <= within + 1e-12
    return comparisons.verdict != "INCONCLUSIVE"


def headline_rows(comparisons: pd.DataFrame) -> pd.DataFrame:
    """The headline comparisons (throughput ratios) of ``comparisons``."""
    return comparisons[comparisons.metric.isin(HEADLINE_METRICS)] if not comparisons.empty else comparisons


def _sorted(problems: pd.DataFrame) -> pd.DataFrame:
    order = {"error": 0, "warning": 1, "info": 2}
    return problems.sort_values("severity", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _bound_problems(a: "CampaignAnalysis", params: list[str]) -> pd.DataFrame:
    """A warning per configuration whose runs were CPU-bound (a host over 90% busy or 20% iowait, or a server
    node using over 90% of the host's CPUs): a saturated host changes what a comparison means."""
    from benchlib.analysis.resources import BUSY, IOWAIT, cpu_bound

    bound = cpu_bound(a)
    rows = []
    if bound.empty:
        return pd.DataFrame(columns=["severity", "where", "what", "fix"])
    configs = a.runs.drop_duplicates("config").set_index("config")
    keys = [k for k in params if k in configs.columns and k not in ("topology", "config")]
    for config, g in bound.groupby("config", sort=True):
        hit = g[g.bound != ""]
        if hit.empty:
            continue
        what = (f"CPU-bound in {hit.run_id.nunique()} of {g.run_id.nunique()} runs ({', '.join(sorted(set(hit.bound)))}; "
                f"host busy {g.busy.median():.0%} median of {int(g.cpus.max())} CPUs, iowait {g.iowait.median():.0%})")
        rows.append(("warning", f"config {config} ({config_label(configs.loc[config], keys)})", what,
                     f"over {BUSY:.0%} busy or {IOWAIT:.0%} iowait the load measures the host's limit as much as the "
                     "replication's: fewer client threads, or a bigger host, to compare the systems themselves"))
    return pd.DataFrame(rows, columns=["severity", "where", "what", "fix"])


def _key(row: pd.Series | dict, cols: list[str]) -> tuple:
    return tuple(None if (isinstance(row[c], float) and np.isnan(row[c])) else row[c] for c in cols)


def _configs(table: pd.DataFrame, params: list[str], batches: dict, target: float) -> pd.DataFrame:
    cols = config_columns(params)
    ok = table[table.status == "ok"]
    if ok.empty or "tps_mean" not in ok:
        return pd.DataFrame(columns=[*cols, "runs", "verdict"])
    rows = []
    for key, g in ok.groupby(cols, dropna=False, sort=True):
        g = g.dropna(subset=["tps_mean"])
        if g.empty:
            continue
        ag = agreement(g.tps_mean.to_numpy(), g.tps_se.to_numpy(), list(g["class"]),
                       [batches[r] for r in g.run_id if r in batches and len(batches[r]) >= 2] or None,
                       target=target)
        rows.append({**dict(zip(cols, key if isinstance(key, tuple) else (key,))), "config": g.config.iloc[0],
                     "runs": ag.runs, "tps_mean": ag.mean, "ci_low": ag.ci_low, "ci_high": ag.ci_high,
                     "half_width_rel": ag.half_width_rel, "cov_runs": ag.cov, "q": ag.q, "q_p": ag.q_p, "i2": ag.i2,
                     "kruskal_p": ag.kruskal_p, "classes": ",".join(sorted(set(g["class"]))),
                     "classes_consistent": ag.classes_consistent, "verdict": ag.verdict, "add_runs": ag.add,
                     "agreement": ag.label, "only_wide": ag.only_wide, "runs_needed": ag.runs_needed,
                     "lat_pctl_ms": float(g.lat_pctl_ms.mean()) if "lat_pctl_ms" in g else np.nan,
                     "lag_p95_ms": float(g.lag_p95_ms.mean()) if "lag_p95_ms" in g else np.nan,
                     "catch_up_s": float(g.catch_up_s.mean()) if "catch_up_s" in g else np.nan})
    return pd.DataFrame(rows)


#: the server each system runs on: with baseline runs on several servers (MariaDB async beside MySQL async), a
#: configuration is compared with the baseline runs of its own server (Galera with MariaDB's, Group Replication
#: with MySQL's), never with a pool of both
SERVER_OF = {"mariadb": "MariaDB", "galera": "MariaDB", "mysql": "MySQL", "group_replication": "MySQL",
             "pxc": "MySQL", "aurora": "Aurora"}


def _server(row: pd.Series) -> str:
    system = row.get("system")
    return SERVER_OF.get(system, str(system)) if isinstance(system, str) else ""


def _comparisons(table: pd.DataFrame, params: list[str], baseline: str, margin: float,
                 adjust: bool = True) -> pd.DataFrame:
    ok = table[(table.status == "ok")]
    if ok.empty or "tps_mean" not in ok:
        return pd.DataFrame()
    is_base = (ok.get("topology") == baseline) | (ok.get("cluster") == baseline)
    if not is_base.any():
        return pd.DataFrame()
    load = [c for c in LOAD_KEYS if c in params]
    cols = config_columns(params)
    rows, results = [], []
    blocks = _blocks(ok)
    base_runs = ok[is_base]
    servers = base_runs.apply(_server, axis=1) if "system" in base_runs else pd.Series("", index=base_runs.index)
    by_server = servers.nunique() > 1
    for key, g in ok[~is_base].groupby(cols, dropna=False, sort=True):
        first = g.iloc[0]
        mine = base_runs
        if by_server and (servers == _server(first)).any():
            mine = base_runs[servers == _server(first)]
        base_groups = {k: b for k, b in mine.groupby(load, dropna=False)} if load else {(): mine}
        bkey = _key(first, load) if load else ()
        bkey = bkey[0] if len(load) == 1 else bkey
        base = next((b for k, b in base_groups.items() if _same(k, bkey)), None)
        if base is None:
            continue
        base = _same_reads(base, first)
        head = {**dict(zip(cols, key if isinstance(key, tuple) else (key,))), "baseline": baseline,
                "baseline_clusters": ",".join(sorted(map(str, base.cluster.unique()))) if "cluster" in base else ""}
        for row, result in _ratios(g, base, blocks, margin, adjust):
            rows.append({**head, **row})
            results.append(result)
    return _adjusted(rows, results)


def _ratios(g: pd.DataFrame, base: pd.DataFrame, blocks: pd.DataFrame | None, margin: float, adjust: bool = True):
    """(row, result) per metric (throughput, latency): the runs ``g`` of one configuration against the runs
    ``base``, by the two-way model over the campaign's rounds where there are rounds (``blocks``), else Fieller."""
    family = None
    if blocks is not None:
        family = blocks.copy()
        family.loc[base.index, "label"] = _BASE
    for metric, higher in READ_AND_WRITE_METRICS:
        if metric not in g or metric not in base:
            continue
        a_vals, b_vals = g[metric].dropna().to_numpy(), base[metric].dropna().to_numpy()
        if len(a_vals) == 0 or len(b_vals) == 0:
            continue
        r = ratio(a_vals, b_vals, higher_is_better=higher, margin=margin)
        blocked = None
        if family is not None and metric in family:
            fam = family.dropna(subset=[metric])
            covariates = {c: fam[c].to_numpy(float) for c in interference.COVARIATES if c in fam} if adjust else {}
            blocked = block_ratio(fam.label, fam.repetition, fam[metric], g.config.iloc[0], _BASE,
                                  higher_is_better=higher, margin=margin, covariates=covariates)
        main = blocked or r
        yield ({"metric": metric.replace("_mean", ""), "ratio": main.ratio, "ci_low": main.ci_low,
                "ci_high": main.ci_high, "p": main.p, "n": r.n_a, "n_baseline": r.n_b, "verdict": main.verdict,
                "runs_needed_per_side": blocked.rounds_needed if blocked else r.runs_needed_per_side,
                "margin": margin, "method": "blocks" if blocked else "fieller",
                "fieller_ratio": r.ratio, "fieller_low": r.ci_low, "fieller_high": r.ci_high,
                "fieller_verdict": r.verdict,
                "df": blocked.df if blocked else np.nan, "sigma_log": blocked.sigma if blocked else np.nan,
                "mde": blocked.mde if blocked else np.nan, "pooled": blocked.pooled if blocked else "",
                "round_p": blocked.round_p if blocked else np.nan,
                "levene_p": blocked.levene_p if blocked else np.nan,
                "half_width_rel": max(main.ci_high / main.ratio - 1, 1 - main.ci_low / main.ratio)
                if np.isfinite(main.ci_high) and main.ratio > 0 else np.inf,
                "adjusted_for": blocked.adjusted_for if blocked else "",
                "unadjusted": blocked.unadjusted if blocked and blocked.adjusted_for else np.nan,
                "unadjusted_low": blocked.unadjusted_low if blocked and blocked.adjusted_for else np.nan,
                "unadjusted_high": blocked.unadjusted_high if blocked and blocked.adjusted_for else np.nan,
                "covariate_slope": blocked.slope if blocked and blocked.slope is not None else np.nan,
                "notes": "; ".join([*(blocked.notes if blocked else []), *r.notes])}, main)


def _adjusted(rows: list[dict], results: list) -> pd.DataFrame:
    """``rows`` with Benjamini-Hochberg q-values, within each metric."""
    for metric in {row["metric"] for row in rows}:
        idx = [i for i, row in enumerate(rows) if row["metric"] == metric]
        adjust([results[i] for i in idx])
        for i in idx:
            rows[i]["q"] = results[i].q
    return pd.DataFrame(rows)


def _same_reads(base: pd.DataFrame, first: pd.Series) -> pd.DataFrame:
    """With the stale-read probe on, the baseline's runs under the same read consistency as the configuration
    (async causal against MySQL causal), else under its system's default: never a pool of its settings."""
    if "read_consistency" not in base or base.read_consistency.isna().all():
        return base
    same = base[base.read_consistency == first.get("read_consistency")]
    return same if len(same) else base[base.read_consistency == base.default_consistency]


def _consistency_costs(ok: pd.DataFrame, params: list[str], margin: float) -> pd.DataFrame:
    """Per cluster, each read consistency setting's writer (the sysbench load) against the same cluster's runs under
    its default setting, the weakest: throughput and latency ratios by the campaign's ratio machinery, everything
    else about the load the same. The columns a setting determines (GR's AFTER sets the load's
    ``gr_consistency``) are part of the setting, not of the load it is matched on."""
    if "read_consistency" not in ok or ok.read_consistency.isna().all() or "tps_mean" not in ok:
        return pd.DataFrame()
    ok = ok[ok.read_consistency.notna() & ok.default_consistency.notna()]
    cols = [c for c in config_columns(params) if c not in ("cluster", "topology", "system")]
    rows, results = [], []
    for cluster, mine in ok.groupby("cluster", sort=True):
        blocks = _blocks(mine)  # the two-way model over this cluster's runs: its own settings' noise
        decided = _set_by_consistency(mine, cols)
        fixed = [c for c in cols if c in mine and c not in decided]  # the load a setting's runs are matched on
        weakest = mine.default_consistency.iloc[0]
        base_all = mine[mine.read_consistency == weakest]
        for key, g in mine[mine.read_consistency != weakest].groupby(["read_consistency", *fixed], dropna=False,
                                                                      sort=True):
            first = g.iloc[0]
            base = base_all[np.logical_and.reduce([_column_is(base_all[c], first[c]) for c in fixed])] if fixed \
                else base_all
            if base.empty:
                continue
            head = {"cluster": cluster, "setting": first.read_consistency, "weakest": weakest,
                    **{c: first[c] for c in fixed if mine[c].nunique(dropna=False) > 1}}
            for row, result in _ratios(g, base, blocks, margin):
                rows.append({**head, **row})
                results.append(result)
    return _adjusted(rows, results) if rows else pd.DataFrame()


def _set_by_consistency(runs: pd.DataFrame, columns: list[str]) -> list[str]:
    """Of ``columns``, those that vary within a cluster and take one value per cluster and read consistency
    (``read_consistency``): the ones the setting decides."""
    if "read_consistency" not in runs or runs.read_consistency.isna().all():
        return []
    probed = runs.dropna(subset=["read_consistency"])
    out = []
    for c in columns:
        if c not in probed:
            continue
        within = probed.groupby("cluster")[c].nunique(dropna=False)
        per_setting = probed.groupby(["cluster", "read_consistency"])[c].nunique(dropna=False)
        if within.max() > 1 and per_setting.max() == 1:
            out.append(c)
    return out


def _column_is(column: pd.Series, value) -> np.ndarray:
    return (column.isna() if pd.isna(value) else column == value).to_numpy()


_BASE = "\0baseline"  # the baseline's label in the two-way model (all its runs of the comparison's load)


def _blocks(ok: pd.DataFrame) -> pd.DataFrame | None:
    """Every ok run with its configuration label and round: the two-way model's data. A round runs every
    configuration of the campaign, so the model spans the whole campaign (round effects are the machine's,
    shared by every load) and pools the run-to-run noise of all its configurations. None without rounds."""
    if "repetition" not in ok or ok.repetition.nunique() < 2:
        return None
    fam = ok.copy()
    fam["label"] = fam.config.astype(str)
    return fam


#: what a ratio is taken of (run column, higher is better): the writers' throughput and latency, and with a
#: read-split load the readers' (every reading node's read-only transactions per second, their p95 latency)
READ_AND_WRITE_METRICS = (("tps_mean", True), ("lat_pctl_ms", False), ("read_tps", True), ("read_lat_ms", False))


def _read_side(table: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
    """A read-split load's readers per run: ``read_tps`` (read-only transactions per second, summed over the reading
    nodes, the first second left out) and ``read_lat_ms`` (their latency percentile, the median second, averaged over
    the nodes); absent without a read-split run."""
    if reads is None or reads.empty:
        return table
    r = reads[reads.t_s > 1].astype({"run_id": str, "node": str})
    per_node = r.groupby(["run_id", "node"]).agg(tps=("tps", "mean"), lat=("lat_pctl_ms", "median"))
    per_run = per_node.groupby(level="run_id").agg(read_tps=("tps", "sum"), read_lat_ms=("lat", "mean"))
    out, run = table.copy(), table.run_id.astype(str)
    for column in per_run:
        out[column] = run.map(per_run[column])
    return out


SHORT_OF_RATE = 0.05  # an open-loop configuration whose mean throughput is this far below its rate did not hold it
TAIL_WARN = 0.02  # share of a run's transactions sysbench left out of its per-second lines worth a warning


def _unreported_tail(table: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Transactions sysbench counted in its summary but in no per-second line (it sometimes omits its last
    report): ``unreported_trx`` and ``unreported_frac`` per run."""
    if intervals.empty or "summary_transactions" not in table:
        return table
    iv = intervals.sort_values(["run_id", "t_s"])
    dt = iv.groupby("run_id", observed=True).t_s.diff().fillna(iv.t_s)
    reported = (iv.tps.astype(float) * dt.astype(float)).groupby(iv.run_id.astype(str)).sum()
    total = pd.to_numeric(table.summary_transactions, errors="coerce")
    out = table.copy()
    out["unreported_trx"] = (total - table.run_id.astype(str).map(reported)).round(0)
    out["unreported_frac"] = out.unreported_trx / total.where(total > 0)
    return out


def _same(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return all((x == y) or (pd.isna(x) and pd.isna(y)) for x, y in zip(a, b))


def config_label(row: pd.Series, keys: list[str]) -> str:
    """A short name for a configuration: its cluster, then the settings that are set."""
    parts = [str(row["cluster"])] if "cluster" in keys else []
    for k in keys:
        if k in ("cluster", "topology", "workload") or pd.isna(row[k]):
            continue
        parts.append(f"t{row[k]:g}" if k == "threads" else f"{k}={row[k]:g}" if isinstance(row[k], float) else f"{k}={row[k]}")
    return " ".join(parts)


def validate(table: pd.DataFrame, configs: pd.DataFrame, params: list[str],
             comparisons: pd.DataFrame | None = None, *, disturbed_above: float = interference.DISTURBED
             ) -> pd.DataFrame:
    """Every problem of a campaign, with a severity: error (a result must not be used as is),
    warning (read it with care), info."""
    out: list[dict[str, Any]] = []

    def add(severity: str, where: str, what: str, fix: str = "", kind: str = "") -> None:
        out.append({"severity": severity, "where": where, "what": what, "fix": fix, "kind": kind})

    records = table.to_dict("records")
    for r in records:  # first: runs that ran but did not measure what they name
        if r["status"] == "invalid":
            add("error", r["run_id"], f"run invalid: {str(r['reason']).removeprefix('INVALID: ')}",
                "left out of every statistic; find why the cluster changed mode (the reason names the node and "
                "when), then rerun the campaign: invalid runs are redone")
    for r in records:
        rid = r["run_id"]
        if r["status"] == "invalid":
            continue
        if r["status"] == "disturbed":
            add("warning", rid, f"run disturbed: {str(r['reason']).removeprefix('DISTURBED: ')}",
                "left out of every statistic (redone up to [interference] max_redos times, disturbed every time); "
                "rerun the campaign when the host is quieter: disturbed runs are redone; `benchlib doctor` says what "
                "this host's noise is")
            continue
        if r["status"] != "ok":
            add("error", rid, f"run failed: {r['reason']}", "rerun the campaign: failed runs are redone")
            continue
        if pd.notna(r.get("fault_at_s", float("nan"))):  # a fault run: its gaps and lost sync are the fault's
            if pd.isna(r.get("lost_writes")):
                add("warning", rid, "the ledger was not audited after the heal: lost writes unknown",
                    "see the run's manifest.json (ledger, heal)")
            continue
        if r.get("gaps", 0) > 0:
            add("error", rid, f"{r['gaps']} per-second intervals missing", "rerun this run")
        if r["sampler_errors"]:
            add("warning", rid, f"{r['sampler_errors']} sampler errors: gaps in lag or cluster sampling",
                "see manifest.json sampler.errors", kind="sampler")
        wait = r["in_sync_wait_s"]
        if pd.isna(wait) or wait > 5:
            add("warning", rid, "replicas were not in sync at the start of the load" if pd.isna(wait)
                else f"replicas took {wait:.1f} s to get in sync before the load", kind="in_sync")
        flags = r.get("flags") if isinstance(r.get("flags"), str) else ""
        if r.get("class") in ("NO_STEADY_STATE", "SLOWDOWN"):
            add("warning", rid, f"throughput {r['stability']}", "run longer, or look at the stability chart",
                kind="stability")
        elif any(f in flags for f in ("STALLS", "NOT_SETTLED", "LONG_WARMUP")):
            add("warning", rid, f"throughput {r['stability']}", "run longer, or add warm-up (load.warmup_s)",
                kind="stability")
        elif flags:
            add("info", rid, f"throughput {r['stability']}", kind="stability")
        if r.get("lag_verdict") == "GROWING" and isinstance(r.get("search"), str):
            add("info", rid, f"replica lag grows at rate {r['rate']:.0f} (a sustained-throughput search probes "
                             "past the sustained rate)")
        elif r.get("lag_verdict") == "GROWING":
            add("warning", rid, f"replica lag grows {r['lag_slope_ms_per_s']:.1f} ms/s over the run: "
                                "the replicas do not sustain this load", kind="lag")
        tail = r.get("unreported_frac")
        if isinstance(tail, float) and tail > TAIL_WARN:
            add("warning", rid, f"sysbench left {tail:.1%} of the run's transactions out of its per-second lines "
                                "(its last report is missing)",
                "the per-second figures (and the mean TPS after the warm-up trim) miss that tail; "
                "summary_tps includes it", kind="tail")
        if pd.isna(r["catch_up_s"]):
            add("warning", rid, "no catch-up time recorded", kind="catch_up")
        lost = r.get("lost_cpu")
        if isinstance(lost, float) and lost > disturbed_above and not isinstance(r.get("search"), str):
            add("warning", rid, f"disturbed: {interference.evidence(r)} (over the {disturbed_above:.0%} a run "
                                "may lose), kept: the campaign did not redo disturbed runs when it ran",
                "the ratios are adjusted for the CPU lost to others where that is safe (see the findings); "
                "`benchlib doctor` says what this host's noise is and what to do about it", kind="interference")
    keys = [k for k in params if k in configs.columns and k not in ("topology", "config")]
    labels = {c.config: f"config {c.config} ({config_label(c, keys)})" for _, c in configs.iterrows()}
    out = _once_per_config(out, table, labels) + _error_rates(table, labels)
    # a configuration's own interval wider than target_halfwidth matters for its absolute TPS; when every ratio
    # against the baseline is settled, what the campaign compares is known, and it is information only
    compared = comparisons is not None and not comparisons.empty
    settled = compared and not (comparisons.verdict == "INCONCLUSIVE").any()
    for _, c in configs.iterrows():
        rate = c.get("rate")
        if isinstance(rate, (int, float)) and rate > 0 and c.tps_mean < (1 - SHORT_OF_RATE) * rate:
            add("warning", f"config {c.config} ({config_label(c, keys)})",
                f"held {c.tps_mean:.0f} of the {rate:g} transactions/s asked ({c.tps_mean / rate:.0%}): the open-loop "
                "load queued, so its latency measures the backlog, not a transaction",
                "a lower rate (the sustained-throughput search finds the highest it holds), or fewer servers on the "
                "host")
        if c.verdict != "AGREE":
            # only wider than the target: with ratios against a baseline, those are what the campaign is judged
            # on (the findings say which are settled and how many rounds would settle the others)
            quiet = settled or (compared and c.verdict == "ADD_RUNS" and bool(c.get("only_wide", False)))
            add("info" if quiet else "warning", f"config {c.config} ({config_label(c, keys)})",
                f"repetitions: {c.agreement}",
                ("every ratio against the baseline is settled; more rounds would narrow this configuration's own "
                 "interval" if settled else "the ratios against the baseline say what more rounds would settle; "
                 "this configuration's own throughput interval is wider than the target") if quiet
                else "add repetitions (campaign repetitions, or the adaptive mode)", kind="repetitions")
    return _sorted(pd.DataFrame(out, columns=["severity", "where", "what", "fix", "kind"]).fillna({"kind": ""}))


#: sysbench's ignored errors (deadlocks, certification failures, lock wait timeouts: each one a transaction
#: rolled back and retried) per 1,000 committed transactions above which a configuration gets a warning
ERRORS_WARN_PER_1000 = 10.0
#: ... or above which it does when its rate is OUT_OF_LINE times the campaign's median configuration's (of the
#: same workload) or more: a cluster that conflicts where the others do not
ERRORS_NOTE_PER_1000 = 1.0
OUT_OF_LINE = 5.0


def _measured_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The ok runs without a fault: the ones a condition per configuration is about."""
    ok = table[table.status == "ok"]
    if "fault_at_s" in ok:
        ok = ok[ok.fault_at_s.isna()]
    return ok


def _once_per_config(problems: list[dict[str, Any]], table: pd.DataFrame,
                     labels: dict[str, str]) -> list[dict[str, Any]]:
    """A per-run condition that holds on every run of a configuration (2 runs or more), said once for it."""
    ok = _measured_runs(table)
    config_of = dict(zip(ok.run_id, ok.config)) if "config" in ok else {}
    runs_of = ok.groupby("config").size().to_dict() if "config" in ok else {}
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for p in problems:
        if p["kind"] and p["where"] in config_of:
            groups.setdefault((config_of[p["where"]], p["kind"], p["severity"]), []).append(p)
    out, merged = [], set()
    for (config, kind, severity), ps in groups.items():
        n = runs_of.get(config, 0)
        if n < 2 or len(ps) < n:
            continue
        merged.update(id(p) for p in ps)
        whats = sorted({p["what"] for p in ps})
        what = whats[0] if len(whats) == 1 else f"{whats[0]} (and the like: {len(whats)} variants)"
        out.append({**ps[0], "where": labels.get(config, f"config {config}"), "what": f"every run ({n}): {what}"})
    return [p for p in problems if id(p) not in merged] + out


def _error_rates(table: pd.DataFrame, labels: dict[str, str]) -> list[dict[str, Any]]:
    """sysbench's ignored errors once per configuration, as a rate per 1,000 transactions: information where it is
    in line with the campaign, a warning where it is high or out of line (``ERRORS_WARN_PER_1000``,
    ``OUT_OF_LINE``)."""
    ok = _measured_runs(table)
    need = {"config", "summary_ignored_errors", "summary_transactions"}
    if ok.empty or not need <= set(ok.columns):
        return []
    ok = ok.assign(errs=pd.to_numeric(ok.summary_ignored_errors, errors="coerce").fillna(0),
                   trx=pd.to_numeric(ok.summary_transactions, errors="coerce").fillna(0))
    per = ok.groupby("config").agg(errs=("errs", "sum"), trx=("trx", "sum"), runs=("errs", "size"),
                                   hit=("errs", lambda e: int((e > 0).sum())),
                                   workload=("workload", "first") if "workload" in ok else ("errs", "size"))
    per["rate"] = 1000 * per.errs / per.trx.where(per.trx > 0)
    median = per.groupby("workload").rate.transform("median")
    out = []
    for config, c in per.iterrows():
        if not c.errs or pd.isna(c.rate):
            continue
        high = c.rate > ERRORS_WARN_PER_1000
        odd = c.rate >= ERRORS_NOTE_PER_1000 and c.rate >= OUT_OF_LINE * median[config]
        why = (f" (above {ERRORS_WARN_PER_1000:g} per 1,000)" if high else
               f" ({c.rate / median[config]:.0f}x the campaign's median configuration)" if odd and median[config] > 0
               else " (the other configurations had none)" if odd else "")
        out.append({"severity": "warning" if high or odd else "info", "where": labels.get(config, f"config {config}"),
                    "what": f"sysbench retried {int(c.errs)} transaction{'' if c.errs == 1 else 's'} (deadlocks, certification failures) in "
                            f"{c.hit} of {c.runs} runs: {c.rate:.2g} per 1,000 committed{why}",
                    "fix": "expected where writers conflict (several writers, or hot rows under many threads); "
                           "raw/sysbench.txt of a run shows the errors" if high or odd else "",
                    "kind": "errors"})
    return out
