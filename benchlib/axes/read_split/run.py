"""The read split beside a run's load (``[load] read_threads``): sysbench's oltp_read_only on every node but the write
node, beside the write load, each session under the run's read consistency (``benchlib.systems.consistency``: the
statements a session runs first; the probe axis's setting when the campaign has one). Its readers run in threads
through the lab's load driver, local or remote; one that fails stops the writers (``failed``, asked by their
watchdog), naming its node. Frame ``read_intervals``, raw ``reads-NODE.txt``, manifest ``read_split``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Callable

import pandas as pd

from benchlib.axis import AxisRun, RunContext
from benchlib.schema import READ_INTERVALS
from benchlib.sysbench.options import READ_SPLIT, SysbenchOptions
from benchlib.sysbench.process import LoadResult
from benchlib.systems import consistency
from benchlib.axes.probe.plan import ProbeVariant

__all__ = ["ReadSplit", "ReadSplitRun", "hook"]


class ReadSplit:
    """The read side of a read-split load: ``threads`` sysbench threads of oltp_read_only on each of ``nodes``,
    each session under the read consistency ``setting`` of ``system`` (None: its default) where sessions can carry
    it (a causal wait on a replica needs the writer's GTID, which sysbench cannot pass: there the reads run under
    the system's default), beside the write load."""

    def __init__(self, nodes: list[str], opts: SysbenchOptions, threads: int, system: str, setting: str | None):
        chosen = consistency.for_system(system, setting)
        by_statement = chosen.token is None
        self.nodes, self.threads = nodes, threads
        self.consistency = chosen.name if by_statement else consistency.for_system(system, None).name
        self.opts = replace(opts, workload=READ_SPLIT.name, threads=threads, rate=None, histogram=False,
                            session_sql=tuple(chosen.reader) if by_statement else ())
        self.results: dict[str, LoadResult] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict = {}
        self._stopping = False

    WRITERS_ENDED, OTHER_ENDED = "the write load ended first", "another node's reads ended"

    def start(self, driver, run_id: str, stall_s: float, outside: Callable[[], str | None]) -> None:
        """Every reader's load, in threads; ``outside()``: why the whole run must stop (a node down ...)."""
        def watch() -> str | None:
            if self._stopping:
                return self.WRITERS_ENDED
            return outside() or (self.OTHER_ENDED if self.failed() else None)

        self._pool = ThreadPoolExecutor(max_workers=len(self.nodes), thread_name_prefix="read-split")
        self._futures = {n: self._pool.submit(driver.run, n, self.opts, stall_s=stall_s,
                                              source=f"{run_id}/raw/reads-{n}.txt", abort_if=watch)
                         for n in self.nodes}

    def failed(self) -> str | None:
        """The reader that ended badly first, in words (the writers' watchdog stops the load on it): one that failed
        on its own rather than because another did."""
        bad = {}
        for node, f in self._futures.items():
            if f.done():
                exc = f.exception()
                if exc is not None or f.result().status != "ok":
                    bad[node] = f"{type(exc).__name__}: {exc}" if exc else f.result().reason
        first = [n for n, why in bad.items() if why not in (self.WRITERS_ENDED, self.OTHER_ENDED)] or list(bad)
        return f"the reads on {first[0]} ended: {bad[first[0]]}" if first else None

    def join(self, loaded: LoadResult) -> LoadResult:
        """The write load's result, failed when a reader failed (naming the node)."""
        if loaded.status != "ok":
            self._stopping = True
        for node, f in self._futures.items():
            try:
                self.results[node] = f.result()
            except Exception as exc:  # noqa: BLE001 - a reader's failure is the run's, named
                self.results[node] = LoadResult("failed", f"{type(exc).__name__}: {exc}", "", None)
        bad = self.failed()
        if loaded.status == "ok" and bad:
            return replace(loaded, status="failed", reason=bad)
        return loaded

    def stop(self) -> None:
        self._stopping = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def outputs(self) -> dict[str, str]:
        return {n: r.output for n, r in self.results.items()}

    def frame(self) -> pd.DataFrame:
        parts = [r.result.intervals.assign(node=n) for n, r in self.results.items()
                 if r.result is not None and not r.result.intervals.empty]
        if not parts:
            return READ_INTERVALS.empty()
        return READ_INTERVALS.validate(pd.concat(parts, ignore_index=True).astype({"node": "str"}))

    def as_dict(self) -> dict[str, Any]:
        return {"threads": self.threads, "nodes": self.nodes, "workload": "oltp_read_only",
                "consistency": self.consistency, "statements": list(self.opts.session_sql),
                "summary": {n: r.result.summary for n, r in self.results.items()
                            if r.result is not None and r.result.summary}}


class ReadSplitRun(AxisRun):
    def __init__(self, ctx: RunContext):
        probe = ctx.axes.get("probe")
        self.ctx = ctx
        self.reads = ReadSplit(ctx.nodes[1:], ctx.options, ctx.variant.threads, ctx.system,
                               probe.options.consistency if isinstance(probe, ProbeVariant) else None)

    def start(self) -> None:
        self.reads.start(self.ctx.driver, self.ctx.run_id, self.ctx.stall_s, self.ctx.outside)

    def failed(self) -> str | None:
        return self.reads.failed()

    def join(self, loaded: LoadResult) -> LoadResult:
        return self.reads.join(loaded)

    def close(self) -> None:
        self.reads.stop()

    def raws(self) -> dict[str, str]:
        return {f"reads-{node}.txt": text for node, text in self.reads.outputs().items()}

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        return {"read_intervals": self.reads.frame()}

    def manifest(self) -> dict[str, object]:
        return self.reads.as_dict()


def hook(ctx: RunContext) -> ReadSplitRun:
    return ReadSplitRun(ctx)
