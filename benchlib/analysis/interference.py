"""Interference: what took the host from the lab during a run, per run and per second.

From the host rows of the CLUSTER frame (``benchlib.sampling.host``, ``benchlib.sampling.foreign``), over each run's
load window:

- ``steal``: the share of the host's CPU time the hypervisor gave to other guests (``cpu.all.steal_s``; top's %st);
- ``foreign``: the share taken by processes outside the lab and outside benchlib (``foreign.cpu_s``; NaN for runs
  recorded before it was sampled);
- ``lost_cpu``: the two together, the CPU the lab lost to others: the covariate of the ratios
  (``benchlib.analysis.blocks``) and what a disturbed run is judged on (``DISTURBED``);
- ``psi_cpu``, ``psi_io``: the share of the time some task waited for a CPU or for I/O (pressure stall information);
- ``freq_mhz``: the CPUs' mean frequency where the host exposes it;
- ``top_foreign``, ``top_foreign_share``: the foreign command that used the most CPU, and its share.

Only ``lost_cpu`` qualifies as a covariate: no configuration can move the hypervisor's steal or another job's CPU.
Host busy, pressure and fsync latency are shown, never adjusted for: the lab's own load drives them, and it differs
by configuration, so adjusting for them would absorb part of the effect measured.

A run is *disturbed* when it lost more than ``DISTURBED`` of the host's CPU. The default, 10%, is measured
(bench/interference_cost.py: the demo lab, async and Galera at 2 and 16 client threads, 8 rounds with a CPU hog of
0-100% duty in a Latin square): a run's throughput fell 7.3% [5.3, 9.2] per 10% of the CPU lost (5% at 2 threads,
12% at 16, where the lab is CPU-bound), against 2-5% run-to-run noise once round effects are removed. A run that
lost 10% is off by about twice that noise, more than a few rounds average away; below that, the ratios'
adjustment for ``lost_cpu`` takes it into account.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["COVARIATES", "DISTURBED", "disturbance", "disturbed_runs", "evidence", "in_words", "of_run", "per_run",
           "noise_words", "summary"]

DISTURBED = 0.10  # share of the host's CPU lost to others above which a run is disturbed (redone)
COVARIATES = ("lost_cpu",)  # what the configuration cannot move: the ratios may be adjusted for it
COLUMNS = ["run_id", "host", "steal", "foreign", "lost_cpu", "psi_cpu", "psi_io", "freq_mhz", "top_foreign",
           "top_foreign_share"]
_CPU = re.compile(r"cpu\.all\.(user|nice|system|idle|iowait|irq|softirq|steal)_s")
_COMM = re.compile(r"foreign\.comm\.(.+)\.cpu_s")


def per_run(rates: pd.DataFrame, cluster: pd.DataFrame | None = None, runs: pd.DataFrame | None = None
            ) -> pd.DataFrame:
    """One row per run: the interference figures of the module over its load window, on the host that lost the most
    CPU (a remote lab samples several). ``rates``: ``resources.window_rates``; ``cluster`` and ``runs`` (optional):
    for the CPU frequency, a gauge."""
    if rates.empty:
        return pd.DataFrame(columns=COLUMNS)
    h = rates[rates.node.astype(str).str.startswith("host:")]
    if h.empty:
        return pd.DataFrame(columns=COLUMNS)
    metric = h.metric.astype(str)
    key = ["run_id", "node"]
    total = h[metric.str.fullmatch(_CPU.pattern)].groupby(key).rate.sum()
    total = total[total > 0]
    if total.empty:
        return pd.DataFrame(columns=COLUMNS)

    def share(name: str, scale: float = 1.0, of_total: bool = True) -> pd.Series:
        s = h[metric == name].set_index(key).rate.reindex(total.index)
        return s / total if of_total else s * scale

    out = pd.DataFrame({"steal": share("cpu.all.steal_s").fillna(0.0), "foreign": share("foreign.cpu_s"),
                        "psi_cpu": share("psi.cpu.some_us", 1e-6, False), "psi_io": share("psi.io.some_us", 1e-6, False)})
    out["lost_cpu"] = out.steal + out.foreign.fillna(0.0)
    comm = h[metric.str.fullmatch(_COMM.pattern)]
    if not comm.empty:
        comm = comm.assign(name=comm.metric.astype(str).str.replace(_COMM, r"\1", regex=True))
        top = comm.sort_values("rate", ascending=False, kind="stable").drop_duplicates(key).set_index(key)
        out["top_foreign"] = top.name.reindex(out.index)
        # a command's counter is logged once it has used NAMED_S seconds: its first sample may fall inside the window,
        # and its rate over the samples it has can exceed the whole foreign rate; the part never exceeds the whole
        out["top_foreign_share"] = np.fmin(top.rate.reindex(out.index) / total, out.foreign)
    else:
        out["top_foreign"], out["top_foreign_share"] = None, np.nan
    out["freq_mhz"] = _freq(cluster, runs).reindex(out.index) if cluster is not None and runs is not None else np.nan
    out = out.reset_index().rename(columns={"node": "host"})
    out = out.sort_values("lost_cpu", ascending=False, kind="stable").drop_duplicates("run_id")
    return out[COLUMNS].reset_index(drop=True)


def _freq(cluster: pd.DataFrame, runs: pd.DataFrame) -> pd.Series:
    """Mean ``cpu.freq_mhz`` over each run's load window, by (run, host)."""
    f = cluster[cluster.metric.astype(str) == "cpu.freq_mhz"] if not cluster.empty else cluster
    if f is None or f.empty or "load_start_s" not in runs:
        return pd.Series(dtype=float)
    w = runs.dropna(subset=["load_start_s"]).drop_duplicates("run_id")
    w = w.set_index(w.run_id.astype(str))
    rid = f.run_id.astype(str)
    t = f.t_s.to_numpy(float)
    inside = (t >= rid.map(w.load_start_s.astype(float)).to_numpy(float)) & \
             (t <= rid.map(w.load_end_s.astype(float)).to_numpy(float))
    f = f[inside]
    return f.groupby([f.run_id.astype(str).rename("run_id"), f.node.astype(str).rename("node")]).value.mean()


