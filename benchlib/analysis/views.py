"""Frames shaped for the charts, from a ``CampaignAnalysis``: what the notebooks call, so that
no notebook computes anything itself.

Each function returns a tidy frame (or the pieces a chart builder takes); the column names match
the chart builders' defaults.

The views of an axis are in its package (``benchlib.axes.probe.views``, ``benchlib.axes.fault.views``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchlib import catalogue
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis, config_columns
from benchlib.analysis.campaign import config_label as label
from benchlib.analysis.problems import Problems
from benchlib.analysis.runs import throughput_runs


def measured(a: CampaignAnalysis) -> pd.DataFrame:
    """The successful runs of the campaign's matrix (the open-loop runs of sustained-throughput searches
    are left out: they are judged by rate, in ``sustained``; fault runs too: their throughput holds the fault, and
    they are judged by ``failover_*``)."""
    return throughput_runs(a.runs)


def sustained(a: CampaignAnalysis) -> pd.DataFrame:
    """One row per sustained-throughput search: peak, sustained rate and bracket, FC_LIMITED, with a label."""
    from benchlib.analysis.sustained import searches

    precision = a.record.search_precision
    df = searches(a, precision=precision)
    if df.empty:
        raise AnalysisError("no sustained-throughput search in this campaign",
                            hint="set sustained = true in the campaign spec")
    keys = [c for c in ["cluster", "workload", "durability", "fc_limit", "parallel_threads", "applier_threads"]
            if c in df]
    df["label"] = [label(row, keys) + (f" {row['workload']}" if df.workload.nunique() > 1 else "")
                   for _, row in df.iterrows()]
    return df


def sustained_or_empty(a: CampaignAnalysis) -> pd.DataFrame:
    """``sustained``, or an empty frame when the campaign ran no sustained-throughput search."""
    try:
        return sustained(a)
    except AnalysisError:
        return pd.DataFrame(columns=["label", "workload", "peak_tps", "sustained_tps", "first_failing_tps", "status"])


def of_system(frame: pd.DataFrame, system: str) -> pd.DataFrame:
    """The rows of ``frame`` whose runs are of ``system`` (a ``benchlib.catalogue`` name); none when the frame does
    not say which system its runs are of. How studies and notebooks select systems."""
    return frame[frame["system"] == system] if "system" in frame else frame[:0]


def of_topology(frame: pd.DataFrame, topology: str, *, or_all: bool = False) -> pd.DataFrame:
    """The rows of ``frame`` whose runs are of ``topology``; when none are (or the frame has no topology column):
    none, or with ``or_all`` every row."""
    if "topology" not in frame:
        return frame if or_all else frame[:0]
    hit = frame["topology"] == topology
    return frame if or_all and not hit.any() else frame[hit]


def clusters_of(a: CampaignAnalysis, topology: str, *, wan: bool | None = None) -> list[str]:
    """The campaign's clusters of ``topology`` in the order its runs name them; with ``wan`` only those whose nodes
    are (True) or are not (False) across a WAN link."""
    rtt = cluster_rtts(a)
    pairs = a.runs[["cluster", "topology"]].drop_duplicates().itertuples(index=False)
    return [c for c, t in pairs if t == topology and (wan is None or bool(rtt.get(c)) == wan)]


def cluster_sizes(a: CampaignAnalysis) -> dict[str, int]:
    """Nodes per cluster, from the runs' node lists."""
    out: dict[str, int] = {}
    for cluster, nodes in a.runs[["cluster", "nodes"]].dropna().itertuples(index=False):
        out[cluster] = len(str(nodes).split(","))
    return out


def problems_first(a: CampaignAnalysis) -> Problems:
    """Errors and warnings grouped as the report groups them (notes last, folded), for the top of every notebook;
    ``.frame`` has every row."""
    return Problems(a.problems)


