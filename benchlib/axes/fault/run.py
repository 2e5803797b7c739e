"""One fault run: a fault under load, the failover, the heal, and an audit of every acknowledged write, as explicit
steps (``FaultRun``): begin -> inject -> detect and promote -> release -> rejoin -> heal -> audit -> record.

The load is sysbench on the node that takes the writes, with the ledger writer (``benchlib.sampling.ledger``) beside
it at a fixed rate: the client that never stops writing. At ``at_s`` into the load the lab injects the fault
(``benchlib.lab.base.Fault``, through the lab's ``faults()`` capability): kill, freeze or cut of the write node, a
replica or a site. Then:

- Group Replication elects a new primary and Galera's survivors go on taking writes: a watcher asks the cluster
  every 100 ms which node takes writes (the system's ``locate``) and records when that changed;
- on an async or semi-sync cluster with ``failover = "promote"``, once the write node has not answered for
  ``detect_s`` the lab promotes the most advanced replica and the others follow it (each step timed); the ledger
  writer is told where the writes go now;
- sysbench cannot follow a failover (its connections die with the node and it does not reconnect reliably,
  akopytov/sysbench #461): when it ends, it is started again on the node that takes the writes once the ledger
  writer has had a write acknowledged there, for the rest of the load time. Its per-second throughput is therefore
  zero from the fault until that restart, then measured again; the unavailability is the ledger writer's.
- a freeze or cut is released after ``duration_s``; with ``rejoin_at_s`` a killed node starts again under the load.

After the load the lab heals (the killed node restarts and rejoins; a promoted cluster gets its original primary
back) and says how (``heal_report``); the run waits until every node has applied the same history, then audits:
the ledger on the node that took the writes last and on every other node (an acknowledged write that is absent is
**lost**), and the dataset's checksums across nodes (a node holding what the others lack is divergence). A heal
that fails stops the campaign (the lab is marked broken with the reason); what the fault itself does to the
cluster is the measurement, never a failed run.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import pymysql

from benchlib.systems import base as systems
from benchlib.campaign.folder import CampaignError
from benchlib.campaign.setup import Audit, RunSetup, dataset_tables, wait_serving
from benchlib.errors import BenchlibError
from benchlib.lab.base import Fault
from benchlib.sampling.ledger import TABLE as LEDGER_TABLE
from benchlib.sampling.ledger import LedgerReader, LedgerWriter, Router, create_table
from benchlib.sampling.probe import Sampler
from benchlib.sampling.status import LivenessProbe, SemisyncWatch, StatusLog
from benchlib.schema import INTERVALS
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.output import Interval
from benchlib.axes.fault.run_control import Controller
from benchlib.axes.fault.run_records import (Events, fault_of, ledger_audit, ledger_rows, schedule_of,
                                            semisync_summary, words as _words)
from benchlib.systems import sql
from pydantic import JsonValue

if TYPE_CHECKING:
    from benchlib.axes.fault import FaultPlan
    from benchlib.lab.base import FaultControl, Lab

__all__ = ["FaultRun", "execute_fault_run", "fault_of"]


class FaultRun(Controller):
    """One fault run of ``plan`` on ``cluster`` under ``opts``'s load, step by step (see the module docstring).
    ``before_audit(lab, survivor)`` runs after the heal, before the audit (tests tamper there)."""

    def __init__(self, lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, plan: "FaultPlan", *,
                 stall_s: float = 10.0, context: dict[str, JsonValue] | None = None,
                 on_second: Callable[[Interval, float | None], None] | None = None,
                 before_audit: Callable[["Lab", str], None] | None = None):
        self.lab, self.cluster, self.opts, self.writer, self.plan = lab, cluster, opts, writer, plan
        self.stall_s, self.context, self.on_second, self.before_audit = stall_s, context, on_second, before_audit
        self.clock = time.monotonic
        self.events = Events(self.clock)
        self.log = StatusLog()
        self.errors: list[str] = []  # what went wrong with the fault itself (the run fails, naming it)
        self.t_fault: float | None = None  # the fault's first step
        self.lost_at: float | None = None  # when the write node was lost to its cluster, and by which step
        self.lost_by = ""
        self.steps_done: list[dict[str, Any]] = []
        self.promotion: dict[str, Any] | None = None
        self.serving = ""  # the node the proxy sends the writes to
        self.stop = threading.Event()
        self.intervals: list[pd.DataFrame] = []
        self.outputs: list[str] = []
        self.front: Any = None

    # -- begin: the shared run setup, the lab's fault capability, the ledger ------------------------------------
    def begin(self) -> Path | None:
        """Set the run up; the failed run's folder when it cannot be (a node down, a lab without faults)."""
        plan, lab = self.plan, self.lab
        setup = RunSetup.begin(lab, self.cluster, self.opts, self.writer, context=self.context)
        if not isinstance(setup, RunSetup):
            return setup
        self.setup = setup
        self.how = systems.failover_of(str(setup.facts.system))
        self.schedule = schedule_of(plan, setup.nodes)
        self.fault = self.schedule[0].fault
        control = lab.faults()
        if control is None:
            return self.writer.fail(f"FAILED: the lab cannot {self.fault.kind} {plan.target}: {lab.spec.lacks('faults')}",
                                    lab=setup.lab_record())
        self.control: "FaultControl" = control
        for p in self.schedule:
            refusal = None if p.step.do == "release" else \
                control.fault_refusal(self.cluster, p.fault.kind, list(p.fault.nodes), p.fault.site)
            if refusal:
                return self.writer.fail(f"FAILED: the lab cannot {p.fault.kind} {p.step.target}: {refusal}",
                                        lab=setup.lab_record())
        with lab.connect(setup.write_node) as conn:
            create_table(conn, self.writer.run_id)
        setup.record_servers()
        how = self.how
        setup.extra["axes"] = {"fault": {  # its entry of the manifest (benchlib.axes.fault.FaultRecord)
            **plan.as_dict(), "nodes": list(self.fault.nodes), "site": self.fault.site,
            "words": "; then ".join(_words(p) for p in self.schedule) if plan.sequence else self.fault.words(),
            "failover": {"how": "promote" if plan.promote else (how.how if how and how.automatic else "none"),
                         "promise": how.promise if how else ""}}}
        self.serving = setup.write_node
        return None

    @property
    def automatic(self) -> bool:
        return self.how is not None and self.how.automatic

    # -- arm: the writers (direct, and through a proxy) and the sampler ------------------------------------------
    def arm(self) -> Path | None:
        plan, lab, setup = self.plan, self.lab, self.setup
        self.router = Router(setup.write_node, setup.infos, self.how if self.automatic else None, lab.connect)
        self.ledger = LedgerWriter(self.router, self.writer.run_id, self.clock, plan.write_rate, plan.timeout_s)
        self.writers = [self.ledger]
        self.reader = LedgerReader(self.router, self.writer.run_id, self.clock, rate=20.0, timeout_s=plan.timeout_s)
        if plan.proxy != "none":
            proxies = lab.proxy()
            if proxies is None:
                return self.writer.fail(f"FAILED: no {plan.proxy} in front of {self.cluster}: {lab.spec.lacks('proxy')}",
                                        **setup.extra)
            self.front = proxies.front(self.cluster, self.proxied_node)
            front = self.front
            behind = Router(plan.proxy, [], None, lambda _n, timeout=1.0: front.connect(timeout))
            self.writers.append(LedgerWriter(behind, f"{self.writer.run_id}~{plan.proxy}", self.clock, plan.write_rate,
                                             plan.timeout_s, via=plan.proxy))
        self.sampler = Sampler([*self.writers, self.reader, *[LivenessProbe(lab.connect, n, self.clock, interval_s=0.25,
                                                               log=self.log) for n in setup.nodes],
                                SemisyncWatch(lab.connect, setup.write_node, self.log, self.clock)])
        return None

    def proxied_node(self) -> str | None:
        """The node the proxy sends the writes to: the cluster's answer, or the lab's promotion."""
        if self.automatic:
            found = self.how.locate(lambda n: self.lab.connect(n, timeout=0.5), self.setup.infos, self.serving)
            if found is not None:
                self.serving = found
            return found
        return self.promotion["primary"] if self.promotion else self.setup.write_node

    # -- rejoin under the load ------------------------------------------------------------------------------------
    def rejoin(self) -> None:
        """Start the killed node again at rejoin_at_s under the load; then follow its lag (the newest ledger write
        it holds against the writer's acknowledgements) every 100 ms until the load ends."""
        plan, node = self.plan, self.fault.nodes[0]
        assert plan.rejoin_at_s is not None
        if self.stop.wait(max(0.0, plan.rejoin_at_s - (self.clock() - self.load_t0))):
            return
        self.events.add("rejoin_asked", node, f"{node} to start again ({plan.rejoin})")
        try:
            path = self.control.rejoin(self.cluster, node, full=plan.rejoin == "full", timeout=plan.heal_timeout_s,
                                       starting=lambda: self.events.add("rejoin_started", node,
                                                                        f"{node} starting ({plan.rejoin})"))
        except BenchlibError as exc:
            self.errors.append(f"{node} could not rejoin under the load: {exc.message}")
            return
        self.events.add("rejoined", node, path)
        conn = None
        while not self.stop.wait(0.1):
            try:
                conn = conn or self.lab.connect(node, timeout=1.0)
                newest = sql.scalar(conn, f"SELECT COALESCE(MAX(seq), 0) FROM {LEDGER_TABLE} WHERE run = %s",
                                    (self.writer.run_id,))
            except (BenchlibError, pymysql.MySQLError, OSError):
                conn = None
                continue
            now = self.clock()
            with self.ledger.lock:
                missing = [r[3] for r in self.ledger.rows if r[4] == "acked" and r[0] > int(newest)]
            self.log.add(now, node, "ledger_lag_ms", 1000 * (now - min(missing)) if missing else 0.0)
        if conn is not None:
            conn.close()

    # -- the load: sysbench, started again where the writes went --------------------------------------------------
    def load(self) -> None:
        opts, write_node = self.opts, self.setup.write_node
        target = write_node
        while True:
            left = opts.time_s - (self.clock() - self.load_t0)
            if left < 2:
                break
            seg_t0 = self.clock() - self.load_t0
            here = target

            def moved(here: str = here) -> str | None:
                return f"the writes moved to {self.router.node}" if self.router.node != here else None

            on_second = self.on_second
            loaded = self.lab.hooks.load_driver().run(here, replace(opts, time_s=max(1, int(left))), stall_s=self.stall_s,
                                                source=f"{self.writer.run_id}/raw/sysbench.txt",
                                                on_interval=(lambda iv: on_second(iv, None)) if on_second else None,
                                                abort_if=moved)
            self.outputs.append(f"# segment on {here} at {seg_t0:.1f} s: {loaded.status} {loaded.reason or ''}\n"
                                + loaded.output)
            if loaded.result is not None and not loaded.result.intervals.empty:
                seg = loaded.result.intervals.copy()
                seg["t_s"] = seg["t_s"] + seg_t0
                self.intervals.append(seg)
            if loaded.status == "ok":
                break
            self.events.add("load_ended", here, loaded.reason or loaded.status)
            # sysbench lost its node: start it again where the ledger writer gets its writes acknowledged
            while self.clock() - self.load_t0 < opts.time_s - 2:
                mark = self.clock()
                time.sleep(0.1)
                if self.ledger.acked_since(mark - 0.1) and self.lab.health.is_up(self.router.node):
                    break
            target = self.router.node
            if self.clock() - self.load_t0 < opts.time_s - 2:
                self.events.add("load_restarted", target, f"sysbench started again on {target}")

    def measure(self) -> None:
        """The sampler, the controller and the rejoiner around the load; all stopped whatever happens."""
        try:
            self.sampler.start()
        except BaseException:
            if self.front is not None:
                self.front.stop()
            raise
        self.origin = self.sampler.t0
        ctl = threading.Thread(target=self.control_loop, name="fault-controller", daemon=True)
        self.load_t0 = self.clock()
        ctl.start()
        rejoiner = threading.Thread(target=self.rejoin, name="rejoin", daemon=True) \
            if self.plan.rejoin_at_s is not None and self.fault.kind == "kill" and self.fault.nodes else None
        if rejoiner is not None:
            rejoiner.start()
        try:
            self.load()
        finally:
            self.stop.set()
            ctl.join(timeout=120)
            if rejoiner is not None:
                rejoiner.join(timeout=self.plan.heal_timeout_s)
            self.sampler.stop()
            if self.front is not None:
                self.front.stop()
        self.load_end = self.clock()
        if self.t_fault is None and not self.errors:
            self.errors.append(f"the load ended before the fault at {self.plan.at_s:g} s")
        for t, node, why in self.router.moves:
            self.events.add("writer_moved", node, why, t=t)

    # -- heal: the cluster whole again, and how it came back ----------------------------------------------------
    def settle(self, wait_s: float = 30.0) -> None:
        """After a freeze or a cut was released, give the cluster ``wait_s`` to take its nodes back by itself (a Galera
        node rejoins, an async replica reconnects); a node still not back in its role (a group member expelled while
        it was gone stays in ERROR) is killed, so that the heal restarts it and it rejoins."""
        nodes = self.setup.nodes
        deadline = time.monotonic() + wait_s
        while True:
            problems = [p for p in self.lab.health.check().problems if any(n in p for n in nodes)]
            if not problems:
                return
            if time.monotonic() > deadline:
                break
            time.sleep(1.0)
        stuck = sorted({n for n in nodes for p in problems if n in p and self.lab.health.is_up(n)})
        if stuck:
            self.control.inject("", Fault("kill", tuple(stuck)))
            self.events.add("heal", ",".join(stuck), f"not back {wait_s:g} s after the release ({problems[0]}): "
                                                     "killed, to be restarted by the heal", t=time.monotonic())

    def heal(self) -> None:
        """Heal the lab after the load (a heal that fails stops the campaign: the lab is broken)."""
        lab = self.lab
        heal_t0 = time.monotonic()
        killed = {p.step.target for p in self.schedule if p.step.do == "kill"}
        if self.promotion is None and any(p.step.do != "kill" and p.step.target not in killed for p in self.schedule):
            self.settle()  # a node that was only held may not come back by itself (a promoted cluster is rebuilt)
        lab.tuning.refresh()
        restarted: list[str] = []
        how: list[str] = []  # this run's heal only: a lab that healed itself still reports the last heal's words
        try:
            if lab.health.broken():
                restarted, how = lab.health.heal(timeout=self.plan.heal_timeout_s), lab.health.heal_report()
        except BenchlibError as exc:
            self.writer.abandon()
            raise CampaignError(f"the lab could not be healed after fault run {self.writer.run_id}: {exc.message}",
                                hint="benchlib lab status shows the nodes; benchlib lab heal retries; the campaign "
                                     "resumes when rerun", detail=exc.detail) from None
        self.healed = {"restarted": restarted, "how": how, "s": time.monotonic() - heal_t0}
        self.events.add("heal", ",".join(restarted), "; ".join(how) or "nothing to heal",
                        t=time.monotonic())

    # -- audit: every acknowledged write on the survivor, the same data on every node -----------------------------
    def audit(self) -> None:
        lab, nodes = self.lab, self.setup.nodes
        self.survivor = survivor = self.router.node
        self.refused = wait_serving(lab, nodes, timeout=60.0)
        if self.before_audit is not None:
            self.before_audit(lab, survivor)
        order = [survivor] + [n for n in nodes if n != survivor]
        # the healed cluster has its write node first again (a promoted cluster got its original primary back)
        self.checked: Audit | None = None if self.refused else self.setup.audit(
            dataset_tables(self.opts) + [LEDGER_TABLE], timeout=120.0)
        self.ledger_frame, self.counts = ledger_audit(lab, self.writers, self.ledger, self.writer.run_id, order,
                                                      self.origin)
        self.reads_frame = self.reader.frame(self.origin, ledger_rows(lab, survivor, self.writer.run_id))
        done = self.reads_frame[self.reads_frame.lost.notna()]
        self.counts["direct"].update({"reads": int(len(done)), "reads_of_lost": int(done.lost.astype(bool).sum())})

    # -- record: the run folder ----------------------------------------------------------------------------------
    def record(self) -> Path:
        w, extra, origin, counts = self.writer, self.setup.extra, self.origin, self.counts
        w.raw("sysbench.txt", "\n".join(self.outputs))
        w.frame("intervals", pd.concat(self.intervals, ignore_index=True) if self.intervals else INTERVALS.empty())
        w.frame("ledger", self.ledger_frame)
        w.frame("ledger_reads", self.reads_frame)
        w.frame("fault_events", self.events.frame(origin))
        w.frame("cluster", self.log.frame(origin))
        extra["axes"]["fault"].update({
            "happened_s": None if self.t_fault is None else self.t_fault - origin,
            "steps_done": [{**{k: v for k, v in d.items() if k not in ("planned_t", "done_t")},
                            "planned_s": d["planned_t"] - origin, "done_s": d["done_t"] - origin}
                           for d in self.steps_done],
            "semisync": semisync_summary(self.log, self.setup.write_node, self.t_fault, self.lost_at, origin),
            "promotion": self.promotion,
            "heal": self.healed,
            "survivor": self.survivor,
            "ledger": {**counts["direct"], **({"via": {k: v for k, v in counts.items() if k != "direct"}}
                                              if len(counts) > 1 else {})},
            "proxy": {"kind": self.plan.proxy, "address": f"{self.front.host}:{self.front.port}"}
            if self.front is not None else None})
        extra.update({
            "load_window_s": [self.load_t0 - origin, self.load_end - origin],
            "audit": self.checked.as_dict() if self.checked is not None else None,
            "sampler": {"errors": [(name, t, str(exc)) for name, t, exc in self.sampler.errors],
                        "skipped_ticks": dict(self.sampler.skipped)},
        })
        if self.errors:
            return w.fail("FAILED: " + "; ".join(self.errors), **extra)
        if self.refused:
            return w.fail(f"FAILED: after the heal, {self.refused}", **extra)
        return w.finish(**extra)

    def execute(self) -> Path:
        """Every step in order; returns the run folder."""
        stopped = self.begin() or self.arm()
        if stopped is not None:
            return stopped
        self.measure()
        self.heal()
        self.audit()
        return self.record()


def execute_fault_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, plan: "FaultPlan", *,
                      stall_s: float = 10.0, context: dict[str, JsonValue] | None = None,
                      on_second: Callable[[Interval, float | None], None] | None = None,
                      before_audit: Callable[["Lab", str], None] | None = None) -> Path:
    """One fault run of ``plan`` on ``cluster`` (``FaultRun``); returns the run folder."""
    return FaultRun(lab, cluster, opts, writer, plan, stall_s=stall_s, context=context, on_second=on_second,
                    before_audit=before_audit).execute()
