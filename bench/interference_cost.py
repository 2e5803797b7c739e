"""What interference costs a run: throughput against the share of the host's CPU taken by another job.

The demo lab (async 1+2, semi-sync 1+1, Galera 3), async and Galera at 2 and 16 client threads, ``--rounds``
interleaved rounds of ``--seconds`` runs. Before each run a CPU hog outside benchlib (tests/hog.py: one process busy
``duty`` of every 100 ms) is started with a duty drawn from ``--duties`` (balanced over configurations and rounds,
seeded), and stopped after it. Prints, per run, the CPU the lab lost to others (``lost_cpu``: steal plus the foreign
CPU benchlib measured) and its throughput against its configuration's hog-free mean; then the slope of log
throughput on ``lost_cpu`` from the two-way model (round + configuration + covariate), overall and per thread
count, with its 95% interval: the loss per share of the CPU taken, which the default ``redo_above`` (10%) is
justified by.

    python bench/interference_cost.py [--rounds 8] [--seconds 6] [--duties 0,0.2,0.5,1]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from benchlib.analysis.blocks import fit  # noqa: E402
from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib.campaign.runner import run_campaign  # noqa: E402
from tests.hog import CpuHog  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--duties", default="0,0.2,0.5,1")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    duties = [float(d) for d in args.duties.split(",")]
    work = Path(tempfile.mkdtemp(prefix="blintf-"))
    lab = (ROOT / "examples/labs/demo.toml").read_text().replace('name = "demo"', 'name = "intf"')
    (work / "lab.toml").write_text(lab)
    (work / "c.toml").write_text(
        f'name = "intf"\nlab = "lab.toml"\nseed = {args.seed}\nrepetitions = {args.rounds}\n'
        '[interference]\nredo_above = 1\n'  # measure every run as it is: nothing redone
        f'[load]\nworkloads = ["oltp_read_write"]\nthreads = [2, 16]\ntime_s = {args.seconds}\n'
        'tables = 4\ntable_size = 10000\n[matrix]\nclusters = ["async", "galera"]\ndurability = ["durable"]\n')
    rng = random.Random(args.seed)
    offsets = [rng.randrange(len(duties)) for _ in range(args.rounds)]
    configs: dict[str, int] = {}
    schedule: dict[int, float] = {}
    hog: list[CpuHog] = []

    def before(lab, run) -> None:
        for h in hog:
            h.stop()
        hog.clear()
        if run.index not in schedule:  # a Latin square: each configuration meets every duty once per len(duties) rounds
            k = configs.setdefault(run.config_key, len(configs))
            schedule[run.index] = duties[(run.repetition - 1 + offsets[(run.repetition - 1) // len(duties)] + k)
                                         % len(duties)]
        duty = schedule[run.index]
        if duty > 0:
            hog.append(CpuHog(1, duty, seconds=args.seconds + 60).start())

    try:
        result = run_campaign(work / "c.toml", runs_dir=work / "runs", progress="text", before_run=before)
    finally:
        for h in hog:
            h.stop()
        from benchlib.lab.lab import LocalLab

        try:
            LocalLab.open("intf").close(down=True)
        except Exception:  # noqa: BLE001 - the campaign took its own lab down already
            pass
    a = analyze(result.path)
    runs = a.runs[a.runs.status == "ok"].copy()
    runs["duty"] = [schedule.get(int(r.split("-")[0]), np.nan) for r in runs.run_id]
    free = runs[runs.duty == 0].groupby("config").tps_mean.mean()
    runs["rel"] = runs.tps_mean / runs.config.map(free)
    print(f"{'run':48} {'threads':>7} {'duty':>5} {'lost_cpu':>8} {'rel tps':>7}")
    for r in runs.sort_values(["threads", "lost_cpu"]).itertuples():
        print(f"{r.run_id:48} {r.threads:7d} {r.duty:5.1f} {r.lost_cpu:8.1%} {r.rel:7.3f}")
    for label, part in [("all", runs), *[(f"{t} threads", runs[runs.threads == t]) for t in sorted(runs.threads.unique())]]:
        f = fit(part.config, part.repetition, part.tps_mean, {"lost_cpu": part.lost_cpu.to_numpy(float)})
        if f is None:
            continue
        b, se = f.slopes["lost_cpu"]
        t = stats.t.ppf(0.975, f.df)
        print(f"{label}: log throughput per share of CPU lost {b:.2f} [{b - t * se:.2f}, {b + t * se:.2f}] "
              f"({f.df} df); at 10% lost: {np.expm1(0.1 * b):+.1%} [{np.expm1(0.1 * (b - t * se)):+.1%}, "
              f"{np.expm1(0.1 * (b + t * se)):+.1%}]; residual SD {f.sigma:.1%}")


if __name__ == "__main__":
    main()
