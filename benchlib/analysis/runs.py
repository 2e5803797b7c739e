"""A campaign's runs, one at a time: which run parameters name a configuration, each run's assessment (warm-up,
mean +- SE, stability class, latency, lag growth: statistics spec G) computed from its per-second frames, and the
read split's readers' side beside the writers'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from benchlib.analysis.lag import lag_growth
from benchlib.analysis.series import batch_means
from benchlib.analysis.stability import assess
from benchlib.axis import AXES, judged_on_throughput
from benchlib.errors import BenchlibError
from benchlib.store import RUN_FACTS

class AnalysisError(BenchlibError):
    """A campaign that cannot be analysed as asked (no runs, unknown baseline or metric)."""


#: run parameters that describe the load (a configuration and its baseline share them)
LOAD_KEYS = ["workload", "threads", "rate", "durability", "distribution", "data_vs_buffer_pool"]


#: run parameters that are not part of a configuration
NOT_CONFIG = {"repetition", "config", "search"}


def param_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in runs.columns if c not in RUN_FACTS and not c.startswith("summary_")]


def config_columns(params: list[str]) -> list[str]:
    return [c for c in params if c not in NOT_CONFIG]


def throughput_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The ok runs judged on throughput: no fault, no rate search (of a ``runs`` table: a campaign's, the run
    index's)."""
    return judged_on_throughput(table[table.status == "ok"])


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


def run_inputs(ok: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> list[RunInput]:
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


def assess_all(inputs: list[RunInput]) -> list[dict[str, Any]]:
    """Every run's assessment; spread over the machine's cores for large campaigns."""
    import os

    workers = os.cpu_count() or 1
    if len(inputs) < 64 or workers < 2:
        return [assess_run(r) for r in inputs]
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(assess_run, inputs, chunksize=max(1, len(inputs) // (4 * workers))))


def column_is(column: pd.Series, value) -> np.ndarray:
    return (column.isna() if pd.isna(value) else column == value).to_numpy()


#: what a ratio is taken of (run column, higher is better): the writers' throughput and latency, and with a
#: read-split load the readers' (every reading node's read-only transactions per second, their p95 latency)
READ_AND_WRITE_METRICS = (("tps_mean", True), ("lat_pctl_ms", False), ("read_tps", True), ("read_lat_ms", False))


def read_side(table: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
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


def config_label(row: pd.Series, keys: list[str]) -> str:
    """A short name for a configuration: its cluster, then the settings that are set (in an axis's own words where
    it has them: "REPEATABLE READ", "3 writer nodes")."""
    parts = [str(row["cluster"])] if "cluster" in keys else []
    named = {k: w for axis in AXES.values() for k, w in axis.setting_words(row).items()}
    for k in keys:
        if k in ("cluster", "topology", "workload") or pd.isna(row[k]):
            continue
        if k in named:  # "" says nothing
            parts += [named[k]] if named[k] else []
            continue
        parts.append(f"t{row[k]:g}" if k == "threads" else f"{k}={row[k]:g}" if isinstance(row[k], float) else f"{k}={row[k]}")
    return " ".join(parts)
