"""Bring-up time and idle memory of the 6-node lab (async primary + 2 replicas, 3-node Galera).

Measures `LocalLab.up` from nothing to fully ready (replicas caught up with the
primary, every Galera node Synced in a primary component of 3), then the idle
resident memory of the lab's processes, then takes it down. "Cold" runs start
with an empty template cache (mariadb-install-db runs once); "warm" runs reuse it.
Prints every run and the medians. Figures, not assertions.

    python bench/lab_up.py [--warm 5] [--cold 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import demo_spec, enter  # noqa: E402

ROOT = enter()

from benchlib.lab.cleanup import cleanup  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.lab.layout import lab_root  # noqa: E402
from benchlib.lab.spec import LabSpec  # noqa: E402


def memory_mib(pids: list[int]) -> tuple[float, float]:
    """(sum of RSS, sum of PSS) in MiB. RSS counts the shared mariadbd binary and libgalera once per
    process; PSS splits shared pages between the processes that map them: the lab's real footprint."""
    rss = pss = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss / 1024, pss / 1024


def one_run(spec: LabSpec, cold: bool) -> tuple[float, tuple[float, float]]:
    if cold:
        shutil.rmtree(lab_root() / ".cache", ignore_errors=True)
    t0 = time.perf_counter()
    lab = LocalLab.up(spec)
    elapsed = time.perf_counter() - t0
    try:
        time.sleep(2)  # idle
        mem = memory_mib(list(lab.record.pids.values()))
    finally:
        lab.close(down=True)
    return elapsed, mem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--cold", type=int, default=3)
    args = ap.parse_args()
    base = demo_spec("bench6")
    small = base.model_dump()
    small["defaults"]["buffer_pool"] = "64M"
    specs = {"buffer_pool=128M (demo.toml)": base, "buffer_pool=64M": LabSpec.model_validate(small)}
    cleanup(all_labs=True)
    print(f"6-node lab (async 1 primary + 2 replicas, Galera 3), {os.cpu_count()} cores, root {lab_root()}")
    spec = specs["buffer_pool=128M (demo.toml)"]
    results: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    for kind, n in (("cold", args.cold), ("warm", args.warm)):
        for i in range(n):
            t, m = one_run(spec, cold=(kind == "cold"))
            results[kind].append((t, m))
            print(f"  {kind} run {i + 1}: ready in {t:.2f} s, idle memory PSS {m[1]:.0f} MiB (RSS sum {m[0]:.0f})")
    for kind, rows in results.items():
        if rows:
            ts = [t for t, _ in rows]
            print(f"{kind:5} bring-up: median {statistics.median(ts):.2f} s (min {min(ts):.2f}, max {max(ts):.2f}, n={len(ts)})")
    pss = [m[1] for rows in results.values() for _, m in rows]
    rss = [m[0] for rows in results.values() for _, m in rows]
    print(f"idle memory, buffer_pool=128M: median PSS {statistics.median(pss):.0f} MiB "
          f"(RSS summed over the 6 mariadbd: {statistics.median(rss):.0f} MiB)")
    t, m = one_run(specs["buffer_pool=64M"], cold=False)
    print(f"idle memory, buffer_pool=64M:  PSS {m[1]:.0f} MiB (RSS sum {m[0]:.0f} MiB; ready in {t:.2f} s)")
    print("reference (measured before benchlib had its own lab): a straightforward build 12 s, dbdeployer 7.8 s for 3 async nodes; "
          "target <= 5 s")


if __name__ == "__main__":
    main()