def ratios(a: CampaignAnalysis, metric: str = "tps") -> pd.DataFrame:
    """Ratios against the baseline with a label per topology and cluster size (x of ratio_bars)."""
    c = a.comparisons
    if c.empty:
        raise AnalysisError("no comparison against the baseline in this campaign",
                            hint="the campaign needs runs of the baseline topology (async) with the same load")
    c = c[c.metric == metric].copy()
    sizes = cluster_sizes(a)
    c["size"] = c["cluster"].map(sizes)
    c["label"] = c["topology"] + " (" + c["size"].astype(str) + " nodes)"
    if "baseline_clusters" in c and c.baseline_clusters.nunique() > 1:  # several baseline clusters: name each
        c["label"] = (c["cluster"] + " (" + c["size"].astype(str) + ") / " + c.baseline_clusters.astype(str) + " ("
                      + c.baseline_clusters.map(sizes).astype(str) + ")")
    # one bar per configuration: what else varies (workload, threads, settings) follows " · " (durability: the shade)
    c["label"] += [f" · {x}" if x else "" for x in _settings(a, c, skip=("durability",))]
    return _with_durability(a, c)


def why(a: CampaignAnalysis) -> pd.DataFrame:
    """Per throughput ratio against the baseline: the ratio and its interval, whether the two clusters differ only
    in their replication mode (``confounded_by``: what else could move it; ``design``: what belongs to a system),
    and the mechanism beside the baseline's (``benchlib.analysis.mechanism``: fsyncs and bytes a commit, the time a
    commit waited for replication, CPU a transaction, what bound the host)."""
    from benchlib.analysis import mechanism

    c = ratios(a, "tps")
    e = mechanism.explain(a, c)
    keep = ["label", "threads", "ratio", "ci_low", "ci_high", "verdict", "confounded_by"]
    out = c[[k for k in keep if k in c]].copy()
    out["design"] = [", ".join(d.trait for d in u if d.kind == "design") if isinstance(u, tuple) else ""
                     for u in c.get("unlike", pd.Series([()] * len(c), index=c.index))]
    cols = ["fsyncs", "base_fsyncs", "commit_wait_ms", "lat_ms", "base_lat_ms", "lat_diff_ms", "cpu_ms",
            "base_cpu_ms", "paused", "limit", "base_limit"]
    return out.join(e[[x for x in cols if x in e]]) if not e.empty else out


def cluster_facts(a: CampaignAnalysis, column: str) -> dict[str, Any]:
    """One run fact per cluster (``rtt_ms``, ``lab_durability``, ``binlog``, ``system`` ...), from the runs
    table (``benchlib.store.RUN_FACTS``); clusters whose runs do not say are left out."""
    if column not in a.runs or "cluster" not in a.runs:
        return {}
    known = a.runs[["cluster", column]].dropna()
    return {c: v for c, v in known.drop_duplicates("cluster").itertuples(index=False)}


def cluster_rtts(a: CampaignAnalysis) -> dict[str, float]:
    """The largest round-trip time between each cluster's nodes' sites and the lab's own (0: one site)."""
    return {c: float(v) for c, v in cluster_facts(a, "rtt_ms").items()}


def _with_durability(a: CampaignAnalysis, df: pd.DataFrame) -> pd.DataFrame:
    """A campaign that did not sweep durability ran with the lab's: say which, so charts can group on it."""
    if "durability" not in df:
        lab = cluster_facts(a, "lab_durability")
        df["durability"] = df["cluster"].map(lambda c: lab.get(c) or "lab default") if "cluster" in df else \
            "lab default"
    return df


def configs(a: CampaignAnalysis) -> pd.DataFrame:
    """Per configuration, with the columns the threads charts use."""
    c = a.configs.copy()
    if c.empty:
        raise AnalysisError("no successful runs to summarise")
    return _with_durability(a, c)


def one_durability(c: pd.DataFrame) -> pd.DataFrame:
    """The configurations of one durability, for charts that cannot show both: durable when there."""
    if "durability" not in c or c.empty:
        return c
    keep = "durable" if (c.durability == "durable").any() else c.durability.iloc[0]
    return c[c.durability == keep]