def of_run(cluster: pd.DataFrame, window: tuple[float, float]) -> dict:
    """One run's interference figures from its own CLUSTER frame (no ``run_id`` column) and load window: what the
    runner records in the manifest and judges a disturbed run on."""
    from benchlib.analysis.resources import window_rates

    cl = cluster.assign(run_id="run")
    runs = pd.DataFrame({"run_id": ["run"], "load_start_s": [window[0]], "load_end_s": [window[1]]})
    row = per_run(window_rates(cl, runs), cl, runs)
    if row.empty:
        return {}
    r = row.iloc[0]
    return {k: (None if isinstance(v, float) and np.isnan(v) else (float(v) if isinstance(v, (float, np.floating))
                                                                     else v))
            for k, v in r.drop("run_id").items()}


def disturbance(figures: dict, above: float = DISTURBED) -> str | None:
    """Why a run is disturbed (the evidence in words), or None: it lost more than ``above`` of the host's CPU."""
    lost = figures.get("lost_cpu")
    if lost is None or not lost > above:
        return None
    return f"{evidence(figures)}, over the {above:.0%} a run may lose"


def evidence(figures: dict | pd.Series) -> str:
    """What took the CPU, in words, the larger taker first: "the hypervisor took 15% of the CPU (steal)",
    "processes outside the lab took 40% of the CPU, mostly stress-ng (38%)", or both."""
    get = figures.get
    steal, foreign = get("steal") or 0.0, get("foreign")
    foreign = 0.0 if foreign is None or foreign != foreign else foreign
    top, share = get("top_foreign"), get("top_foreign_share")
    share = min(share, foreign) if share is not None and share == share else share  # a part of the whole, at most
    mostly = f", mostly {top} ({share:.0%})" if isinstance(top, str) and share == share and share else ""
    takers = sorted([(steal, "the hypervisor took {:.0%} of {} (steal)"),
                     (foreign, "processes outside the lab took {:.0%} of {}" + mostly)], key=lambda t: -t[0])
    parts = [words.format(share_, "it" if i else "the CPU")
             for i, (share_, words) in enumerate(t for t in takers if t[0] >= 0.005)]
    return " and ".join(parts) if parts else "no CPU was lost to others"


def summary(runs: pd.DataFrame) -> dict:
    """The campaign's interference over its measured runs: medians and maxima of steal, foreign CPU and their sum,
    and how many runs lost more than ``DISTURBED``."""
    if runs.empty or "lost_cpu" not in runs or runs.lost_cpu.isna().all():
        return {}
    lost = runs.lost_cpu.dropna()
    foreign = runs.foreign.dropna() if "foreign" in runs else pd.Series(dtype=float)
    return {"runs": int(len(lost)), "steal_median": float(runs.steal.median()), "steal_max": float(runs.steal.max()),
            "foreign_median": float(foreign.median()) if len(foreign) else None,
            "foreign_max": float(foreign.max()) if len(foreign) else None,
            "lost_median": float(lost.median()), "lost_max": float(lost.max()),
            "over": int((lost > DISTURBED).sum())}


