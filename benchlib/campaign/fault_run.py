"""One fault run: a fault under load, the failover, the heal, and an audit of every acknowledged write.

The load is sysbench on the node that takes the writes, with the ledger writer (``benchlib.sampling.ledger``) beside
it at a fixed rate: the client that never stops writing. At ``at_s`` into the load the lab injects the fault
(``benchlib.lab.base.Fault``): kill, freeze or cut of the write node, a replica or a site. Then:

- Group Replication elects a new primary and Galera's survivors go on taking writes: a watcher asks the cluster
  every 100 ms which node takes writes (``benchlib.systems.failover``) and records when that changed;
- on an async or semi-sync cluster with ``failover = "promote"``, once the write node has not answered for
  ``detect_s`` the lab promotes the most advanced replica and the others follow it (each step timed); the ledger
  writer is told where the writes go now;
- sysbench cannot follow a failover (its connections die with the node and it does not reconnect reliably,
  akopytov/sysbench #461): when it ends, it is started again on the node that takes the writes once the ledger
  writer has had a write acknowledged there, for the rest of the load time. Its per-second throughput is therefore
  zero from the fault until that restart, then measured again; the unavailability is the ledger writer's.
- a freeze or cut is released after ``duration_s``.

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
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import pymysql

from benchlib.campaign.audit import audit, dataset_tables
from benchlib.campaign.run import nodes_down, prepare_dataset, wait_serving
from benchlib.campaign.folder import CampaignError
from benchlib.errors import BenchlibError
from benchlib.lab.base import Fault
from benchlib.manifest import LabFacts
from benchlib.sampling.ledger import TABLE as LEDGER_TABLE
from benchlib.sampling.ledger import LedgerWriter, Router, create_table
from benchlib.sampling.probe import Sampler
from benchlib.sampling.status import LivenessProbe, StatusLog
from benchlib.schema import FAULT_EVENTS, INTERVALS
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.output import Interval
from benchlib import systems
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.campaign.spec import FaultPlan
    from benchlib.lab.base import Lab

__all__ = ["execute_fault_run", "fault_of"]


def fault_of(plan: "FaultPlan", cluster: str, nodes: list[str]) -> Fault:
    """The lab's fault for a planned one: its target resolved to nodes (write node, last replica) or a site."""
    if plan.target.startswith("site:"):
        return Fault(plan.kind, (), plan.target[5:])
    return Fault(plan.kind, (nodes[0],) if plan.target == "write_node" else (nodes[-1],))


class _Events:
    def __init__(self, clock: Callable[[], float]):
        self.clock, self.rows, self.lock = clock, [], threading.Lock()

    def add(self, event: str, node: str = "", detail: str = "", t: float | None = None) -> None:
        with self.lock:
            self.rows.append((self.clock() if t is None else t, event, node, detail))

    def frame(self, origin: float) -> pd.DataFrame:
        rows = sorted(self.rows)
        return FAULT_EVENTS.frame({"t_s": [r[0] - origin for r in rows], "event": [r[1] for r in rows],
                                   "node": [r[2] for r in rows], "detail": [r[3] for r in rows]})


def _ledger_rows(lab: "Lab", node: str, run: str) -> set[int] | None:
    try:
        with lab.connect(node) as conn:
            return {int(r["seq"]) for r in sql.query(conn, f"SELECT seq FROM {LEDGER_TABLE} WHERE run = %s", (run,))}
    except (BenchlibError, pymysql.MySQLError, OSError):
        return None


def _settle(lab: "Lab", nodes: list[str], events: _Events, wait_s: float = 30.0) -> None:
    """After a freeze or a cut was released, give the cluster ``wait_s`` to take its nodes back by itself (a Galera
    node rejoins, an async replica reconnects); a node still not back in its role (a group member expelled while it
    was gone stays in ERROR) is killed, so that the heal restarts it and it rejoins."""
    deadline = time.monotonic() + wait_s
    while True:
        problems = [p for p in lab.check().problems if any(n in p for n in nodes)]
        if not problems:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(1.0)
    stuck = sorted({n for n in nodes for p in problems if n in p and lab.is_up(n)})
    if stuck:
        lab.inject("", Fault("kill", tuple(stuck)))
        events.add("heal", ",".join(stuck), f"not back {wait_s:g} s after the release ({problems[0]}): killed, "
                                           "to be restarted by the heal", t=time.monotonic())


