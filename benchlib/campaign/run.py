"""The run engine: every measured run on any lab, throughput run or fault run, in the same six steps.

``RunEngine(...).execute()`` (``execute_run``) runs them in order:

1. **setup**: the run's nodes checked up and serving, the dataset prepared if this (workload family, tables, table
   size) was not prepared on this lab yet, the lab's facts (``benchlib.campaign.setup.RunSetup``);
2. **arm**: each axis of the run gives its hook (``benchlib.axis.AxisRun``: the stale-read probe, the read split, the
   stalled replica, the fault with its ledger writer and its schedule, one of your own), which may refuse the run
   (the lab cannot do what it asks); an optional warm-up (its output kept, not measured); sampling starts with the
   hooks' probes beside its own;
3. **load**: the run waits until every node has seen a heartbeat (in sync; the wait is recorded), then the lab's load
   driver runs sysbench (here or on client hosts; on several writer nodes at once when the load asks for them,
   ``benchlib.sysbench.writers``), every per-second line parsed as it arrives. The shared watchdog
   stops a load that stalls, whose node went down or stopped answering, or that a hook says must stop. An axis that
   takes nodes down on purpose (``AxisRun.breaks``: a fault) is not stopped for it, and the load **follows the
   writes**: sysbench cannot follow a failover (its connections die with the node and it does not reconnect
   reliably, akopytov/sysbench #461), so when the writes move it ends and starts again where they went, once the
   hook has writes acknowledged there, for the rest of the load time (each part a segment of the raw output);
4. **catch up**: sampling goes on after the load until every node has applied everything (the catch-up time is a
   result); after a load that broke nodes on purpose, the hook makes the lab whole again instead (the heal);
5. **audit**: every node holds what the write node holds (positions and checksums of the run's tables and the
   hooks'), then each hook's own audit (a fault run's ledger, write by write, on every node);
6. **record**: the frames (the hooks' beside the run's), raw output, manifest entries and the verdict: a load that
   failed names its cause; a run whose cluster left its mode is INVALID (its system's invariants), one whose replicas
   never caught up FAILED, one the host disturbed DISTURBED; a run an axis judges (``Axis.counts_for_throughput``
   false) is judged by the hook alone.

Nothing here knows which kind of lab it has (``benchlib.lab.base.Lab``) or which axes there are.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pandas as pd

from benchlib.analysis import interference
from benchlib.axis import AXES, AxisRun, RunContext, Variant
from benchlib.campaign.folder import CampaignError
from benchlib.campaign.sampling import LabSampling, sample
from benchlib.campaign.stuck import longest_statements
from benchlib.campaign.setup import RunSetup, dataset_tables, nodes_down, wait_serving
from benchlib.schema import INTERVALS
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.output import Interval
from benchlib.sysbench.process import LoadResult
from benchlib.sysbench.writers import SeveralWriters
from benchlib.systems import invariants
from pydantic import JsonValue

if TYPE_CHECKING:
    from benchlib.lab.base import Lab

__all__ = ["RunEngine", "Segment", "execute_run", "invalid_reason"]


def _name_the_cause(loaded: LoadResult, trouble: Callable[[], str | None], wait_s: float = 3.0) -> LoadResult:
    """A load that failed because a node went down or stopped answering says so first: sysbench only sees
    lost connections. The node's process may take a moment to be gone (a zombie), so look for up to
    ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while True:
        cause = trouble()
        if cause:
            if loaded.reason and cause in loaded.reason:
                return loaded
            detail = f" (sysbench: {loaded.reason})" if loaded.reason else ""
            return replace(loaded, status="failed", reason=f"{cause}{detail}")
        if time.monotonic() > deadline:
            return loaded
        time.sleep(0.2)


class Segment:
    """One sysbench of the load: where it ran, when it started (seconds into the load) and what it did."""

    def __init__(self, node: str, at_s: float, loaded: LoadResult):
        self.node, self.at_s, self.loaded = node, at_s, loaded

    def heading(self) -> str:
        return f"# segment on {self.node} at {self.at_s:.1f} s: {self.loaded.status} {self.loaded.reason or ''}\n"


