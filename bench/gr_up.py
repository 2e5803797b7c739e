"""Bring-up time and idle memory of MySQL labs: a 3-member Group Replication group, 9 members, study 000's mixed lab.

`LocalLab.up` from nothing to ready (every member ONLINE in a group of all; replicas caught
up; Galera Synced), with the phases LocalLab.up reports (servers started, then the group
formed), then the idle memory (PSS) of the lab's servers, then `down`. "Cold" clears the
template cache (mysqld --initialize-insecure and the seed's accounts run once); "warm"
reuses it. Figures, not assertions; goal for the 3-member group, warm: <= 4 s. Where the seconds of a warm 3-member
bring-up go is printed step by step (seeds, servers started, node 1's START GROUP_REPLICATION, each join, every
member seeing all ONLINE), from the lab's own progress and timings of the topology's steps.

    python bench/gr_up.py [--warm 5] [--cold 1]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from lab_up import memory_mib  # noqa: E402

from benchlib.lab.cleanup import cleanup  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.lab.layout import lab_root  # noqa: E402
from benchlib.lab.spec import LabSpec  # noqa: E402


def spec(example: str, name: str, **cluster_changes) -> LabSpec:
    data = tomllib.loads((ROOT / "examples/labs" / example).read_text())
    data["name"] = name
    for c in data["clusters"].values():
        c.update(cluster_changes)
    return LabSpec.model_validate(data)


def one_run(s: LabSpec, cold: bool) -> tuple[float, float, float]:
    """(seconds to ready, seconds of it after the servers started, idle PSS MiB)."""
    if cold:
        shutil.rmtree(lab_root() / ".cache", ignore_errors=True)
    phases: dict[str, float] = {}

    def progress(msg: str) -> None:
        m = re.match(r"(.*) \((\d+\.\d+) s\)$", msg)
        if m:
            phases[m.group(1)] = float(m.group(2))

    t0 = time.perf_counter()
    lab = LocalLab.up(s, progress=progress)
    elapsed = time.perf_counter() - t0
    try:
        time.sleep(2)  # idle
        _, pss = memory_mib(list(lab.record.pids.values()))
    finally:
        lab.close(down=True)
    return elapsed, elapsed - phases.get("servers started", 0.0), pss


def breakdown(s: LabSpec) -> None:
    """One warm bring-up, step by step: the lab's phases and the group topology's steps, in seconds from the start."""
    from benchlib.lab.group_replication import GroupReplication

    t0 = time.perf_counter()
    steps: list[tuple[float, str]] = []

    def timed(fn, label):
        def wrapper(self, *args, **kwargs):
            begin = time.perf_counter() - t0
            try:
                return fn(self, *args, **kwargs)
            finally:
                steps.append((begin, f"{label(*args)} (took {time.perf_counter() - t0 - begin:.2f} s)"))
        return wrapper

    saved = {n: getattr(GroupReplication, n) for n in ("_start", "wait_ready")}
    GroupReplication._start = timed(saved["_start"], lambda node, boot, *a: (
        f"{node.name}: START GROUP_REPLICATION ({'bootstrap' if boot else 'join'}) until ONLINE"))
    GroupReplication.wait_ready = timed(saved["wait_ready"], lambda *a: "every member sees all ONLINE")

    def progress(msg: str) -> None:
        steps.append((time.perf_counter() - t0, msg))

    try:
        lab = LocalLab.up(s, progress=progress)
        lab.close(down=True)
    finally:
        for n, fn in saved.items():
            setattr(GroupReplication, n, fn)
    print("where the seconds of a warm 3-member bring-up go (s from the start):")
    for t, what in sorted(steps):
        print(f"  {t:6.2f}  {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--cold", type=int, default=1)
    ap.add_argument("--only-3", action="store_true", help="the 3-member group only (not 9 members, not the mixed lab)")
    args = ap.parse_args()
    cleanup(all_labs=True)
    gr3 = spec("gr-3.toml", "bgr3")
    LocalLab.up(gr3).close(down=True)  # the template cache, once
    breakdown(gr3)
    for kind, n in (("cold", args.cold), ("warm", args.warm)):
        rows = [one_run(gr3, cold=(kind == "cold")) for _ in range(n)]
        for i, (t, form, pss) in enumerate(rows, 1):
            print(f"  GR 3 members, {kind} run {i}: ONLINE in {t:.2f} s (group formed {form:.2f} s after the "
                  f"servers started), idle PSS {pss:.0f} MiB")
        if rows:
            ts = [r[0] for r in rows]
            print(f"GR 3 members {kind}: median {statistics.median(ts):.2f} s (min {min(ts):.2f}, max {max(ts):.2f}, "
                  f"n={len(ts)}); forming the group: median {statistics.median(r[1] for r in rows):.2f} s; goal <= 4 s")
    if args.only_3:
        return
    t, form, pss = one_run(spec("gr-5-multi.toml", "bgr9", nodes=9, single_primary=True), cold=False)
    print(f"GR 9 members (buffer_pool 64M): ONLINE in {t:.2f} s (group formed {form:.2f} s after start), "
          f"idle PSS {pss:.0f} MiB ({pss / 9:.0f} per member)")
    rows = [one_run(spec("mixed-000.toml", "bmix"), cold=False) for _ in range(2)]
    print(f"mixed lab of study 000 (MySQL async 1+2, GR 3, Galera 3): ready in "
          f"{statistics.median(r[0] for r in rows):.2f} s (runs: {', '.join(f'{r[0]:.2f}' for r in rows)}), "
          f"idle PSS {statistics.median(r[2] for r in rows):.0f} MiB")


if __name__ == "__main__":
    main()
