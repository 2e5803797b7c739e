"""How long benchlib's isolation checker takes on a history of 100,000 transactions (the goal: 30 s or less on a
2-core machine): a strictly serializable list-append history generated with a fixed seed, checked ROUNDS times from
its frame (as a recorded history is read); prints each round, the median and the transactions checked a second.

    python bench/isolation_checker.py [N] [ROUNDS]"""

from __future__ import annotations

import statistics
import sys
import time

from _common import enter

enter()

from benchlib.axes.history.checker import check, frame_of  # noqa: E402
from benchlib.axes.history.checker.simulate import strictly_serializable  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
frame = frame_of(strictly_serializable(n, 200, seed=61))
print(f"history: {n:,} transactions, {len(frame):,} micro-operations")
times = []
for r in range(rounds):
    t = time.perf_counter()
    got = check(frame)
    times.append(time.perf_counter() - t)
    print(f"round {r + 1}: {times[-1]:.1f} s, anomalies found: {sum(got.counts.values())}")
med = statistics.median(times)
print(f"median {med:.1f} s ({n / med:,.0f} transactions a second); goal 30 s or less for 100,000")
