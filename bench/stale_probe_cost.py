"""Cost of the stale-read probe at its default rates (10 commits/s, 10 reads/s on each replica), on the demo lab's
async cluster (1 primary + 2 replicas). The rest of the sampling runs in both arms: the difference is the probe's.

1. Idle: this process's CPU (exact, /proc/self/task/*/schedstat) and the three servers' CPU, sampling with the probe
   and without, interleaved (off/on/on/off ...), 8 s windows.
2. Under load: sysbench oltp_read_write, 8 threads, on the primary, after two discarded warm-up runs; runs with the
   probe on and off interleaved in pairs (on/off, off/on ...), TPS from sysbench's output; the paired ratio with
   its 95% interval (t on log ratios), and the probe's reads: how many, how many stale.
Figures, not assertions (the issue's goals: <= 1% of one core, TPS ratio >= 0.98). Run as root.

    python bench/stale_probe_cost.py [--pairs 4] [--seconds 10] [--write-rate W --read-rate R]   (--pairs 0: idle only)
"""

from __future__ import annotations

import argparse
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
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.campaign.sampling import build_sampling  # noqa: E402
from benchlib.sampling.stale_reads import ProbeOptions  # noqa: E402
from benchlib.axes.probe.plan import ProbeVariant  # noqa: E402
from benchlib.axes.probe.run import ProbeRun  # noqa: E402
from benchlib.axis import RunContext  # noqa: E402
from benchlib.sysbench.options import SysbenchOptions  # noqa: E402
from benchlib.sysbench.output import parse_text  # noqa: E402
from sampler_cost import exact_cpu  # noqa: E402


def sampled(lab, probe: ProbeOptions, on: bool):
    """The async cluster's sampling, with the stale-read probe (the probe axis's run hook) or without."""
    hook = ProbeRun(RunContext(lab, "async", [n.name for n in lab.cluster_nodes("async")], lab.spec.system_of("async"),
                               None, "bench", ProbeVariant(probe))) if on else None
    return build_sampling(lab, ["async"], extra=hook.probes() if hook else None).start(), hook


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--write-rate", type=float, default=ProbeOptions.write_rate)
    ap.add_argument("--read-rate", type=float, default=ProbeOptions.read_rate)
    args = ap.parse_args()
    probe = ProbeOptions(write_rate=args.write_rate, read_rate=args.read_rate)
    print(f"probe: {probe.write_rate:g} commits/s, {probe.read_rate:g} reads/s on each replica")
    lab = LocalLab.up(demo_spec("benchstale"))
    try:
        pids = [lab.pid(n.name) for n in lab.cluster_nodes("async")]
        own: dict[bool, list[float]] = {True: [], False: []}
        servers: dict[bool, list[float]] = {True: [], False: []}
        for on in (False, True, True, False, False, True):
            s, _ = sampled(lab, probe, on)
            time.sleep(1)
            c0, s0, t0 = exact_cpu(), processes_cpu_s(pids), time.monotonic()
            time.sleep(8)
            dt = time.monotonic() - t0
            own[on].append(100 * (exact_cpu() - c0) / dt)
            servers[on].append(100 * (processes_cpu_s(pids) - s0) / dt)
            s.stop()
        probe_cpu = statistics.median(own[True]) - statistics.median(own[False])
        probe_servers = statistics.median(servers[True]) - statistics.median(servers[False])
        print(f"idle: benchlib's sampling {statistics.median(own[True]):.2f}% of one core with the probe, "
              f"{statistics.median(own[False]):.2f}% without: the probe {probe_cpu:+.2f}% "
              f"(windows: on {', '.join(f'{v:.2f}' for v in own[True])}; "
              f"off {', '.join(f'{v:.2f}' for v in own[False])})")
        print(f"idle: the 3 servers {statistics.median(servers[True]):.2f}% vs {statistics.median(servers[False]):.2f}%"
              f" of one core: the probe's queries {probe_servers:+.2f}%")

        if args.pairs < 1:
            return
        opts = SysbenchOptions(workload="oltp_read_write", tables=4, table_size=10000, threads=8, time_s=args.seconds)
        prepare_dataset(lab, "async-1", opts)
        driver = lab.hooks.load_driver()
        for _ in range(2):  # the first runs after prepare are slower
            driver.run("async-1", opts)
        order = []
        for k in range(args.pairs):
            order += [True, False] if k % 2 == 0 else [False, True]
        tps: dict[bool, list[float]] = {True: [], False: []}
        for on in order:
            s, hook = sampled(lab, probe, on)
            out = driver.run("async-1", opts).output
            s.wait_caught_up(60)
            s.stop()
            r = parse_text(out, "sysbench")
            tps[on].append(r.summary["tps"])
            said = ""
            if hook is not None:
                reads = hook.frames(s.origin)["probe_reads"]
                said = f"; probe: {len(reads)} reads, {int(reads.stale.sum())} stale"
            print(f"  probe {'on ' if on else 'off'}: {r.summary['tps']:.1f} TPS{said}")
        ratios = [a / b for a, b in zip(tps[True], tps[False])]
        d = np.log(ratios)
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else np.inf
        print(f"TPS with the probe / without, paired: {np.exp(d.mean()):.3f} "
              f"(95% interval {np.exp(d.mean() - half):.3f}-{np.exp(d.mean() + half):.3f}, {len(d)} pairs; "
              f"pairs {', '.join(f'{x:.3f}' for x in ratios)})")
    finally:
        lab.close(down=True)


if __name__ == "__main__":
    main()
