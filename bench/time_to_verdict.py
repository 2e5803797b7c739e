"""Time to a verdict: the 95% half-width of galera-3 vs async throughput against campaign minutes, old method
(Fieller's interval on the runs of the two configurations) vs new (the two-way round + configuration model on
log run means, benchlib.analysis.blocks), both on the same runs.

Runs a campaign on the demo lab (async 1+2, semi-sync 1+1, Galera 3) at 8 threads of oltp_read_write, ``--rounds``
repetition rounds of ``--seconds`` each (semi-sync is there as the third configuration a real campaign has: the
new method pools its noise), or reads a finished campaign (``--campaign``). After each round k, both methods are
computed on rounds 1..k; campaign minutes are from the first run's start to the end of round k. Prints one line
per round and the minutes until each half-width is within +-5% (and stays there).

    python bench/time_to_verdict.py [--rounds 10] [--seconds 10] [--durability durable]
    python bench/time_to_verdict.py --campaign runs/ttv/verdict [--cluster galera] [--threads 8]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import pandas as pd  # noqa: E402

from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib.store import load_campaign  # noqa: E402

GOAL = 0.05


def _t(utc: str) -> float:
    return dt.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


def run(rounds: int, seconds: int, durability: str) -> Path:
    from benchlib.campaign.runner import run_campaign

    work = Path(tempfile.mkdtemp(prefix="ttv-"))
    (work / "lab.toml").write_text((ROOT / "examples" / "labs" / "demo.toml").read_text().replace(
        'name = "demo"', 'name = "benchttv"'))
    (work / "c.toml").write_text(
        f'name = "verdict"\nlab = "lab.toml"\nseed = 7\nrepetitions = {rounds}\n'
        f'[load]\nworkloads = ["oltp_read_write"]\nthreads = [8]\ntime_s = {seconds}\ntables = 4\n'
        f'table_size = 10000\n[matrix]\nclusters = ["async", "semisync", "galera"]\ndurability = ["{durability}"]\n')
    print(f"running {rounds} rounds x 3 configurations x {seconds} s in {work} ...", flush=True)
    return run_campaign(work / "c.toml", runs_dir=work / "runs", progress="none").path


def half_width(lo: float, hi: float, ratio: float) -> float:
    return (hi - lo) / 2 / ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", type=Path, help="a finished campaign folder instead of running one")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--durability", default="durable")
    ap.add_argument("--cluster", default="galera")
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    folder = args.campaign or run(args.rounds, args.seconds, args.durability)
    frames = load_campaign(folder)
    runs = frames["runs"]
    ok = runs[runs.status == "ok"]
    t0 = min(_t(s) for s in runs.started_utc)
    print(f"campaign {folder}: {len(runs)} runs, {len(ok)} ok; {args.cluster} vs async at {args.threads} threads\n")
    print(f"{'rounds':>6} {'minutes':>7} {'ratio':>6} {'new 95% hw':>10} {'new verdict':>13} {'old 95% hw':>10} "
          f"{'old verdict':>13} {'sigma':>6} {'df':>3}")
    rows = []
    for k in range(2, int(ok.repetition.max()) + 1):
        ids = set(runs[runs.repetition <= k].run_id)
        sub = {name: f[f.run_id.isin(ids)] for name, f in frames.items()}
        a = analyze(sub, margin=0.02)
        c = a.comparisons
        c = c[(c.metric == "tps") & (c.cluster == args.cluster) & (c.threads == args.threads)]
        if c.empty:
            continue
        r = c.iloc[0]
        minutes = (max(_t(s) for s in runs[runs.run_id.isin(ids)].ended_utc) - t0) / 60
        new = half_width(r.ci_low, r.ci_high, r.ratio) if r.method == "blocks" else float("nan")
        old = half_width(r.fieller_low, r.fieller_high, r.fieller_ratio) if pd.notna(r.fieller_low) else float("inf")
        rows.append({"rounds": k, "minutes": minutes, "new": new, "old": old})
        print(f"{k:>6} {minutes:>7.1f} {r.ratio:>6.3f} {new:>10.1%} {r.verdict:>13} {old:>10.1%} "
              f"{r.fieller_verdict:>13} {r.sigma_log:>6.1%} {int(r.df) if pd.notna(r.df) else 0:>3}")
    table = pd.DataFrame(rows)
    print()
    for method in ("new", "old"):
        within = table[method] <= GOAL
        # the first round from which the half-width stays within the goal
        settled = [i for i in range(len(table)) if within.iloc[i:].all()]
        when = (f"{table.minutes.iloc[settled[0]]:.1f} campaign minutes ({int(table.rounds.iloc[settled[0]])} rounds)"
                if settled else f"not within {len(table) + 1} rounds ({table.minutes.iloc[-1]:.1f} minutes)")
        print(f"{method} method: 95% half-width within +-{GOAL:.0%} after {when}")
    if len(table):
        last = table.iloc[-1]
        print(f"after {int(last.rounds)} rounds: new/old half-width = {last.new / last.old:.2f}")


if __name__ == "__main__":
    main()
