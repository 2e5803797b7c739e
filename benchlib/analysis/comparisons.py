"""A campaign's configurations and ratios: agreement of each configuration's repetitions, every configuration
against the baseline of its own server family (the two-way rounds model where the runs are blocked, Fieller's
interval otherwise), which ratios are the headline and settled, and what each read consistency costs against its
cluster's weakest."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib import catalogue
from benchlib.analysis import interference, likeness
from benchlib.analysis.blocks import block_ratio
from benchlib.analysis.compare import adjust, agreement, ratio
from benchlib.analysis.runs import LOAD_KEYS, READ_AND_WRITE_METRICS, column_is, config_columns

#: the comparisons a campaign is judged on: the writers' throughput, and a read split's readers'
HEADLINE_METRICS = ("tps", "read_tps")


def _same_key(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return all((x == y) or (pd.isna(x) and pd.isna(y)) for x, y in zip(a, b))


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


def _key(row: pd.Series | dict, cols: list[str]) -> tuple:
    return tuple(None if (isinstance(row[c], float) and np.isnan(row[c])) else row[c] for c in cols)


def configurations(table: pd.DataFrame, params: list[str], batches: dict, target: float) -> pd.DataFrame:
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


def _server(row: pd.Series) -> str:
    """The server family whose baseline runs ``row``'s configuration is compared with: with baseline runs on several
    servers (MariaDB async beside MySQL async), Galera is compared with MariaDB's, Group Replication with MySQL's,
    never with a pool of both."""
    return catalogue.family(row.get("system"))


def baseline_comparisons(table: pd.DataFrame, params: list[str], baseline: str, margin: float,
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
        base = next((b for k, b in base_groups.items() if _same_key(k, bkey)), None)
        if base is None:
            continue
        base = _same_reads(base, first)
        # with several baseline clusters (async 1+1 beside async 1+2), each is a comparison of its own: pooling them
        # would price a mix of clusters, and only one of them may be like the compared one
        parts = [b for _, b in base.groupby("cluster", sort=True)] if "cluster" in base else [base]
        for part in parts:
            differences = likeness.unlike(g, part)
            head = {**dict(zip(cols, key if isinstance(key, tuple) else (key,))), "baseline": baseline,
                    "baseline_clusters": ",".join(sorted(map(str, part.cluster.unique()))) if "cluster" in part
                    else "",
                    "unlike": tuple(differences),
                    "confounded_by": ", ".join(d.trait for d in likeness.confounds(differences)),
                    "like_for_like": not likeness.confounds(differences)}
            for row, result in _ratios(g, part, blocks, margin, adjust):
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


def consistency_costs_of(ok: pd.DataFrame, params: list[str], margin: float) -> pd.DataFrame:
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
        decided = set_by_consistency_of(mine, cols)
        fixed = [c for c in cols if c in mine and c not in decided]  # the load a setting's runs are matched on
        weakest = mine.default_consistency.iloc[0]
        base_all = mine[mine.read_consistency == weakest]
        for key, g in mine[mine.read_consistency != weakest].groupby(["read_consistency", *fixed], dropna=False,
                                                                      sort=True):
            first = g.iloc[0]
            base = base_all[np.logical_and.reduce([column_is(base_all[c], first[c]) for c in fixed])] if fixed \
                else base_all
            if base.empty:
                continue
            head = {"cluster": cluster, "setting": first.read_consistency, "weakest": weakest,
                    **{c: first[c] for c in fixed if mine[c].nunique(dropna=False) > 1}}
            for row, result in _ratios(g, base, blocks, margin):
                rows.append({**head, **row})
                results.append(result)
    return _adjusted(rows, results) if rows else pd.DataFrame()


def set_by_consistency_of(runs: pd.DataFrame, columns: list[str]) -> list[str]:
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