class RunEngine:
    """One measured run of ``opts`` on ``cluster``, written through ``writer`` (see the module docstring).

    ``warmup_s``: seconds of load before the measured window (its output kept as raw/warmup.txt). ``on_second(
    interval, lag_ms)`` gets each per-second line with the cluster's current replica lag, for progress displays.
    ``context`` (campaign, host facts, revision) is recorded in the manifest as given. With ``disturbed_above``, a
    run that lost more than that share of the host's CPU to what is not the lab is kept as DISTURBED with the
    evidence (statistics leave it out; the campaign redoes it). ``axes``: axis -> this run's variant. ``on_hooks``
    sees the hooks once built (a test reaching into one)."""

    def __init__(self, lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *,
                 catch_up_timeout: float = 120, sync_timeout: float = 120, warmup_s: int = 0, stall_s: float = 10.0,
                 on_interval: Callable[[Interval], None] | None = None,
                 on_second: Callable[[Interval, float | None], None] | None = None,
                 context: dict[str, JsonValue] | None = None, disturbed_above: float | None = None,
                 axes: dict[str, Variant] | None = None,
                 on_hooks: Callable[[dict[str, AxisRun]], None] | None = None):
        self.lab, self.cluster, self.opts, self.writer = lab, cluster, opts, writer
        self.catch_up_timeout, self.sync_timeout, self.warmup_s, self.stall_s = (catch_up_timeout, sync_timeout,
                                                                                 warmup_s, stall_s)
        self.on_interval, self.on_second, self.context = on_interval, on_second, context
        self.disturbed_above, self.variants, self.on_hooks = disturbed_above, dict(axes or {}), on_hooks
        self.hooks: dict[str, AxisRun] = {}
        self.segments: list[Segment] = []
        self.catch_up_s: float | None = None
        self.bounds: tuple[float, float] | None = None

    # -- the steps, in order ----------------------------------------------------------------------------------------
    def execute(self) -> Path:
        """Every step in order; returns the run folder."""
        stopped = self.setup()
        if stopped is not None:
            return stopped
        try:
            stopped = self.arm()
            if stopped is not None:
                return stopped
            try:
                self.load()
                self.catch_up()
            finally:
                self.sampling.stop()
            self.audit()
            return self.record()
        finally:
            for h in self.hooks.values():
                h.close()

    def setup(self) -> Path | None:
        """The run's nodes up and serving, its dataset, its facts (the failed run's folder when they are not)."""
        setup = RunSetup.begin(self.lab, self.cluster, self.opts, self.writer, context=self.context,
                               serving_timeout=min(self.sync_timeout, 30.0))
        if not isinstance(setup, RunSetup):
            return setup
        self.run_setup = setup
        self.extra = setup.extra
        self.extra["warmup_s"] = self.warmup_s
        self.driver = self.lab.hooks.load_driver()
        if self.opts.writers > 1 or self.opts.count_writes:  # on each writer node at once, the write node first
            if len(setup.nodes) < self.opts.writers:
                return self.writer.fail(f"FAILED: the load asks for {self.opts.writers} writer nodes; cluster "
                                        f"{self.cluster} has {len(setup.nodes)}", **self.extra)
            self.driver = SeveralWriters(self.driver, setup.nodes[:self.opts.writers])
        return None

    def arm(self) -> Path | None:
        """The axes' hooks (each may refuse the run), the warm-up, sampling with the hooks' probes."""
        lab, setup, writer = self.lab, self.run_setup, self.writer
        ctx = RunContext(lab, self.cluster, setup.nodes, str(setup.facts.system), self.opts, writer.run_id,
                         axes=self.variants, driver=self.driver, stall_s=self.stall_s, setup=setup)
        self.contexts = {name: replace(ctx, variant=variant) for name, variant in self.variants.items()}
        built = {name: AXES.lookup(name).run(c) for name, c in self.contexts.items()}
        self.hooks = {name: hook for name, hook in built.items() if hook is not None}
        if self.on_hooks is not None:
            self.on_hooks(self.hooks)
        self.extra["axes"] = {}
        for name, h in self.hooks.items():
            refused = h.begin()
            self.extra["axes"][name] = h.manifest()  # each axis's entry, by its name
            if refused:
                return writer.fail(f"FAILED: {refused}", **self.extra)
        if self.warmup_s > 0:
            warm = self.driver.run(setup.write_node, replace(self.opts, time_s=self.warmup_s, histogram=False),
                                   stall_s=self.stall_s, source=f"{writer.run_id}/raw/warmup.txt",
                                   abort_if=lambda: nodes_down(lab, setup.nodes))
            writer.raw("warmup.txt", warm.output)
            if warm.status != "ok":
                return writer.fail(f"{warm.status.upper()} during warm-up: {warm.reason}", **self.extra)
        setup.record_servers()
        self.sampling: LabSampling = sample(lab, [setup.target], extra=[p for h in self.hooks.values()
                                                                          for p in h.probes()])
        self.sampling.start()
        for c in self.contexts.values():
            c.origin = self.sampling.origin
        return None

    @property
    def breaking(self) -> bool:
        """Whether a hook takes nodes down on purpose (a fault): the watchdog lets it, the load follows the writes,
        the lab is healed after the load, and the hook judges the run."""
        return any(h.breaks for h in self.hooks.values())

    def outside(self) -> str | None:
        """Why the whole run must stop now, from outside its hooks: a node down or silent (not when a hook takes
        nodes down on purpose)."""
        if self.breaking:
            return None
        return nodes_down(self.lab, self.run_setup.nodes) or self.sampling.unresponsive(self.stall_s)

    def trouble(self) -> str | None:
        return self.outside() or next((why for h in self.hooks.values() if (why := h.failed())), None)

    def load(self) -> None:
        """In sync first, then the load (following the writes where a hook moves them)."""
        sampling, setup = self.sampling, self.run_setup
        self.in_sync = sampling.wait_caught_up(self.sync_timeout)
        off = setup.semisync_back_on(min(self.sync_timeout, 30.0)) if self.in_sync is not None else None
        self.load_t0 = sampling.now()
        if self.in_sync is None or off:
            self.loaded = LoadResult("failed", off or f"nodes not in sync {self.sync_timeout:g} s before the load",
                                     "", None)
        else:
            for c in self.contexts.values():
                c.outside = self.outside
                c.writes_now = lambda: self._writes_to() or self.run_setup.write_node
            for h in self.hooks.values():
                h.start()
            loaded = self.follow_the_writes()
            for h in self.hooks.values():
                loaded = h.join(loaded)
            if loaded.status != "ok" and not self.breaking:
                loaded = _name_the_cause(loaded, self.trouble)
                if loaded.status == "hung":  # what the nodes were doing meanwhile
                    waiting = longest_statements(self.lab.connect, self.run_setup.nodes, self.stall_s / 2)
                    loaded = replace(loaded, reason=f"{loaded.reason}; the longest statements then: {waiting}"
                                     if waiting else loaded.reason)
            self.loaded = loaded
        self.load_end = sampling.now()

    def _writes_to(self) -> str | None:
        return next((node for h in self.hooks.values() if (node := h.writes_to()) is not None), None)

    def follow_the_writes(self) -> LoadResult:
        """sysbench on the write node for the load's time; when a hook moves the writes (a failover), it starts
        again where they went once the hook has writes acknowledged there, for what is left of the load time."""
        opts, run_id = self.opts, self.writer.run_id
        start, here = time.monotonic(), self.run_setup.write_node
        sampling, on_interval, on_second = self.sampling, self.on_interval, self.on_second

        def each_second(iv: Interval) -> None:
            if on_interval:
                on_interval(iv)
            if on_second:
                on_second(iv, sampling.current_lag_ms())

        while True:
            at_s = time.monotonic() - start
            left = opts.time_s - at_s
            if self.segments and left < 2:
                break

            def stop_if(here: str = here) -> str | None:
                moved = self._writes_to()
                return self.trouble() or (f"the writes moved to {moved}" if moved not in (None, here) else None)

            loaded = self.driver.run(here, opts if not self.segments else replace(opts, time_s=max(1, int(left))),
                                     on_interval=each_second, stall_s=self.stall_s, source=f"{run_id}/raw/sysbench.txt",
                                     abort_if=stop_if)
            self.segments.append(Segment(here, at_s, loaded))
            for h in self.hooks.values():
                h.segment(loaded, here)
            if loaded.status == "ok" or not self.breaking:
                break
            for h in self.hooks.values():
                h.load_event("load_ended", here, loaded.reason or loaded.status)
            there = here
            while time.monotonic() - start < opts.time_s - 2:  # until the writes are acknowledged where they go
                mark = time.monotonic()
                time.sleep(0.1)
                there = self._writes_to() or here
                if all(h.writable(mark - 0.1) for h in self.hooks.values()) and self.lab.health.is_up(there):
                    break
            here = there
            if time.monotonic() - start < opts.time_s - 2:
                for h in self.hooks.values():
                    h.load_event("load_restarted", here, f"sysbench started again on {here}")
        return self.segments[-1].loaded

    def catch_up(self) -> None:
        """Until every node has applied everything (the catch-up time); after a load that broke nodes on purpose,
        the lab made whole again by the hooks instead (a heal that fails stops the campaign: the run is dropped)."""
        if self.breaking:
            self.sampling.stop()
            try:
                for h in self.hooks.values():
                    h.after_load()
            except CampaignError:
                self.writer.abandon()
                raise
        elif self.loaded.status == "ok":
            bounds = self.sampling.wait_catch_up(self.sampling.origin + self.load_end, self.catch_up_timeout,
                                                 give_up=self.trouble)
            if isinstance(bounds, str):  # a node went down or stopped answering while the others caught up
                self.loaded = replace(self.loaded, status="failed", reason=f"{bounds} (after the load, during catch-up)")
            else:
                self.bounds = bounds
                self.catch_up_s = bounds[1] if bounds else None
        said = [(name, why) for name, why in ((n, h.stop()) for n, h in self.hooks.items()) if why]
        self.said = bool(said)
        if said and (self.loaded.status == "ok" or self.breaking):
            why = "; ".join(w if self.hooks[n].breaks else f"{n}: {w}" for n, w in said)
            self.loaded = replace(self.loaded, status="failed", reason=why)

    def audit(self) -> None:
        """Every node holds what the write node holds; then each hook's own audit."""
        setup = self.run_setup
        tables = dataset_tables(self.opts) + [t for h in self.hooks.values() for t in h.tables()]
        self.audited = None
        self.refused: str | None = None
        if self.breaking:
            self.refused = wait_serving(self.lab, setup.nodes, timeout=60.0)
            if not self.refused:
                self.audited = setup.audit(tables, timeout=120.0)
        elif self.loaded.status == "ok" and self.catch_up_s is not None:
            self.audited = setup.audit(tables)
        for h in self.hooks.values():
            found = h.audit()
            if found and self.audited is not None:  # what a hook's audit found: a difference like a checksum's
                self.audited.mismatches.extend(found)
        if self.audited is not None:
            self.extra["audit"] = self.audited.as_dict()

    def record(self) -> Path:
        """The run's frames, raw output and manifest; its verdict."""
        writer, extra, sampling, loaded = self.writer, self.extra, self.sampling, self.loaded
        origin = sampling.origin
        if self.breaking:
            writer.raw("sysbench.txt", "\n".join(s.heading() + s.loaded.output for s in self.segments))
        else:
            writer.raw("sysbench.txt", loaded.output)
        for host, text in loaded.outputs.items():
            writer.raw(f"sysbench-{host}.txt", text)
        result = loaded.result  # parsed live as the lines arrived; partial frames are kept for failed runs
        if not self.breaking:
            if result is not None:
                writer.frame("intervals", result.intervals)
                writer.frame("histogram", result.histogram)
        else:  # each segment's seconds where they fell in the load
            parts = [s.loaded.result.intervals.assign(t_s=s.loaded.result.intervals["t_s"] + s.at_s)
                     for s in self.segments if s.loaded.result is not None and not s.loaded.result.intervals.empty]
            writer.frame("intervals", pd.concat(parts, ignore_index=True) if parts else INTERVALS.empty())
        sampled = sampling.cluster_frame()  # the run's own rows (a hook's join them below)
        own = {"lag": sampling.lag_frame(), "cluster": sampled}
        for name, h in self.hooks.items():
            for file, text in h.raws().items():
                writer.raw(file, text)
            for kind, frame in h.frames(origin).items():
                if kind in own:  # a hook's rows of the run's own frames join them
                    own[kind] = pd.concat([f for f in (own[kind], frame) if not f.empty], ignore_index=True)
                else:
                    writer.frame(kind, frame)
            extra["axes"][name] = h.manifest()
        if not own["lag"].empty:
            writer.frame("lag", own["lag"])
        cluster_frame = own["cluster"]
        writer.frame("cluster", cluster_frame)
        if loaded.status == "ok" or (self.breaking and self.segments and self.load_end is not None):
            # a fault run's too: never redone (a fault cannot be replayed alike), its timings flagged by the analysis
            extra["interference"] = interference.of_run(sampled, (self.load_t0, self.load_end))
        extra.update({
            "in_sync_wait_s": self.in_sync,
            "load_window_s": [self.load_t0, self.load_end],
            "catch_up_s": self.catch_up_s,  # upper bound: every node saw the first heartbeat after the load
            "catch_up_low_s": self.bounds[0] if self.bounds else None,  # lower bound (the last before the end)
            "sampler": {"errors": sampling.errors(), "skipped_ticks": sampling.skipped(),
                        "warnings": sampling.warnings},
        })
        if result is not None and result.summary and len(self.segments) == 1:
            extra["summary"] = result.summary
        if loaded.client_hosts:
            extra["client_hosts"] = loaded.client_hosts
        if sampling.offsets():
            extra["clock_offsets"] = sampling.offsets()
        if self.breaking:  # judged by what its hooks measured: the fault was the point, never a failure of the run
            if self.said or not self.segments:  # what the hooks say failed, or no load at all
                return writer.fail(f"FAILED: {loaded.reason}", **extra)
            if self.refused:
                return writer.fail(f"FAILED: after the heal, {self.refused}", **extra)
            return writer.finish(**extra)
        if loaded.status != "ok":
            return writer.fail(f"{loaded.status.upper()}: {loaded.reason}", **extra)
        # the cluster held its mode through the load (each system's invariants, on the samples just taken): a member
        # that left the group is why its catch-up never ends, so an invalid run says so before a missing catch-up
        nodes = self.run_setup.nodes
        breaches = invariants.check(cluster_frame, invariants.Window(nodes, self.load_t0, self.load_end),
                                    self.run_setup.system.invariants)
        on_purpose = [(n, t0 - origin, t1 - origin) for h in self.hooks.values() for n, t0, t1 in h.excused()]
        breaches = invariants.excuse(breaches, self.load_t0, on_purpose)
        diverged = self.audited.mismatches if self.audited is not None else []
        if breaches or diverged:
            extra["breaches"] = [b.as_dict() for b in breaches]
            return writer.invalid(invalid_reason([b.sentence() for b in breaches] + diverged), **extra)
        if self.catch_up_s is None:
            return writer.fail(f"replicas did not catch up within {self.catch_up_timeout:g} s after the load", **extra)
        judged = all(AXES.lookup(n).counts_for_throughput for n in self.hooks)
        spoiled = interference.disturbance(extra["interference"], self.disturbed_above) \
            if self.disturbed_above and judged else None
        if spoiled:
            return writer.disturbed(f"DISTURBED: {spoiled}", **extra)
        return writer.finish(**extra)


def execute_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, **kw) -> Path:
    """One measured run of ``opts`` on ``cluster`` (``RunEngine``: see its parameters); returns the run folder."""
    return RunEngine(lab, cluster, opts, writer, **kw).execute()


def invalid_reason(sentences: list[str], most: int = 3) -> str:
    """The reason an invalid run gives: its first breaches and differences in words, and how many more there were."""
    more = f"; and {len(sentences) - most} more" if len(sentences) > most else ""
    return "INVALID: " + "; ".join(sentences[:most]) + more