def execute_fault_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, plan: "FaultPlan", *,
                      stall_s: float = 10.0, context: dict[str, Any] | None = None,
                      on_second: Callable[[Interval, float | None], None] | None = None,
                      before_audit: Callable[["Lab", str], None] | None = None) -> Path:
    """One fault run of ``plan`` on ``cluster`` under ``opts``'s load (see the module docstring); returns the run
    folder. ``before_audit(lab, survivor)`` runs after the heal, before the audit (tests tamper there)."""
    infos = lab.cluster_nodes(cluster)
    nodes = [n.name for n in infos]
    write_node = nodes[0]
    facts = lab.facts(cluster)
    how = systems.failover_of(facts.system)
    fault = fault_of(plan, cluster, nodes)
    lab_record = LabFacts(name=lab.name, kind=lab.kind, cluster=cluster, topology=facts.topology, system=facts.system,
                          nodes=nodes, settings=lab.settings(cluster), facts=facts).model_dump(mode="json")
    refused = nodes_down(lab, nodes) or wait_serving(lab, nodes, timeout=30.0)
    if refused:
        return writer.fail(f"FAILED: {refused}", lab=lab_record)
    refusal = lab.fault_refusal(cluster, fault.kind, list(fault.nodes), fault.site)
    if refusal:
        return writer.fail(f"FAILED: the lab cannot {fault.kind} {plan.target}: {refusal}", lab=lab_record)
    prepare_dataset(lab, write_node, opts)
    with lab.connect(write_node) as conn:
        create_table(conn, writer.run_id)
    variables = {}
    for n in nodes:
        with lab.connect(n) as conn:
            variables[n] = sql.global_variables(conn, systems.get(facts.system).server_variables)
    extra: dict[str, Any] = {**(context or {}), "sysbench": asdict(opts), "lab": lab_record,
                             "server_variables": variables,
                             "fault": {**plan.as_dict(), "nodes": list(fault.nodes), "site": fault.site,
                                       "words": fault.words()},
                             "failover": {"how": "promote" if plan.promote else (how.how if how and how.automatic
                                                                                 else "none"),
                                          "promise": how.promise if how else ""}}

    clock = time.monotonic
    log = StatusLog()
    router = Router(write_node, infos, how if how and how.automatic else None, lab.connect)
    ledger = LedgerWriter(router, writer.run_id, clock, plan.write_rate, plan.timeout_s)
    state: dict[str, Any] = {"t_fault": None, "promotion": None, "errors": [], "serving": write_node}
    writers = [ledger]
    front = None
    if plan.proxy != "none":
        def serving() -> str | None:
            """The node the proxy sends the writes to: the cluster's answer, or the lab's promotion."""
            if how is not None and how.automatic:
                found = how.locate(lambda n: lab.connect(n, timeout=0.5), infos, state["serving"])
                if found is not None:
                    state["serving"] = found
                return found
            return state["promotion"]["primary"] if state["promotion"] else write_node

        front = lab.front(cluster, serving)
        behind = Router(plan.proxy, [], None, lambda _n, timeout=1.0: front.connect(timeout))
        writers.append(LedgerWriter(behind, f"{writer.run_id}~{plan.proxy}", clock, plan.write_rate, plan.timeout_s,
                                    via=plan.proxy))
    sampler = Sampler([*writers, *[LivenessProbe(lab.connect, n, clock, interval_s=0.25, log=log) for n in nodes]])
    events = _Events(clock)
    intervals: list[pd.DataFrame] = []
    outputs: list[str] = []
    stop = threading.Event()

    def controller() -> None:
        """Inject at at_s, promote where asked, release after duration_s; watch which node takes the writes."""
        t_start = clock()
        if stop.wait(plan.at_s):
            return
        try:
            lab.inject(cluster, fault)
        except BenchlibError as exc:
            state["errors"].append(f"the fault could not be injected: {exc.message}")
            return
        state["t_fault"] = clock()
        events.add("fault", ",".join(fault.nodes) or (fault.site or ""), fault.words())
        released = fault.kind == "kill"
        primary = write_node
        promoted = False
        while not stop.is_set():
            now = clock()
            if not released and now - state["t_fault"] >= plan.duration_s:
                try:
                    lab.release(cluster, fault)
                    events.add("released", ",".join(fault.nodes) or (fault.site or ""),
                               {"freeze": "SIGCONT", "cut": "link up"}.get(fault.kind, ""))
                except BenchlibError as exc:
                    state["errors"].append(f"the fault could not be released: {exc.message}")
                released = True
            if plan.promote and not promoted and write_node in fault.nodes \
                    and now - max(ledger.last_ack if ledger.last_ack == ledger.last_ack else t_start, state["t_fault"]) \
                    >= plan.detect_s:
                promoted = True
                t0 = clock()
                events.add("step", write_node, f"{write_node} silent for {plan.detect_s:g} s: promoting")
                try:
                    done = lab.promote(cluster, write_node, timeout=60.0)
                except BenchlibError as exc:
                    state["errors"].append(f"the promotion failed: {exc.message}")
                else:
                    for step, dt in done.steps:
                        events.add("step", done.primary, step, t=t0 + dt)
                    state["promotion"] = {"primary": done.primary, "steps": [list(s) for s in done.steps],
                                          "held": done.discarded}
                    router.set(done.primary, clock(), f"promoted {done.primary}")
            if how is not None and how.automatic:
                try:
                    found = how.locate(lambda n: lab.connect(n, timeout=0.5), infos, primary)
                except Exception:  # noqa: BLE001
                    found = None
                if found is not None and found != primary:
                    primary = found
                    events.add("primary", found, f"{found} takes the writes ({how.how})")
            elif state["promotion"] and primary != state["promotion"]["primary"]:
                primary = state["promotion"]["primary"]
                events.add("primary", primary, f"{primary} takes the writes (promoted)")
            stop.wait(0.1)

    def rejoin() -> None:
        """Start the killed node again at rejoin_at_s under the load; then follow its lag (the newest ledger write
        it holds against the writer's acknowledgements) every 100 ms until the load ends."""
        node = fault.nodes[0]
        if stop.wait(max(0.0, plan.rejoin_at_s - (clock() - load_t0))):
            return
        events.add("rejoin_asked", node, f"{node} to start again ({plan.rejoin})")
        try:
            path = lab.rejoin(cluster, node, full=plan.rejoin == "full", timeout=plan.heal_timeout_s,
                              starting=lambda: events.add("rejoin_started", node, f"{node} starting ({plan.rejoin})"))
        except BenchlibError as exc:
            state["errors"].append(f"{node} could not rejoin under the load: {exc.message}")
            return
        events.add("rejoined", node, path)
        conn = None
        while not stop.wait(0.1):
            try:
                conn = conn or lab.connect(node, timeout=1.0)
                newest = sql.scalar(conn, f"SELECT COALESCE(MAX(seq), 0) FROM {LEDGER_TABLE} WHERE run = %s",
                                    (writer.run_id,))
            except (BenchlibError, pymysql.MySQLError, OSError):
                conn = None
                continue
            now = clock()
            with ledger.lock:
                missing = [r[3] for r in ledger.rows if r[4] == "acked" and r[0] > int(newest)]
            log.add(now, node, "ledger_lag_ms", 1000 * (now - min(missing)) if missing else 0.0)
        if conn is not None:
            conn.close()

    try:
        sampler.start()
    except BaseException:
        if front is not None:
            front.stop()
        raise
    origin = sampler.t0
    ctl = threading.Thread(target=controller, name="fault-controller", daemon=True)
    load_t0 = clock()
    ctl.start()
    rejoiner = threading.Thread(target=rejoin, name="rejoin", daemon=True) \
        if plan.rejoin_at_s is not None and fault.kind == "kill" and fault.nodes else None
    if rejoiner is not None:
        rejoiner.start()
    try:
        target = write_node
        while True:
            left = opts.time_s - (clock() - load_t0)
            if left < 2:
                break
            seg_t0 = clock() - load_t0
            here = target

            def moved(here: str = here) -> str | None:
                return f"the writes moved to {router.node}" if router.node != here else None

            loaded = lab.load_driver().run(here, replace(opts, time_s=max(1, int(left))), stall_s=stall_s,
                                           source=f"{writer.run_id}/raw/sysbench.txt",
                                           on_interval=(lambda iv: on_second(iv, None)) if on_second else None,
                                           abort_if=moved)
            outputs.append(f"# segment on {here} at {seg_t0:.1f} s: {loaded.status} {loaded.reason or ''}\n"
                           + loaded.output)
            if loaded.result is not None and not loaded.result.intervals.empty:
                seg = loaded.result.intervals.copy()
                seg["t_s"] = seg["t_s"] + seg_t0
                intervals.append(seg)
            if loaded.status == "ok":
                break
            events.add("load_ended", here, loaded.reason or loaded.status)
            # sysbench lost its node: start it again where the ledger writer gets its writes acknowledged
            while clock() - load_t0 < opts.time_s - 2:
                mark = clock()
                time.sleep(0.1)
                if ledger.acked_since(mark - 0.1) and lab.is_up(router.node):
                    break
            target = router.node
            if clock() - load_t0 < opts.time_s - 2:
                events.add("load_restarted", target, f"sysbench started again on {target}")
    finally:
        stop.set()
        ctl.join(timeout=120)
        if rejoiner is not None:
            rejoiner.join(timeout=plan.heal_timeout_s)
        sampler.stop()
        if front is not None:
            front.stop()
    load_end = clock()
    if state["t_fault"] is None and not state["errors"]:
        state["errors"].append(f"the load ended before the fault at {plan.at_s:g} s")
    for t, node, why in router.moves:
        events.add("writer_moved", node, why, t=t)

    # heal, then audit on the healed cluster
    heal_t0 = time.monotonic()
    if fault.kind != "kill":
        _settle(lab, nodes, events)
    lab.refresh()
    try:
        restarted = lab.heal(timeout=plan.heal_timeout_s) if lab.broken() else []
    except BenchlibError as exc:
        writer.abandon()
        raise CampaignError(f"the lab could not be healed after fault run {writer.run_id}: {exc.message}",
                            hint="benchlib lab status shows the nodes; benchlib lab heal retries; the campaign "
                                 "resumes when rerun", detail=exc.detail) from None
    heal = {"restarted": restarted, "how": lab.heal_report(), "s": time.monotonic() - heal_t0}
    events.add("heal", ",".join(restarted), "; ".join(heal["how"]) or "nothing to heal", t=time.monotonic())
    survivor = router.node
    refused = wait_serving(lab, nodes, timeout=60.0)
    if before_audit is not None:
        before_audit(lab, survivor)
    order = [survivor] + [n for n in nodes if n != survivor]
    # the healed cluster has its write node first again (a promoted cluster got its original primary back)
    checked = audit(lab, cluster, nodes, dataset_tables(opts) + [LEDGER_TABLE], timeout=120.0) if not refused \
        else None
    frames, counts = [], {}
    for w in writers:
        key = writer.run_id if w is ledger else f"{writer.run_id}~{w.via}"
        held = {n: _ledger_rows(lab, n, key) for n in order}
        present = held.get(survivor)
        frame = w.frame(origin, present)
        frames.append(frame)
        acked = frame[frame["outcome"] == "acked"]
        lost = sorted(set(acked["seq"]) - present) if present is not None else []
        phantoms = sorted(set(frame.loc[frame["outcome"] != "acked", "seq"]) & present) if present is not None else []
        missing = {n: len(set(acked["seq"]) - rows) for n, rows in held.items() if rows is not None and n != survivor}
        counts[w.via] = {"writes": len(frame), "acked": len(acked),
                         "failed": int((frame["outcome"] == "failed").sum()),
                         "unknown": int((frame["outcome"] == "unknown").sum()), "lost": len(lost),
                         "lost_seqs": lost[:50], "phantoms": len(phantoms), "audited_on": survivor,
                         "missing_on": missing}
    frame = pd.concat(frames, ignore_index=True)

    writer.raw("sysbench.txt", "\n".join(outputs))
    writer.frame("intervals", pd.concat(intervals, ignore_index=True) if intervals else INTERVALS.empty())
    writer.frame("ledger", frame)
    writer.frame("fault_events", events.frame(origin))
    writer.frame("cluster", log.frame(origin))
    extra.update({
        "load_window_s": [load_t0 - origin, load_end - origin],
        "fault_at_s": None if state["t_fault"] is None else state["t_fault"] - origin,
        "promotion": state["promotion"],
        "heal": heal,
        "survivor": survivor,
        "ledger": {**counts["direct"], **({"via": {k: v for k, v in counts.items() if k != "direct"}}
                                          if len(counts) > 1 else {})},
        "proxy": {"kind": plan.proxy, "address": f"{front.host}:{front.port}"} if front is not None else None,
        "audit": checked.as_dict() if checked is not None else None,
        "sampler": {"errors": [(name, t, str(exc)) for name, t, exc in sampler.errors],
                    "skipped_ticks": dict(sampler.skipped)},
    })
    if state["errors"]:
        return writer.fail("FAILED: " + "; ".join(state["errors"]), **extra)
    if refused:
        return writer.fail(f"FAILED: after the heal, {refused}", **extra)
    return writer.finish(**extra)
