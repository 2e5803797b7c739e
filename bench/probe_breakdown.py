"""What each kind of probe costs on the idle 6-node demo lab (async 1+2, Galera 3): the sampler's CPU and the
servers' CPU with one kind of probe running alone, kinds interleaved over rounds, against no probe at all.

Kinds: heartbeats (write and read), replication status, server counters (SHOW GLOBAL STATUS), processes
(/proc/PID), host (/proc), liveness. Prints per kind the median over rounds of the sampler's CPU and of the
six servers' CPU, in % of one core, each minus the no-probe baseline of its round. Figures, not assertions.
Run as root.

    python bench/probe_breakdown.py [--rounds 3] [--seconds 6]
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

from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.sampling.host import HostProbe, ProcessProbe  # noqa: E402
from benchlib.sampling.probe import Sampler  # noqa: E402
from benchlib.campaign.sampling import build_sampling  # noqa: E402
from benchlib.sampling.status import ServerCountersProbe  # noqa: E402
from sampler_cost import exact_cpu  # noqa: E402


def kind_of(probe) -> str:
    if isinstance(probe, ServerCountersProbe):
        return "counters"
    if isinstance(probe, ProcessProbe):
        return "processes"
    if isinstance(probe, HostProbe):
        return "host"
    name = type(probe).__name__.lower()
    if "heartbeat" in name or "writer" in name or "reader" in name:
        return "heartbeats"
    if "liveness" in name:
        return "liveness"
    return "status"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    args = ap.parse_args()
    lab = LocalLab.up(demo_spec("benchkinds"))
    try:
        pids = [lab.pid(n) for n in lab.layout.nodes]

        def servers_cpu() -> float:
            return processes_cpu_s(pids)

        full = build_sampling(lab)
        kinds = sorted({kind_of(p) for p in full.sampler.probes})
        print("probes:", ", ".join(f"{k} ({sum(kind_of(p) == k for p in full.sampler.probes)})" for k in kinds))
        result: dict[str, list[tuple[float, float]]] = {k: [] for k in ["none", *kinds, "all"]}
        for r in range(args.rounds):
            order = ["none", *kinds, "all"]
            order = order[r % len(order):] + order[:r % len(order)]  # rotated: no kind always first
            base = None
            rows = {}
            for kind in order:
                s = build_sampling(lab)
                if kind != "all":
                    s.sampler = Sampler([p for p in s.sampler.probes if kind_of(p) == kind])
                if kind != "none":
                    s.start()
                time.sleep(1)
                c0, v0, t0 = exact_cpu(), servers_cpu(), time.monotonic()
                time.sleep(args.seconds)
                dt = time.monotonic() - t0
                rows[kind] = (100 * (exact_cpu() - c0) / dt, 100 * (servers_cpu() - v0) / dt)
                if kind != "none":
                    s.sampler.stop()
            base = rows["none"]
            for kind, (cpu, srv) in rows.items():
                result[kind].append((cpu - base[0] if kind != "none" else cpu, srv - base[1] if kind != "none" else srv))
        print(f"{'kind':<12} {'sampler CPU %':>14} {'servers CPU %':>14}   (of one core; minus the no-probe baseline)")
        for kind, vals in result.items():
            print(f"{kind:<12} {statistics.median(v[0] for v in vals):>14.2f} {statistics.median(v[1] for v in vals):>14.2f}")
    finally:
        lab.close(down=True)


if __name__ == "__main__":
    main()
