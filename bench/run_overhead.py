"""Per-run overhead of a campaign: wall time per run outside the load window and the catch-up wait.

Runs a campaign of ``--runs`` short runs on an async lab through ``run_campaign`` (the
runner the CLI and the notebook use), alternating durability so settings change between
runs. For each run after the first, the wall time is from the previous run's end to its
own end; what is left after the load window and the catch-up wait is the overhead: the
heal check, applying settings, the dataset check, server variables, heartbeat and
sampler set-up, the in-sync wait, stopping, and writing the run folder. Medians at the end.

    python bench/run_overhead.py [--runs 8] [--seconds 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.campaign.runner import run_campaign  # noqa: E402
from benchlib.store import read_manifest  # noqa: E402


def _t(utc: str) -> float:
    return dt.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    (work / "lab.toml").write_text('name = "benchrun"\n[clusters.async]\ntopology = "async"\nreplicas = 2\n')
    (work / "c.toml").write_text(
        f'name = "overhead"\nlab = "lab.toml"\nrepetitions = {max(1, args.runs // 2)}\n'
        f'[load]\nworkloads = ["oltp_read_write"]\nthreads = [8]\ntime_s = {args.seconds}\n'
        '[matrix]\ndurability = ["durable", "relaxed"]\n')
    result = run_campaign(work / "c.toml", runs_dir=work / "runs", progress="none")
    manifests = [read_manifest(result.path / r.run_id) for r in result.plan]
    overheads = []
    for prev, m in zip(manifests, manifests[1:]):
        wall = _t(m.ended_utc) - _t(prev.ended_utc)
        window = m.load_window_s[1] - m.load_window_s[0]
        catch_up = m.catch_up_s or 0.0
        overheads.append(wall - window - catch_up)
        print(f"  {m.run_id}: wall {wall:.2f} s = load {window:.2f} + catch-up {catch_up:.2f} "
              f"+ overhead {overheads[-1]:.2f} s ({m.status}, {m.params.get('durability')})")
    print(f"per-run overhead: median {statistics.median(overheads):.2f} s "
          f"(min {min(overheads):.2f}, max {max(overheads):.2f}, n={len(overheads)}); target <= 2 s")


if __name__ == "__main__":
    main()
