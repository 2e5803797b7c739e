"""Analysis speed on a synthetic campaign of 500 runs (about 10 million sample rows).

Builds the campaign once (cached in /tmp/benchlib-synthetic-500) through the run store, with
simulated series (AR(1) throughput around per-configuration means, a warm-up on some runs, an
oscillation on others, heartbeat lag for two replicas at 10 Hz, cluster samples at 4 Hz), then
prints, side by side in one process:

- load_campaign + every statistic (analyze): target <= 10 s
- the comparison notebook executed through papermill on it: target <= 30 s
- PNG export per chart with one kept browser: target <= 0.3 s (and one new browser per image, for scale)

    python bench/analysis_speed.py [--runs 500] [--seconds 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import json  # noqa: E402

import numpy as np  # noqa: E402

from benchlib.schema import CLUSTER, INTERVALS, LAG  # noqa: E402
from benchlib.store import RunWriter  # noqa: E402

CACHE = Path("/tmp/benchlib-synthetic-500")


def ar1(n, rho, sd, rng):
    e = rng.normal(0, sd * np.sqrt(1 - rho**2), n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def build(folder: Path, runs: int, seconds: int) -> None:
    rng = np.random.default_rng(500)
    topologies = {"async": 1000.0, "semisync": 900.0, "galera": 800.0}
    threads = [1, 4, 16, 64]
    configs = [(t, th, d) for t in topologies for th in threads for d in ("durable", "relaxed")]
    plan = []
    for i in range(runs):
        topo, th, dur = configs[i % len(configs)]
        plan.append({"run_id": f"{i + 1:04d}-{topo}-t{th}-{dur}", "cluster": topo, "topology": topo,
                     "workload": "oltp_read_write", "threads": th, "rate": None, "durability": dur,
                     "repetition": i // len(configs) + 1, "config": f"{topo}-{th}-{dur}"})
    folder.mkdir(parents=True)
    (folder / "campaign.json").write_text(json.dumps({"campaign": {"name": "synthetic"}, "lab": {}, "plan": plan}))
    t = np.arange(1, seconds + 1, dtype=float)
    for p in plan:
        mean = topologies[p["topology"]] * (1 + np.log2(p["threads"]) / 4) * (1.1 if p["durability"] == "relaxed" else 1)
        y = mean + ar1(seconds, 0.6, 0.03 * mean, rng)
        kind = rng.integers(0, 4)
        if kind == 1:
            y -= 0.4 * mean * np.exp(-t / 20)
        elif kind == 2:
            y += 0.08 * mean * np.sin(2 * np.pi * t / 30)
        y = np.maximum(y, 0)
        lat = 1000.0 * p["threads"] / np.maximum(y, 1) * 1.5
        iv = INTERVALS.frame({"t_s": t, "threads": [p["threads"]] * seconds, "tps": y, "qps": 20 * y,
                              "reads_per_s": 14 * y, "writes_per_s": 4 * y, "other_per_s": 2 * y,
                              "pctl": [95.0] * seconds, "lat_pctl_ms": lat, "err_per_s": np.zeros(seconds),
                              "reconn_per_s": np.zeros(seconds), "queue_length": [None] * seconds,
                              "concurrency": [None] * seconds})
        beats = np.arange(0, seconds, 0.1)
        lag_rows = {c: [] for c in LAG.columns}
        for node in ("r1", "r2"):
            lag = np.abs(2 + ar1(len(beats), 0.9, 1.5, rng))
            lag_rows["node"] += [node] * len(beats)
            lag_rows["seq"] += list(range(len(beats)))
            lag_rows["t_commit_s"] += list(beats)
            lag_rows["t_seen_s"] += list(beats + lag / 1000)
            lag_rows["t_prev_poll_s"] += list(beats + lag / 1000 - 0.02)
            lag_rows["lag_ms"] += list(lag)
            lag_rows["lag_low_ms"] += list(np.maximum(lag - 20, 0))
            lag_rows["apply_lag_ms"] += list(lag * 0.9)
        samples = np.arange(0, seconds, 0.25)
        n = len(samples)
        cl = CLUSTER.frame({"t_s": np.tile(samples, 2), "node": ["r1"] * n + ["r2"] * n,
                            "metric": ["trx_behind"] * (2 * n), "value": np.abs(ar1(2 * n, 0.9, 3, rng)),
                            "counter": [False] * (2 * n), "reset": [False] * (2 * n)})
        w = RunWriter(folder, p["run_id"], {k: v for k, v in p.items() if k != "run_id"})
        w.frame("intervals", iv)
        w.frame("lag", LAG.frame(lag_rows))
        w.frame("cluster", cl)
        w.finish(load_window_s=[0.0, float(seconds)], catch_up_s=0.05, in_sync_wait_s=0.1,
                 lab={"nodes": ["p", "r1", "r2"]}, summary={"tps": float(y.mean())})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--seconds", type=int, default=600)
    args = ap.parse_args()
    folder = CACHE / f"r{args.runs}-s{args.seconds}"
    if not folder.exists():
        t0 = time.monotonic()
        build(folder, args.runs, args.seconds)
        print(f"built {folder} in {time.monotonic() - t0:.0f} s")
    from benchlib.analysis.campaign import analyze
    from benchlib.store import load_campaign

    t0 = time.monotonic()
    frames = load_campaign(folder)
    t_load = time.monotonic() - t0
    rows = sum(len(df) for df in frames.values())
    a = analyze(frames)
    t_all = time.monotonic() - t0
    print(f"campaign: {args.runs} runs, {rows / 1e6:.1f} million rows")
    print(f"load_campaign {t_load:.1f} s + every statistic {t_all - t_load:.1f} s = {t_all:.1f} s (target <= 10 s)"
          f"; {len(a.configs)} configurations, {len(a.comparisons)} comparisons, {len(a.problems)} problems")

    from benchlib.notebooks import execute, output_path

    out = output_path(Path(tempfile.mkdtemp()), "compare")
    t0 = time.monotonic()
    execute("compare", out, {"campaign": str(folder)}, stream=False)
    print(f"compare notebook through papermill: {time.monotonic() - t0:.1f} s (target <= 30 s)")

    from benchlib.charts.export import Exporter, static_export_available
    from benchlib.charts.catalogue import figures

    if not static_export_available():
        print("PNG export: no Chromium/kaleido here (benchlib doctor)")
        return
    figs = figures(a)
    tmp = Path(tempfile.mkdtemp())
    with Exporter() as ex:
        for name, fig in figs.items():
            ex.write(fig, tmp / name, ("png",))
    kept = ex.seconds
    import plotly.io as pio

    t0 = time.monotonic()
    pio.write_image(next(iter(figs.values())), tmp / "fresh.png", scale=2)  # a new browser for one image
    fresh = time.monotonic() - t0
    print(f"PNG export, one kept browser: median {statistics.median(kept):.2f} s per chart (n={len(kept)}, "
          f"max {max(kept):.2f}; target <= 0.3 s); a new browser for one image: {fresh:.2f} s "
          f"(ratio {fresh / statistics.median(kept):.0f}x)")


if __name__ == "__main__":
    main()