def stability(a: CampaignAnalysis, run_ids: list[str] | None = None, *, per_config: int = 1,
              limit: int = 6) -> tuple[pd.DataFrame, dict, dict]:
    """Per-second intervals of chosen runs (default: the first ``per_config`` runs of up to ``limit``
    configurations, flagged runs first), with their trims and stability labels."""
    runs = measured(a).dropna(subset=["stability"])
    if run_ids is None:
        flagged = runs.assign(_flag=runs["class"].ne("FLAT") | runs["flags"].fillna("").ne(""))
        picked = (flagged.sort_values(["_flag", "run_id"], ascending=[False, True])
                  .groupby("config", sort=False).head(per_config).head(limit))
        run_ids = list(picked.run_id)
    iv = a.frames["intervals"]
    iv = iv[iv.run_id.isin(run_ids)]
    chosen = runs.set_index("run_id").loc[run_ids]
    return iv, chosen["trim_s"].astype(int).to_dict(), chosen["stability"].to_dict()


def stability_by_config(a: CampaignAnalysis, *, limit: int = 6, min_s: float = 0) -> dict[str, Any]:
    """Every run of up to ``limit`` configurations (flagged ones first), for a stability chart that averages the
    repetitions of each configuration second by second: intervals and host load with a readable ``config`` name,
    and per name the latest warm-up cut, the runs' verdicts counted ("FLAT ×2, WARMUP ×1") and the topology.
    With ``min_s``, only runs that long or longer, where the campaign has any (``load.stability_s``); ``long_only``
    says whether shorter ones were left out."""
    runs = measured(a).dropna(subset=["stability"])
    _, first, _ = stability(a, limit=limit)  # one run per configuration, flagged ones first: which configurations
    configs = set(runs.set_index("run_id").loc[list(first)].config)
    long, long_only = long_runs(a, min_s)
    if long_only:
        runs = long
        configs = (configs & set(long.config)) or set(list(dict.fromkeys(long.config))[:limit])
    chosen = runs[runs.config.isin(configs)]
    keys = [k for k in ["cluster", "threads", "durability", "fc_limit", "parallel_threads"] if k in chosen]
    name = {cfg: label(row, keys) for cfg, row in chosen.drop_duplicates("config").set_index("config").iterrows()}
    by_run = chosen.set_index("run_id").config.map(name)
    iv = a.frames["intervals"]
    iv = iv[iv.run_id.isin(by_run.index)]
    iv = iv.assign(config=iv.run_id.astype(str).map(by_run))
    host = host_load(a, list(by_run.index))
    if not host.empty:
        host = host.assign(config=host.run_id.astype(str).map(by_run))
    named = chosen.assign(config=chosen.config.map(name))
    verdicts = named.groupby("config").stability.agg(
        lambda v: ", ".join(f"{k} ×{n}" if n > 1 else str(k) for k, n in v.value_counts().items()))
    return {"intervals": iv, "host": host, "trim": named.groupby("config").trim_s.max().astype(int).to_dict(),
            "labels": verdicts.to_dict(), "topology": named.groupby("config").topology.first().to_dict(),
            "runs": named.groupby("config").size().to_dict(), "long_only": long_only}


def long_runs(a: CampaignAnalysis, min_s: float) -> tuple[pd.DataFrame, bool]:
    """The measured runs with a stability verdict that lasted ``min_s`` or more, where the campaign has any and
    shorter ones too (``load.stability_s``), and whether shorter ones were left out; else every such run."""
    runs = measured(a).dropna(subset=["stability"])
    long = runs[runs.seconds >= min_s] if min_s and "seconds" in runs else runs
    return (long, True) if 0 < len(long) < len(runs) else (runs, False)


def host_load(a: CampaignAnalysis, run_ids: list[str]) -> pd.DataFrame:
    """The busiest host's CPU busy and disk writes over the load of each of ``run_ids`` (empty when the
    campaign was recorded without host metrics): the rows under the stability chart."""
    from benchlib.analysis.resources import host_over_time

    return host_over_time(a, run_ids)


def lag_of_run(a: CampaignAnalysis, run_id: str) -> tuple[pd.DataFrame, float | None, float | None]:
    """One run's heartbeat lag per node, seconds counted from the load start; the load's end and catch-up."""
    run = a.runs.set_index("run_id").loc[run_id]
    lag = a.frames["lag"]
    lag = lag[lag.run_id == run_id].dropna(subset=["lag_ms"])
    start = float(run.load_start_s)
    out = lag.assign(t_s=lag.t_commit_s - start)
    end = float(run.load_end_s - start) if pd.notna(run.load_end_s) else None
    return out, end, (float(run.catch_up_s) if pd.notna(run.catch_up_s) else None)


