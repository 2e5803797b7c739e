"""Per-run overhead: wall time of a measured run outside the load window and the catch-up wait.

Runs ``--runs`` short sysbench runs (``execute_run``) on an async lab (dataset prepared
before the first timed run) and prints, per run, the wall time, the load window, the
catch-up wait and what is left: the overhead (dataset check, server variables,
heartbeat and sampler set-up, stopping, writing the run folder). Medians at the end.

    python bench/run_overhead.py [--runs 5] [--seconds 3]
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

from benchlib.campaign.sysbench_run import SysbenchOptions, execute_run, prepare_dataset  # noqa: E402
from benchlib.lab.lab import Lab  # noqa: E402
from benchlib.lab.spec import parse_spec  # noqa: E402
from benchlib.store import RunWriter, read_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    args = ap.parse_args()
    lab = Lab.up(parse_spec('name = "benchrun"\n[clusters.async]\ntopology = "async"\nreplicas = 2\n'))
    try:
        opts = SysbenchOptions(threads=8, time_s=args.seconds)
        prepare_dataset(lab, "async-1", opts)
        campaign = Path(tempfile.mkdtemp())
        overheads = []
        for i in range(args.runs):
            t0 = time.monotonic()
            path = execute_run(lab, "async", opts, RunWriter(campaign, f"r{i}", {}))
            wall = time.monotonic() - t0
            m = read_run(path).manifest
            window = m["load_window_s"][1] - m["load_window_s"][0]
            catch_up = m["catch_up_s"] or 0.0
            overheads.append(wall - window - catch_up)
            print(f"  run {i}: wall {wall:.2f} s = load {window:.2f} + catch-up {catch_up:.2f} "
                  f"+ overhead {overheads[-1]:.2f} s ({m['status']})")
        print(f"per-run overhead: median {statistics.median(overheads):.2f} s "
              f"(min {min(overheads):.2f}, max {max(overheads):.2f}, n={len(overheads)}); target <= 2 s")
    finally:
        lab.down()


if __name__ == "__main__":
    main()