def in_words(runs: pd.DataFrame, most: int = 3) -> list[str]:
    """The runs that lost the most CPU, each with how far its throughput sat from its configuration's mean:
    "the hypervisor took 15% of the CPU (steal) during run 0009, which ran 15% slower than its configuration's
    mean". Only runs that lost at least 3% of the CPU; at most ``most``."""
    need = {"lost_cpu", "tps_mean", "config", "run_id"}
    if runs.empty or not need <= set(runs.columns):
        return []
    ok = runs.dropna(subset=["lost_cpu", "tps_mean"])
    if ok.empty:
        return []
    rel = ok.tps_mean / ok.groupby("config").tps_mean.transform("mean")
    out = []
    for i in ok.sort_values("lost_cpu", ascending=False).index[:most]:
        r = ok.loc[i]
        if r.lost_cpu < 0.03:
            break
        d = rel[i] - 1
        how = (f"{abs(d):.0%} {'slower' if d < 0 else 'faster'} than its configuration's mean" if abs(d) >= 0.005
               else "at its configuration's mean")
        out.append(f"{evidence(r)} during run {r.run_id}, which ran {how}")
    return out


def disturbed_runs(campaign: str | Path) -> pd.DataFrame:
    """Every run of a campaign folder that was disturbed: the attempts a redo replaced (``attempts/<run_id>.N``) and
    any not redone yet, with the reason (the evidence) and the figures. Columns: run_id, attempt, redone, reason,
    and the figures of ``COLUMNS``."""
    from benchlib.store import has_run, list_runs, read_manifest

    root = Path(campaign)
    cols = ["run_id", "attempt", "redone", "reason", *[c for c in COLUMNS if c != "run_id"]]
    rows = []
    folders = [(p, True) for p in list_runs(root / "attempts")] if (root / "attempts").is_dir() else []
    folders += [(p, False) for p in list_runs(root)] if root.is_dir() else []
    for folder, retired in folders:
        if not has_run(folder):
            continue
        m = read_manifest(folder)
        if m.status != "disturbed":
            continue
        attempt = int(folder.name.rsplit(".", 1)[1]) if retired else None
        rows.append({"run_id": m.run_id, "attempt": attempt, "redone": retired,
                     "reason": str(m.reason or "").removeprefix("DISTURBED: "), **m.interference})
    return pd.DataFrame(rows, columns=cols)


STEAL_WARN = 0.02  # the hypervisor's steal above which the host is called noisy
BACKGROUND_WARN = 0.05  # other processes' CPU above which ...
FSYNC_SPREAD_WARN = 5.0  # fsync p99 / p50 above which ...


def noise_words(noise: dict) -> list[tuple[str, str, bool]]:
    """A host's measured noise (``benchlib.sampling.noise.measure``) in words: (what was measured, what a user can do
    about it, whether it is a problem), for steal, background CPU and fsync latency."""
    if not noise:
        return []
    out = []
    steal = float(noise.get("steal") or 0.0)
    out.append((f"steal {steal:.1%} of the CPU over {noise.get('seconds', 0):g} s",
                "the hypervisor gives this VM's CPU time to other guests: a dedicated-CPU (or bare-metal) instance "
                "avoids it; benchlib redoes a run that loses more than 10% and adjusts the ratios for the rest"
                if steal > STEAL_WARN else "none to speak of", steal > STEAL_WARN))
    bg = float(noise.get("background") or 0.0)
    top = noise.get("background_top") or {}
    named = ", ".join(f"{k} {v:.0%}" for k, v in list(top.items())[:3])
    out.append((f"background CPU {bg:.1%} (processes outside benchlib{': ' + named if named else ''})",
                "stop them while a campaign runs (a build, a browser, another benchmark); benchlib measures what "
                "they take from every run" if bg > BACKGROUND_WARN else "quiet", bg > BACKGROUND_WARN))
    if "fsync_p50_ms" in noise:
        p50, p99 = float(noise["fsync_p50_ms"]), float(noise["fsync_p99_ms"])
        spread = p99 / p50 if p50 > 0 else float("inf")
        bad = spread > FSYNC_SPREAD_WARN
        out.append((f"fsync latency p50 {p50:.2f} ms, p99 {p99:.2f} ms ({spread:.1f}x) in {noise.get('fsync_folder', '')}",
                    "durable commits wait for fsync: uneven latency makes durable configurations noisy; a local "
                    "SSD without other I/O, or compare with durability relaxed too" if bad else "even", bad))
    return out