def backlog_of_run(a: CampaignAnalysis, run_id: str) -> tuple[pd.DataFrame, float | None, float | None]:
    """One run's replica backlog in transactions per node (async: GTID sequence behind the primary;
    Galera: seqno behind the most advanced node), seconds from the load start; the load's end and
    catch-up."""
    run = a.runs.set_index("run_id").loc[run_id]
    cl = a.frames["cluster"]
    cl = cl[(cl.run_id == run_id) & cl.metric.isin(["trx_behind", "seqno_behind", "gr_backlog"])]
    if cl.empty:
        raise AnalysisError(f"no transactions-behind samples in run {run_id}")
    start = float(run.load_start_s)
    out = cl.assign(t_s=cl.t_s - start, trx_behind=cl.value)[["t_s", "node", "trx_behind"]]
    end = float(run.load_end_s - start) if pd.notna(run.load_end_s) else None
    return out, end, (float(run.catch_up_s) if pd.notna(run.catch_up_s) else None)


def worst_lag_run(a: CampaignAnalysis) -> str:
    runs = measured(a)
    if "lag_p95_ms" not in runs or runs.lag_p95_ms.isna().all():
        raise AnalysisError("no replica lag was sampled in this campaign")
    return str(runs.loc[runs.lag_p95_ms.idxmax(), "run_id"])


def servers(a: CampaignAnalysis) -> str:
    """Which server each cluster ran, in one line for a chart's subtitle: "async, galera3: MariaDB 10.11.19 ·
    myasync, gr3: MySQL 9.7.4" (empty when the runs do not say)."""
    if not {"cluster", "system", "server_version"} <= set(a.runs.columns):
        return ""
    seen: dict[str, list[str]] = {}
    for cluster, system, version in a.runs[["cluster", "system", "server_version"]].drop_duplicates().itertuples(
            index=False):
        if not isinstance(system, str):
            continue
        number = str(version).split("-")[0] if isinstance(version, str) else ""
        name = f"{catalogue.server_name(system)} {number}".strip()
        if cluster not in seen.setdefault(name, []):
            seen[name].append(str(cluster))
    return " · ".join(f"{', '.join(cs)}: {name}" for name, cs in seen.items())


def context(a: CampaignAnalysis) -> str:
    """What a chart pasted alone must say about its campaign, in one line: workloads, client threads,
    durability, runs per configuration and the host's cores (when host metrics were recorded), e.g.
    "oltp_read_write · 1-32 client threads · durable and relaxed · 3 runs per configuration · 2-core host"."""
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    parts = []
    if "workload" in runs and runs.workload.notna().any():
        parts.append(", ".join(sorted(map(str, runs.workload.dropna().unique()))))
    if "threads" in runs and runs.threads.notna().any():
        lo, hi = int(runs.threads.min()), int(runs.threads.max())
        parts.append(f"{lo} client thread{'s' if hi != 1 else ''}" if lo == hi else f"{lo}-{hi} client threads")
    if "durability" in a.configs and a.configs.durability.notna().any():
        parts.append(" and ".join(sorted(map(str, a.configs.durability.dropna().unique()))))
    if "runs" in a.configs and len(a.configs):
        lo, hi = int(a.configs.runs.min()), int(a.configs.runs.max())
        parts.append(f"{lo} run{'s' if lo != 1 else ''} per configuration" if lo == hi
                     else f"{lo}-{hi} runs per configuration")
    where = []
    if "placement" in runs and runs.placement.notna().any():
        where.append(" and ".join(f"{p} lab" for p in sorted(map(str, runs.placement.dropna().unique()))))
    cores = None
    cl = a.frames.get("cluster")
    if cl is not None and len(cl):
        hosts = cl[cl.node.astype(str).str.startswith("host:") & cl.metric.astype(str).str.match(r"cpu\.cpu\d+\.idle_s$")]
        if len(hosts):
            cores = int(hosts.groupby("node", observed=True).metric.nunique().max())
    if cores is None:  # the machine the campaign ran on (campaign.json), when it recorded no host metrics
        cores = a.record.cores
    if cores:
        where.append(f"{int(cores)}-core host")
    if where:
        parts.append(", ".join(where))
    return " · ".join(parts)


