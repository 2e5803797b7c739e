"""Noise at its source: run-to-run CoV of throughput with and without CPU placement and paused idle clusters.

One demo-like lab (async 1+2 and Galera 3, MariaDB) and one configuration per cluster (oltp_read_write, 8 threads,
``--seconds`` each). Variants, interleaved in shuffled order within each of ``--rounds`` rounds:

- ``none``: as campaigns run today (every process on every CPU);
- ``pin``: the client side (sysbench and benchlib's sampler) on CPU 0, every server of the lab on the other CPUs;
- ``pause``: the lab's other clusters stopped (SIGSTOP) for the run, resumed (SIGCONT) after it;
- ``pin+pause``: both.

Per variant: mean TPS per configuration, the CoV of run means across rounds, and the residual SD of the two-way
(round + configuration) model on log run means (what the campaign's ratios are computed from). Lower is better.

    python bench/placement_noise.py [--rounds 6] [--seconds 10] [--variants none,pin,pause]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib.campaign.runner import run_campaign  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.labs import load_lab_spec  # noqa: E402

ALL = set(range(os.cpu_count() or 1))


def _affinity(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` on ``cpus`` (new threads inherit it from their creator)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (ProcessLookupError, OSError):
            pass


def _servers(lab: LocalLab) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, node in lab.layout.nodes.items():
        pid = lab.pid(node)
        if pid:
            out.setdefault(node.cluster, []).append(pid)
    return out


def _resume(lab: LocalLab) -> None:
    for pids in _servers(lab).values():
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
            _affinity(pid, ALL)
    _affinity(os.getpid(), ALL)


def _hook(variant: str):
    def before_run(lab: LocalLab, run) -> None:
        _resume(lab)
        if "pin" in variant:
            client, servers = {0}, ALL - {0}
            _affinity(os.getpid(), client)  # sysbench (a child started later) and the sampler threads inherit it
            for pids in _servers(lab).values():
                for pid in pids:
                    _affinity(pid, servers)
        if "pause" in variant:
            for cluster, pids in _servers(lab).items():
                if cluster != run.cluster:
                    for pid in pids:
                        os.kill(pid, signal.SIGSTOP)
    return before_run


def two_way_sd(df: pd.DataFrame) -> tuple[float, int]:
    """Residual SD of log run means after round and configuration effects (balanced rounds only)."""
    wide = np.log(df.pivot_table(index="round", columns="cluster", values="tps_mean")).dropna()
    r, c = wide.shape
    if r < 2 or c < 2:
        return float("nan"), 0
    resid = wide - wide.mean(axis=1).to_numpy()[:, None] - wide.mean(axis=0).to_numpy()[None, :] + wide.values.mean()
    dof = (r - 1) * (c - 1)
    return float(np.sqrt((resid.to_numpy() ** 2).sum() / dof)), dof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--variants", default="none,pin,pause")
    args = ap.parse_args()
    variants = args.variants.split(",")
    if len(ALL) < 2 and any("pin" in v for v in variants):
        sys.exit("pin needs at least 2 CPUs")
    work = Path(tempfile.mkdtemp(prefix="noise-"))
    (work / "lab.toml").write_text('name = "benchnoise"\n[defaults]\ndurability = "durable"\nbuffer_pool = "128M"\n'
                                   '[clusters.async]\ntopology = "async"\nreplicas = 2\n'
                                   '[clusters.galera]\ntopology = "galera"\nnodes = 3\n')
    lab = LocalLab.up(load_lab_spec(work / "lab.toml"))
    rows = []
    rng = random.Random(5)
    try:
        for rnd in range(1, args.rounds + 1):
            order = list(variants)
            rng.shuffle(order)
            for variant in order:
                name = f"{variant.replace('+', '-')}-r{rnd}"
                (work / f"{name}.toml").write_text(
                    f'name = "{name}"\nlab = "lab.toml"\nseed = {rnd}\nrepetitions = 1\n'
                    f'[load]\nworkloads = ["oltp_read_write"]\nthreads = [8]\ntime_s = {args.seconds}\ntables = 4\n'
                    'table_size = 10000\n[matrix]\nclusters = ["async", "galera"]\n')
                try:
                    result = run_campaign(work / f"{name}.toml", runs_dir=work / "runs", progress="none",
                                          before_run=_hook(variant))
                finally:
                    _resume(lab)
                a = analyze(result.path)
                for r in a.runs.itertuples(index=False):
                    rows.append({"variant": variant, "round": rnd, "cluster": r.cluster, "status": r.status,
                                 "tps_mean": r.tps_mean})
                print(f"round {rnd} {variant:>10}: " + ", ".join(
                    f"{r.cluster} {r.tps_mean:.0f}" for r in a.runs.itertuples(index=False)), flush=True)
    finally:
        _resume(lab)
        lab.close(down=True)
    df = pd.DataFrame(rows)
    df.to_csv(work / "noise.csv", index=False)
    ok = df[df.status == "ok"]
    print(f"\n{args.rounds} rounds x {len(variants)} variants, {args.seconds} s runs, 8 threads; data {work}/noise.csv")
    print(f"{'variant':>10} {'async tps':>10} {'CoV':>6} {'galera tps':>10} {'CoV':>6} {'two-way SD':>10} {'df':>3}")
    for variant in variants:
        v = ok[ok.variant == variant]
        g = v.groupby("cluster").tps_mean
        mean, cov = g.mean(), g.std(ddof=1) / g.mean()
        sd, dof = two_way_sd(v)
        print(f"{variant:>10} {mean.get('async', np.nan):>10.0f} {cov.get('async', np.nan):>6.1%} "
              f"{mean.get('galera', np.nan):>10.0f} {cov.get('galera', np.nan):>6.1%} {sd:>10.1%} {dof:>3}")


if __name__ == "__main__":
    main()
