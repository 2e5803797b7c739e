"""One measured run on any lab: dataset once, sampling, the load through the lab's driver, the run folder.

``execute_run`` is one measured run: settings are the caller's; here the dataset is
prepared if this (workload family, tables, table size) was not prepared on this lab
yet, sampling starts, the lab's load driver runs sysbench (here or on client hosts) with
every per-second line parsed as it arrives, the shared watchdog kills a load that stalls,
whose node went down or stopped answering, sampling goes on after the load until every
node has caught up (catch-up time is a result), and the run is written to the store.
Nothing here knows which kind of lab it has (``benchlib.lab.base.Lab``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from benchlib.analysis import interference
from benchlib.axis import AXES, RunContext, Variant
from benchlib.campaign.setup import RunSetup, dataset_tables, nodes_down
from benchlib.campaign.sampling import sample
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.output import Interval
from benchlib.sysbench.process import LoadResult
from benchlib.systems import invariants
from pydantic import JsonValue

if TYPE_CHECKING:
    from benchlib.lab.base import Lab

__all__ = ["execute_run", "invalid_reason"]


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


def execute_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *, catch_up_timeout: float = 120,
                sync_timeout: float = 120, warmup_s: int = 0, stall_s: float = 10.0,
                on_interval: Callable[[Interval], None] | None = None,
                on_second: Callable[[Interval, float | None], None] | None = None,
                context: dict[str, JsonValue] | None = None, disturbed_above: float | None = None,
                axes: dict[str, Variant] | None = None) -> Path:
    """One measured run of ``opts`` on ``cluster``, written through ``writer``; returns the run folder.

    Before the measured window: the dataset (once per shape), an optional warm-up of ``warmup_s``
    seconds (its output kept as raw/warmup.txt, not measured), then sampling starts and the load
    waits until every node has seen a heartbeat (in sync; the wait is recorded). During the load a
    node going down kills the run (FAILED, the reason names the node). ``on_second(interval, lag_ms)``
    gets each per-second line with the cluster's current replica lag, for progress displays.
    ``context`` (campaign, host facts, revision) is recorded in the manifest as given. What took the host's CPU
    from the lab over the load window is recorded (``interference``); with ``disturbed_above``, a run that lost more
    than that share of it is kept as DISTURBED with the evidence (statistics leave it out; the campaign redoes it).
    ``axes``: axis -> this run's variant, for the registered axes that act beside the load
    (``benchlib.axis.AxisRun``: the stale-read probe, the read split, one of your own): their probes sample
    with the run's, they start with the load, their watchdog can stop it, they join its result and stop after the
    catch-up; their tables are audited, their frames, raw files and manifest entries written with the run.
    """
    setup = RunSetup.begin(lab, cluster, opts, writer, context=context, serving_timeout=min(sync_timeout, 30.0))
    if not isinstance(setup, RunSetup):
        return setup
    nodes, write_node, facts, extra = setup.nodes, setup.write_node, setup.facts, setup.extra
    driver = lab.hooks.load_driver()
    extra["warmup_s"] = warmup_s
    ctx = RunContext(lab, cluster, nodes, str(facts.system), opts, writer.run_id, axes=dict(axes or {}), driver=driver,
                     stall_s=stall_s)
    contexts = {name: replace(ctx, variant=variant) for name, variant in ctx.axes.items()}
    built = {name: AXES.lookup(name).run(c) for name, c in contexts.items()}
    hooks = {name: hook for name, hook in built.items() if hook is not None}
    extra["axes"] = {name: h.manifest() for name, h in hooks.items()}  # each axis's entry, by its name
    if warmup_s > 0:
        warm = driver.run(write_node, replace(opts, time_s=warmup_s, histogram=False), stall_s=stall_s,
                          source=f"{writer.run_id}/raw/warmup.txt", abort_if=lambda: nodes_down(lab, nodes))
        writer.raw("warmup.txt", warm.output)
        if warm.status != "ok":
            return writer.fail(f"{warm.status.upper()} during warm-up: {warm.reason}", **extra)
    setup.record_servers()
    facts = setup.facts
    try:
        sampling = sample(lab, [setup.target], extra=[p for h in hooks.values() for p in h.probes()])
        sampling.start()
    except BaseException:
        for h in hooks.values():
            h.close()
        raise

    def outside() -> str | None:
        return nodes_down(lab, nodes) or sampling.unresponsive(stall_s)

    def trouble() -> str | None:
        return outside() or next((why for h in hooks.values() if (why := h.failed())), None)

    def each_second(iv: Interval) -> None:
        if on_interval:
            on_interval(iv)
        if on_second:
            on_second(iv, sampling.current_lag_ms())

    try:
        in_sync = sampling.wait_caught_up(sync_timeout)
        off = setup.semisync_back_on(min(sync_timeout, 30.0)) if in_sync is not None else None
        load_t0 = sampling.now()
        if in_sync is None or off:
            loaded = LoadResult("failed", off or f"nodes not in sync {sync_timeout:g} s before the load", "", None)
        else:
            for c in contexts.values():
                c.outside = outside
            for h in hooks.values():
                h.start()
            loaded = driver.run(write_node, opts, on_interval=each_second, stall_s=stall_s,
                                source=f"{writer.run_id}/raw/sysbench.txt", abort_if=trouble)
            for h in hooks.values():
                loaded = h.join(loaded)
            if loaded.status != "ok":
                loaded = _name_the_cause(loaded, trouble)
        load_end = sampling.now()
        bounds = (sampling.wait_catch_up(sampling.origin + load_end, catch_up_timeout, give_up=trouble)
                  if loaded.status == "ok" else None)
        if isinstance(bounds, str):  # a node went down or stopped answering while the others caught up
            loaded = replace(loaded, status="failed", reason=f"{bounds} (after the load, during catch-up)")
            bounds = None
        catch_up = bounds[1] if bounds else None
        said = [f"{name}: {why}" for name, why in ((n, h.stop()) for n, h in hooks.items()) if why]
        if said and loaded.status == "ok":
            loaded = replace(loaded, status="failed", reason="; ".join(said))
    finally:
        for h in hooks.values():
            h.close()
        sampling.stop()
    writer.raw("sysbench.txt", loaded.output)
    for host, text in loaded.outputs.items():
        writer.raw(f"sysbench-{host}.txt", text)
    result = loaded.result  # parsed live as the lines arrived; partial frames are kept for failed runs
    if result is not None:
        writer.frame("intervals", result.intervals)
        writer.frame("histogram", result.histogram)
    for name, h in hooks.items():
        for file, text in h.raws().items():
            writer.raw(file, text)
        for kind, frame in h.frames(sampling.origin).items():
            writer.frame(kind, frame)
        extra["axes"][name] = h.manifest()
    lag = sampling.lag_frame()
    if not lag.empty:
        writer.frame("lag", lag)
    cluster_frame = sampling.cluster_frame()
    writer.frame("cluster", cluster_frame)
    audited = None
    if loaded.status == "ok" and catch_up is not None:  # every node holds what the write node holds
        audited = setup.audit(dataset_tables(opts) + [t for h in hooks.values() for t in h.tables()])
        extra["audit"] = audited.as_dict()
    if loaded.status == "ok":
        extra["interference"] = interference.of_run(cluster_frame, (load_t0, load_end))
    extra.update({
        "in_sync_wait_s": in_sync,
        "load_window_s": [load_t0, load_end],
        "catch_up_s": catch_up,  # upper bound: every node saw the first heartbeat after the load
        "catch_up_low_s": bounds[0] if bounds else None,  # lower bound (the last heartbeat before the end)
        "sampler": {"errors": sampling.errors(), "skipped_ticks": sampling.skipped(), "warnings": sampling.warnings},
    })
    if result is not None and result.summary:
        extra["summary"] = result.summary
    if loaded.client_hosts:
        extra["client_hosts"] = loaded.client_hosts
    if sampling.offsets():
        extra["clock_offsets"] = sampling.offsets()
    if loaded.status != "ok":
        return writer.fail(f"{loaded.status.upper()}: {loaded.reason}", **extra)
    # the cluster held its mode through the load (each system's invariants, on the samples just taken): a member
    # that left the group is why its catch-up never ends, so an invalid run says so before a missing catch-up
    breaches = invariants.check(cluster_frame, invariants.Window(nodes, load_t0, load_end),
                                setup.system.invariants)
    on_purpose = [(n, t0 - sampling.origin, t1 - sampling.origin) for h in hooks.values() for n, t0, t1 in h.excused()]
    breaches = invariants.excuse(breaches, load_t0, on_purpose)
    diverged = audited.mismatches if audited is not None else []
    if breaches or diverged:
        extra["breaches"] = [b.as_dict() for b in breaches]
        return writer.invalid(invalid_reason([b.sentence() for b in breaches] + diverged), **extra)
    if catch_up is None:
        return writer.fail(f"replicas did not catch up within {catch_up_timeout:g} s after the load", **extra)
    spoiled = interference.disturbance(extra["interference"], disturbed_above) if disturbed_above else None
    if spoiled:
        return writer.disturbed(f"DISTURBED: {spoiled}", **extra)
    return writer.finish(**extra)


def invalid_reason(sentences: list[str], most: int = 3) -> str:
    """The reason an invalid run gives: its first breaches and differences in words, and how many more there were."""
    more = f"; and {len(sentences) - most} more" if len(sentences) > most else ""
    return "INVALID: " + "; ".join(sentences[:most]) + more