def catch_up(a: CampaignAnalysis) -> pd.DataFrame:
    """Catch-up time per configuration (mean over its runs, min-max as the interval, ``runs``), labelled with the
    cluster and what varies between configurations (the workload first when there are several)."""
    runs = measured(a)
    runs = runs.dropna(subset=["catch_up_s"]) if "catch_up_s" in runs else runs.iloc[:0]
    if runs.empty:
        raise AnalysisError("no run measured a catch-up (fault runs heal instead)")
    keys = [k for k in config_columns(a.param_columns) if k in runs and runs[k].notna().any()]
    g = (runs.groupby(keys, dropna=False).catch_up_s.agg(["mean", "min", "max", "count"]).reset_index()
         .rename(columns={"mean": "catch_up_s", "min": "catch_up_min", "max": "catch_up_max", "count": "runs"}))
    g["label"] = config_labels(a, g)
    return g


def config_labels(a: CampaignAnalysis, df: pd.DataFrame) -> list[str]:
    """A label per configuration row of ``df`` (x of the bar charts): the cluster, the workload when there are
    several, then every other setting that differs between the rows ("galera3 oltp_update_index
    durability=relaxed fc_limit=16"): two configurations never share a label, so never a bar."""
    return [" ".join(filter(None, [str(cluster), rest])) for cluster, rest in zip(df["cluster"], _settings(a, df))]


def _varying(a: CampaignAnalysis, df: pd.DataFrame, skip: tuple[str, ...] = ()) -> list[str]:
    """The campaign's configuration columns (not the cluster, its topology nor ``skip``) that differ between
    the rows of ``df``."""
    # what a read consistency decides (the load's gr_consistency under GR's AFTER levels) is said once, by its name
    decided = a.decided
    return [k for k in config_columns(a.param_columns)
            if k in df and k not in ("cluster", "topology", *decided, *skip) and df[k].nunique(dropna=True) > 1]


def _settings(a: CampaignAnalysis, df: pd.DataFrame, skip: tuple[str, ...] = ()) -> list[str]:
    """Per row of ``df``: the workload when there are several, then ``config_label`` of the other settings that
    differ ("oltp_update_index durability=relaxed fc_limit=16"; '' when nothing differs)."""
    keys = _varying(a, df, ("workload", *skip))
    workloads = "workload" in df and df.workload.nunique() > 1
    return [" ".join(filter(None, [str(r["workload"]) if workloads else "", label(r, keys)])) for _, r in df.iterrows()]


def flow_control(a: CampaignAnalysis) -> pd.DataFrame:
    """Configurations with a flow-control limit, one line per cluster and ``variant``: what else the campaign swept
    ("relaxed", "32 threads", ...; '' when nothing), so that each line varies the limit alone (workloads apart)."""
    c = configs(a)
    if "fc_limit" not in c or c.fc_limit.isna().all():
        raise AnalysisError("no flow-control sweep in this campaign", hint="sweep fc_limit in the campaign's matrix")
    c = c.dropna(subset=["fc_limit"]).sort_values("fc_limit")
    c["variant"] = _variants(a, c, "fc_limit")
    return c


def _variants(a: CampaignAnalysis, c: pd.DataFrame, swept: str, apart: tuple[str, ...] = ("workload",)) -> list[str]:
    """Per row of ``c``, in words, what else than ``swept`` (and the cluster, and ``apart``: what the chart draws
    in panels of their own) the campaign varied ("relaxed", "32 threads", "fc_limit 16"; '' when nothing): a line
    per cluster and variant varies ``swept`` alone."""
    keys = _varying(a, c, (swept, *apart))

    def words(r) -> str:
        return " ".join(str(r[k]) if k in ("durability", "workload") else f"{r[k]:g} threads" if k == "threads" else
                        f"{k} {r[k]:g}" if isinstance(r[k], float) else f"{k} {r[k]}" for k in keys if pd.notna(r[k]))

    return [words(r) for _, r in c.iterrows()]


