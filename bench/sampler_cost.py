"""Cost of sampling: sampler CPU on the 6-node demo lab, and sysbench TPS with sampling on vs off.

1. Idle: the sampler's own CPU (exact, from /proc/self/task/*/schedstat) with every probe
   running on the 6-node lab (async 1+2, Galera 3): heartbeats, cluster state, processes.
2. Under load: sysbench oltp_read_write, 8 threads, on the async primary, after one
   discarded warm-up run; runs with sampling of the loaded cluster (as a campaign samples
   the cluster under test) on and off interleaved (on/off/off/on ...), TPS parsed from
   sysbench's output.
   Prints each run, the median TPS ratio on/off, and the sampler's CPU while loaded.
Figures, not assertions. Run as root.

    python bench/sampler_cost.py [--pairs 3] [--seconds 10]
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import demo_spec, enter, processes_cpu_s  # noqa: E402

ROOT = enter()

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from benchlib.campaign.setup import prepare_dataset  # noqa: E402
from benchlib.sysbench.options import SysbenchOptions  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.campaign.sampling import build_sampling  # noqa: E402
from benchlib.sysbench.output import parse_text  # noqa: E402




def exact_cpu() -> float:
    total = 0
    for f in glob.glob("/proc/self/task/*/schedstat"):
        try:
            total += int(Path(f).read_text().split()[0])
        except OSError:
            pass
    return total / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    lab = LocalLab.up(demo_spec("benchsamp"))
    try:
        opts = SysbenchOptions(workload="oltp_read_write", tables=4, table_size=10000, threads=8, time_s=args.seconds)
        prepare_dataset(lab, "async-1", opts)
        driver = lab.hooks.load_driver()

        pids = [lab.pid(n) for n in lab.layout.nodes]

        def servers_cpu() -> float:
            return processes_cpu_s(pids)

        server_idle = []
        for on in (False, True, False, True):  # the servers' own CPU with and without the probes' queries
            sampling = build_sampling(lab).start() if on else None
            time.sleep(1)
            c0, s0, t0 = exact_cpu(), servers_cpu(), time.monotonic()
            time.sleep(8)
            dt = time.monotonic() - t0
            if on:
                idle = 100 * (exact_cpu() - c0) / dt
                print(f"sampler CPU, idle 6-node lab: {idle:.1f}% of one core (every probe: heartbeats, replication, "
                      "server counters, processes, host)")
            server_idle.append((on, 100 * (servers_cpu() - s0) / dt))
            if sampling:
                sampling.stop()
        on_cpu = statistics.mean(v for o, v in server_idle if o)
        off_cpu = statistics.mean(v for o, v in server_idle if not o)
        print(f"the 6 servers' CPU, idle lab: {on_cpu:.1f}% of one core sampled vs {off_cpu:.1f}% not "
              f"(the probes' queries: {on_cpu - off_cpu:+.1f}%)")

        for _ in range(2):  # warm-up: the first runs after prepare are slower
            driver.run("async-1", opts)
        order = []
        for k in range(args.pairs):
            order += [True, False] if k % 2 == 0 else [False, True]
        tps: dict[bool, list[float]] = {True: [], False: []}
        loaded_cpu = []
        for on in order:
            s = build_sampling(lab, ["async"]).start() if on else None
            c0, t0 = exact_cpu(), time.monotonic()
            out = driver.run("async-1", opts).output
            if s:
                loaded_cpu.append(100 * (exact_cpu() - c0) / (time.monotonic() - t0))
                s.wait_caught_up(60)
                s.stop()
                lag = s.lag_frame()
                behind = lag[lag.node.str.startswith("async")].lag_ms
            r = parse_text(out, "sysbench")
            tps[on].append(r.summary["tps"])
            extra = (f", sampler CPU {loaded_cpu[-1]:.1f}%, async replica lag p50 {behind.median():.0f} ms "
                     f"max {behind.max():.0f} ms") if on else ""
            print(f"  sampling {'on ' if on else 'off'}: {r.summary['tps']:.1f} TPS{extra}")
            with lab.connect("async-1") as conn:  # let replicas catch up before the next run
                pos = conn.cursor()
                pos.execute("SELECT @@GLOBAL.gtid_binlog_pos AS p")
                target = pos.fetchone()["p"]
            for r_node in ("async-2", "async-3"):
                with lab.connect(r_node) as conn:
                    cur = conn.cursor()
                    cur.execute("SELECT MASTER_GTID_WAIT(%s, 120)", (target,))
        ratios = [a / b for a, b in zip(tps[True], tps[False])]
        d = np.log(ratios)  # each on/off pair ran back to back: a block; the paired t interval on log ratios
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.inf
        print(f"TPS with sampling / without, paired by block: {np.exp(d.mean()):.3f} "
              f"(95% interval {np.exp(d.mean() - half):.3f}-{np.exp(d.mean() + half):.3f}, {len(d)} pairs)")
        print(f"TPS with sampling / without: median {statistics.median(ratios):.3f} "
              f"(pairs: {', '.join(f'{x:.3f}' for x in ratios)}); "
              f"medians {statistics.median(tps[True]):.1f} vs {statistics.median(tps[False]):.1f} TPS")
        print(f"sampler CPU under load: median {statistics.median(loaded_cpu):.1f}% of one core")
    finally:
        lab.close(down=True)


if __name__ == "__main__":
    main()
