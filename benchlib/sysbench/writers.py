"""A load on several writer nodes: one load (``SysbenchOptions.writers`` > 1) run as one part a node, together.

``SeveralWriters(driver, nodes)`` is a ``LoadDriver`` around the lab's own (here or on client hosts): ``run`` splits
the threads (and an open loop's rate) over ``nodes`` (the same total; the first nodes get one more when they do not
divide), starts every part at once, each a load of the lab's driver against its node, and merges their per-second
lines into one run as ``benchlib.sysbench.merge`` merges client hosts. Each part is counted (``writers.lua``: commits
and errors by number per second, the node named in its lines), and with ``disjoint`` writes its own range of the
keys (the TPC-C-like mix: its own home warehouses). A part that fails stops the others; the run fails naming it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Callable

from benchlib.sysbench.merge import LiveMerge, merge_results
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.output import Interval
from benchlib.sysbench.process import LoadResult

__all__ = ["SeveralWriters", "parts", "split"]


def split(total: int, n: int) -> list[int]:
    """``total`` in ``n`` parts as equal as they can be, the larger first."""
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def parts(opts: SysbenchOptions, nodes: list[str]) -> dict[str, SysbenchOptions]:
    """Each writer node's part of ``opts``: its threads, its rate, its range of the keys (``disjoint``)."""
    threads = split(opts.threads, len(nodes))
    rates = split(opts.rate, len(nodes)) if opts.rate else [None] * len(nodes)
    return {node: replace(opts, writers=1, count_writes=False, threads=t, rate=r, node=node,
                          key_part=i + 1 if opts.disjoint else 1, key_parts=len(nodes) if opts.disjoint else 1)
            for i, (node, t, r) in enumerate(zip(nodes, threads, rates))}


class SeveralWriters:
    """``driver``'s load on every one of ``nodes`` at once (a ``LoadDriver``)."""

    def __init__(self, driver, nodes: list[str]):
        self.driver, self.nodes = driver, list(nodes)

    def prepare(self, node: str, opts: SysbenchOptions) -> None:
        self.driver.prepare(node, opts)

    def stop_strays(self) -> list[str]:
        return self.driver.stop_strays()

    def run(self, node: str, opts: SysbenchOptions, *, on_interval: Callable[[Interval], None] | None = None,
            stall_s: float = 10.0, source: str = "sysbench",
            abort_if: Callable[[], str | None] | None = None) -> LoadResult:
        """The load on every writer node (``node``, the run's write node, is the first of them)."""
        nodes = [node, *[n for n in self.nodes if n != node]] if node in self.nodes else self.nodes
        each = {n: p for n, p in parts(opts, nodes).items() if p.threads > 0}
        live = LiveMerge(list(each), on_interval or (lambda iv: None))
        failed: dict[str, str] = {}
        results: dict[str, tuple[float, LoadResult]] = {}

        def stop_if() -> str | None:
            gone = next(iter(failed.items()), None)
            return (f"the load on {gone[0]} failed: {gone[1]}" if gone else None) or (abort_if() if abort_if else None)

        def one(n: str, part: SysbenchOptions) -> None:
            start = time.monotonic()
            try:
                res = self.driver.run(n, part, on_interval=lambda iv: live.feed(n, iv), stall_s=stall_s,
                                      source=f"{source}:{n}", abort_if=stop_if)
            except Exception as exc:  # noqa: BLE001 - a part that could not start: the others stop, the run says why
                res = LoadResult("failed", f"{type(exc).__name__}: {exc}", "", None)
            if res.status != "ok":
                failed.setdefault(n, res.reason or res.status)
            results[n] = (start, res)

        threads = [threading.Thread(target=one, args=(n, p), name=f"writer-{n}", daemon=True) for n, p in each.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        merged = merge_results({n: (start, r.result) for n, (start, r) in results.items() if r.result is not None},
                               source) if any(r.result is not None for _, r in results.values()) else None
        if merged is not None:
            merged.records = [line for n in each for line in (results[n][1].result.records
                                                              if results[n][1].result is not None else [])]
        output = "".join(f"### writer node {n} ({p.threads} threads)\n{results[n][1].output}" for n, p in each.items())
        outputs = {n: results[n][1].output for n in each}
        if not failed:
            return LoadResult("ok", None, output, 0, merged, outputs=outputs)
        n = next(iter(failed))  # the first part to fail: the others stopped for it
        bad = results[n][1]
        return LoadResult(bad.status, f"{n}: {bad.reason}", output, bad.returncode, merged, outputs=outputs)
