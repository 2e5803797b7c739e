"""Host metrics analysed at the speed of the data: load plus analysis of a 500-run campaign with real host samples.

Builds (once, cached in /tmp/benchlib-host-500) a campaign of ``--runs`` runs by copying the runs of the recorded
study 004 quick campaign (144 runs, each with /proc host samples, server counters and process rows: about 1,770
samples a run) under new run ids, then prints, best of ``--repeat``:

- load_campaign + analyze (every statistic, CPU-bound warnings and interference included): target <= 10 s;
- the host-metric part alone (per-run window rates, cost per transaction, CPU-bound, interference), this
  benchlib's vectorised pass against the per-group loop it replaced (kept here as ``loop_cpu_bound``, the old
  ``resources._rates``), and their ratio.

    python bench/host_analysis_speed.py [--runs 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import pandas as pd  # noqa: E402

from benchlib.analysis import interference, resources  # noqa: E402
from benchlib.packing import unpack_run  # noqa: E402
from benchlib.store import list_runs  # noqa: E402
from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib.store import load_campaign  # noqa: E402

SOURCE = ROOT / "data" / "campaigns" / "study004-quick"


def build(folder: Path, runs: int) -> None:
    if (folder / ".complete").exists() and len(list(folder.glob("[0-9]*"))) == runs:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    record = json.loads((SOURCE / "campaign.json").read_text())
    sources = list_runs(SOURCE)  # packed or folders
    plan = []
    for i in range(runs):
        src = sources[i % len(sources)]
        index, rest = src.name.split("-", 1)
        rep = i // len(sources) + 1
        run_id = f"{i + 1:04d}-{rest.rsplit('-r', 1)[0]}-r{rep}"
        dst = folder / run_id
        unpack_run(src, dst)
        m = json.loads((dst / "manifest.json").read_text())
        m["run_id"] = run_id
        m["params"]["repetition"] = rep
        (dst / "manifest.json").write_text(json.dumps(m))
        plan.append({"run_id": run_id, **m["params"]})
    record["plan"] = plan
    (folder / "campaign.json").write_text(json.dumps(record))
    (folder / ".complete").write_text("")


def loop_cpu_bound(a) -> int:
    """The per-group loop this issue replaced (resources._rates before): a Python loop over each run's
    (node, metric) groups, about 400 pandas item lookups a run."""
    cl = a.frames["cluster"]
    by_run = dict(tuple(cl.groupby("run_id", sort=False, observed=True)))
    n = 0
    for run in a.runs[a.runs.status == "ok"].itertuples(index=False):
        d = by_run.get(run.run_id)
        if d is None or pd.isna(run.load_start_s):
            continue
        d = d[(d.t_s >= run.load_start_s) & (d.t_s <= run.load_end_s)]
        for (node, metric), g in d[d.counter].groupby(["node", "metric"], sort=False, observed=True):
            if len(g) < 2 or g.reset.iloc[1:].any() or g.t_s.iloc[-1] <= g.t_s.iloc[0]:
                continue
            _ = (g.value.iloc[-1] - g.value.iloc[0]) / (g.t_s.iloc[-1] - g.t_s.iloc[0])
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    folder = Path(f"/tmp/benchlib-host-{args.runs}")
    build(folder, args.runs)
    totals, loads, hosts, loops = [], [], [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        frames = load_campaign(folder)
        t1 = time.perf_counter()
        a = analyze(folder)
        totals.append(time.perf_counter() - t)
        loads.append(t1 - t)
        t = time.perf_counter()
        rates = resources.window_rates(a.frames["cluster"], a.runs[a.runs.status == "ok"])
        a.rates = rates
        resources.cost_per_trx(a)
        resources.cpu_bound(a)
        interference.per_run(rates, a.frames["cluster"], a.runs)
        hosts.append(time.perf_counter() - t)
    t = time.perf_counter()
    loop_cpu_bound(a)
    loops.append(time.perf_counter() - t)
    rows = len(frames["cluster"])
    print(f"{args.runs} runs, {rows:,} cluster samples ({rows / args.runs:,.0f} a run)")
    print(f"load_campaign + analyze: {min(totals):.2f} s best of {args.repeat} (load {min(loads):.2f} s); "
          f"target <= 10 s: {'ok' if min(totals) <= 10 else 'MISSED'}")
    print(f"host metrics (rates, costs, CPU-bound, interference): {min(hosts):.2f} s vectorised; the old per-group "
          f"loop over the rates alone: {loops[0]:.1f} s; ratio {loops[0] / min(hosts):.0f}x")


if __name__ == "__main__":
    main()