def replica_cpu(a: CampaignAnalysis) -> pd.DataFrame:
    """Mean CPU% of each run's replicas (every node but the write node) over the load window."""
    cl = a.frames["cluster"]
    cl = cl[(cl.metric == "cpu_s") & ~cl.reset]
    rows = []
    for run in measured(a).itertuples(index=False):
        nodes = str(run.nodes).split(",")[1:]
        d = cl[(cl.run_id == run.run_id) & cl.node.isin(nodes)]
        d = d[(d.t_s >= run.load_start_s) & (d.t_s <= run.load_end_s)]
        per_node = []
        for _, g in d.groupby("node"):
            if len(g) >= 2 and g.t_s.iloc[-1] > g.t_s.iloc[0]:
                per_node.append(100 * (g.value.iloc[-1] - g.value.iloc[0]) / (g.t_s.iloc[-1] - g.t_s.iloc[0]))
        rows.append({"run_id": run.run_id, "replica_cpu_pct": float(np.mean(per_node)) if per_node else np.nan})
    return pd.DataFrame(rows, columns=["run_id", "replica_cpu_pct"])


def parallel_apply(a: CampaignAnalysis) -> pd.DataFrame:
    runs = measured(a)
    if "parallel_threads" not in runs or runs.parallel_threads.isna().all():
        raise AnalysisError("no parallel-apply sweep in this campaign",
                            hint="sweep parallel_threads in the campaign's matrix")
    runs = runs.dropna(subset=["parallel_threads"]).merge(replica_cpu(a), on="run_id", how="left")
    keys = [k for k in config_columns(a.param_columns) if k in runs and runs[k].notna().any()]
    out = (runs.groupby(keys, dropna=False).agg(tps_mean=("tps_mean", "mean"), lag_p95_ms=("lag_p95_ms", "mean"),
                                  replica_cpu_pct=("replica_cpu_pct", "mean"), runs=("run_id", "count"))
           .reset_index().sort_values("parallel_threads"))
    for col in ("tps_mean", "replica_cpu_pct"):  # 95% t intervals over the runs of each setting
        half = runs.groupby(keys, dropna=False)[col].agg(t_half).rename(f"{col}_half").reset_index()
        out = out.merge(half, on=keys, how="left")
        out[f"{col}_low"], out[f"{col}_high"] = out[col] - out[f"{col}_half"], out[col] + out[f"{col}_half"]
        out = out.drop(columns=f"{col}_half")
    out["variant"] = _variants(a, out, "parallel_threads", apart=())  # one panel: workloads are lines too
    return out


def t_half(values: pd.Series) -> float:
    """The half-width of the 95% t interval of the mean of ``values`` (runs as the unit); NaN under two."""
    from scipy import stats

    v = values.dropna().to_numpy()
    return float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))) if len(v) >= 2 else np.nan


def wan(a: CampaignAnalysis) -> pd.DataFrame:
    """Per configuration, the cluster's largest round-trip time to a remote site (0: all local)."""
    rtt = cluster_rtts(a)
    c = configs(a)
    c["rtt_ms"] = c["cluster"].map(lambda x: rtt.get(x, 0.0))
    c["label"] = c["cluster"] + " (" + c["topology"] + ")"
    return c.sort_values(["threads", "rtt_ms"])


def costs(a: CampaignAnalysis) -> pd.DataFrame:
    """Cost per transaction by configuration, role and cost (benchlib.analysis.resources), with a label per
    configuration (x of cost_bars)."""
    from benchlib.analysis.resources import cost_by_config

    c = cost_by_config(a)
    if c.empty:
        raise AnalysisError("no process or host metrics in this campaign",
                            hint="campaigns recorded before benchlib sampled them have none: rerun it")
    runs = measured(a).drop_duplicates("config")
    c["label"] = c.config.map(dict(zip(runs.config, config_labels(a, runs))))
    c = c.dropna(subset=["label"])  # the sustained searches' runs at a fixed rate: not a configuration's cost
    return c
