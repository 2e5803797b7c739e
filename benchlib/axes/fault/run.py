"""A fault run: the fault axis's hook into the run engine (``benchlib.campaign.run``): a fault under load, the failover,
the heal, and an audit of every acknowledged write, as the engine's steps (``FaultHook``): begin (the lab can do
it, the ledger table, a proxy) -> probes (the ledger writers and reader, the semi-sync watch) -> start (the schedule
and the rejoin, on threads of their own) -> the load, which follows the writes -> join -> after_load (the heal) ->
audit (the ledger on every node) -> frames and manifest.

The load is sysbench on the node that takes the writes, with the ledger writer (``run_ledger``) beside
it at a fixed rate: the client that never stops writing. At ``at_s`` into the load the lab injects the fault
(``benchlib.lab.base.Fault``, through the lab's ``faults()`` capability): kill, freeze or cut of the write node, a
replica or a site. Then:

- Group Replication elects a new primary and Galera's survivors go on taking writes: a watcher asks the cluster
  every 100 ms which node takes writes (the system's ``locate``) and records when that changed;
- on an async or semi-sync cluster with ``failover = "promote"``, once the write node has not answered for
  ``detect_s`` the lab promotes the most advanced replica and the others follow it (each step timed); the ledger
  writer is told where the writes go now;
- the engine's load follows the writes (``writes_to``): sysbench ends when they move and starts again where they
  went once the ledger writer has had a write acknowledged there (``writable``), for the rest of the load time. Its
  per-second throughput is therefore zero from the fault until that restart, then measured again; the
  unavailability is the ledger writer's.
- a freeze or cut is released after ``duration_s``; with ``rejoin_at_s`` a killed node starts again under the load.

After the load the lab heals (the killed node restarts and rejoins; a promoted cluster gets its original primary
back) and says how (``heal_report``); the engine waits until every node serves and has applied the same history and
audits the dataset's checksums across nodes (a node holding what the others lack is divergence); then the ledger is
audited on the node that took the writes last and on every other node (an acknowledged write that is absent is
**lost**). A heal that fails stops the campaign (the lab is marked broken with the reason); what the fault itself
does to the cluster is the measurement, never a failed run.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import pymysql

from benchlib.axis import AxisRun, RunContext
from benchlib.systems import base as systems
from benchlib.campaign.folder import CampaignError
from benchlib.campaign.run import RunEngine
from benchlib.errors import BenchlibError
from benchlib.lab.base import Fault
from benchlib.axes.fault.run_ledger import TABLE as LEDGER_TABLE
from benchlib.axes.fault.run_ledger import LedgerReader, LedgerWriter, Router, create_table
from benchlib.sampling.probe import Sampler
from benchlib.sampling.status import SemisyncWatch, StatusLog
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.sysbench.process import LoadResult
from benchlib.axes.fault.run_control import Controller
from benchlib.axes.fault.run_records import (Events, fault_of, ledger_audit, ledger_rows, schedule_of,
                                            semisync_summary, words as _words)
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.axes.fault import FaultPlan
    from benchlib.lab.base import FaultControl, Lab

#: how a group member's readiness says it is back in the group but still in offline_mode (benchlib.systems)
OFFLINE_MODE = "offline_mode is still ON"

__all__ = ["FaultHook", "execute_fault_run", "fault_of"]


class FaultHook(AxisRun, Controller):
    """The fault axis's hook of one run of ``ctx.variant`` (a ``FaultPlan``), step by step (see the module
    docstring). ``before_audit(lab, survivor)`` runs after the heal, before the audit (tests tamper there)."""

    breaks = True

    def __init__(self, ctx: RunContext, before_audit: Callable[["Lab", str], None] | None = None):
        self.ctx = ctx
        self.lab, self.cluster = ctx.lab, ctx.cluster
        self.run_id = ctx.run_id
        self.plan = ctx.variant.drawn(ctx.run_id)  # its moment, drawn for this run when [fault] gives a range
        self.setup = ctx.setup
        self.before_audit = before_audit
        self.clock = time.monotonic
        self.events = Events(self.clock)
        self.log = StatusLog()  # its rows join the run's cluster frame
        self.errors: list[str] = []  # what went wrong with the fault itself (the run fails, naming it)
        self.t_fault: float | None = None  # the fault's first step
        self.lost_at: float | None = None  # when the write node was lost to its cluster, and by which step
        self.lost_by = ""
        self.steps_done: list[dict[str, Any]] = []
        self.promotion: dict[str, Any] | None = None
        self.serving = ""  # the node the proxy sends the writes to
        self.halt = threading.Event()  # the load ended: the controller and the rejoiner stop
        self.front: Any = None
        self.sampler: Sampler | None = None
        self.entry: dict[str, Any] = {}
        self.healed: dict[str, Any] | None = None
        self.errant: dict[str, Any] | None = None  # a promoted cluster's old primary before the heal
        self.switched: dict[str, Any] | None = None  # a switchover's new primary, steps and duration
        self.idle: Any = None  # the connection holding a transaction open on the old primary (switchover)
        self.idle_words = ""
        self.survivor: str | None = None
        self.threads: list[threading.Thread] = []

    # -- begin: the lab's fault capability, the ledger, the proxy -------------------------------------------------
    def begin(self) -> str | None:
        plan, lab, setup = self.plan, self.lab, self.setup
        self.how = systems.failover_of(str(setup.facts.system))
        self.schedule = schedule_of(plan, setup.nodes)
        self.fault = self.schedule[0].fault
        self.serving = setup.write_node
        how = self.how
        self.entry = {  # its entry of the manifest (benchlib.axes.fault.FaultRecord)
            **plan.as_dict(), "nodes": list(self.fault.nodes), "site": self.fault.site,
            "words": "; then ".join(_words(p) for p in self.schedule) if plan.sequence else self.fault.words(),
            "failover": {"how": "promote" if plan.promote else (how.how if how and how.automatic else "none"),
                         "promise": how.promise if how else ""}}
        control = lab.faults()
        if control is None:
            return f"the lab cannot {self.fault.kind} {plan.target}: {lab.spec.lacks('faults')}"
        self.control: "FaultControl" = control
        for p in self.schedule:
            refusal = None if p.step.do == "release" else \
                control.fault_refusal(self.cluster, p.fault.kind, list(p.fault.nodes), p.fault.site)
            if refusal:
                return f"the lab cannot {p.fault.kind} {p.step.target}: {refusal}"
        with lab.connect(setup.write_node) as conn:
            create_table(conn, self.run_id)
        # the ledger writes as an application does: with the load's account, which a read-only node refuses
        self.router = Router(setup.write_node, setup.infos, self.how if self.automatic else None,
                             lab.hooks.client_connect())
        self.ledger = LedgerWriter(self.router, self.run_id, self.clock, plan.write_rate, plan.timeout_s)
        self.writers = [self.ledger]
        self.reader = LedgerReader(self.router, self.run_id, self.clock, rate=20.0, timeout_s=plan.timeout_s)
        if plan.proxy != "none":
            proxies = lab.proxy()
            if proxies is None:
                return f"no {plan.proxy} in front of {self.cluster}: {lab.spec.lacks('proxy')}"
            self.front = proxies.front(self.cluster, self.proxied_node, plan.proxy)
            front = self.front
            behind = Router(plan.proxy, [], None, lambda _n, timeout=1.0: front.connect(timeout))
            self.writers.append(LedgerWriter(behind, f"{self.run_id}~{plan.proxy}", self.clock, plan.write_rate,
                                             plan.timeout_s, via=plan.proxy))
        return None

    @property
    def automatic(self) -> bool:
        return self.how is not None and self.how.automatic

    def proxied_node(self) -> str | None:
        """The node the proxy sends the writes to: the cluster's answer, or the lab's promotion."""
        if self.automatic:
            found = self.how.locate(lambda n: self.lab.connect(n, timeout=0.5), self.setup.infos, self.serving)
            if found is not None:
                self.serving = found
            return found
        return self.promotion["primary"] if self.promotion else self.setup.write_node

    def tables(self) -> list[str]:
        return [LEDGER_TABLE]

    # -- the load window: its own writers and the schedule, on threads of their own -------------------------------
    def start(self) -> None:
        """The ledger writers, the reader and the semi-sync watch start (a sampler of their own: they stop with the
        load), then the controller and, with ``rejoin_at_s``, the rejoiner."""
        self.sampler = Sampler([*self.writers, self.reader,
                                SemisyncWatch(self.lab.connect, self.setup.write_node, self.log, self.clock)])
        self.sampler.start()
        if self.plan.open_transaction:
            self.open_idle_transaction()
        self.load_t0 = self.clock()
        self.threads = [threading.Thread(target=self.control_loop, name="fault-controller", daemon=True)]
        if self.plan.rejoin_at_s is not None and self.fault.kind == "kill" and self.fault.nodes:
            self.threads.append(threading.Thread(target=self.rejoin, name="rejoin", daemon=True))
        for t in self.threads:
            t.start()

    def open_idle_transaction(self) -> None:
        """A client that opened a transaction on the write node, wrote a row in it and went idle (a session an
        application forgot): the switchover waits for it."""
        node = self.setup.write_node
        with self.lab.connect(node) as conn:
            sql.execute(conn, "CREATE TABLE IF NOT EXISTS benchlib.idle_transaction (id INT PRIMARY KEY, n INT)",
                        "INSERT IGNORE INTO benchlib.idle_transaction VALUES (1, 0)")
        self.idle = self.lab.connect(node)
        sql.execute(self.idle, "SET SESSION autocommit = 0", "START TRANSACTION",
                    "UPDATE benchlib.idle_transaction SET n = n + 1 WHERE id = 1")
        self.events.add("step", node, "a transaction opened and left idle on it")

    def close_idle_transaction(self) -> None:
        """After the load: whether the switchover disconnected the idle transaction's client."""
        if self.idle is None:
            return
        try:
            self.idle.rollback()
            self.idle_words = "still open after the switchover (rolled back by benchlib)"
        except pymysql.MySQLError:
            self.idle_words = "its client disconnected by the switchover"
        finally:
            try:
                self.idle.close()
            except Exception:  # noqa: BLE001 - a connection the server already closed
                pass
            self.idle = None

    def writes_to(self) -> str | None:
        return self.router.node

    def writable(self, since: float) -> bool:
        return self.ledger.acked_since(since)

    def load_event(self, event: str, node: str, words: str) -> None:
        self.events.add(event, node, words)

    def join(self, loaded: LoadResult) -> LoadResult:
        self.halt.set()
        for t in self.threads:
            t.join(timeout=120 if t.name == "fault-controller" else self.plan.heal_timeout_s)
        if self.sampler is not None:
            self.sampler.stop()
        if self.front is not None:
            self.front.stop()
        self.close_idle_transaction()
        if self.t_fault is None and not self.errors:
            self.errors.append(f"the load ended before the fault at {self.plan.at_s:g} s")
        for t, node, why in self.router.moves:
            self.events.add("writer_moved", node, why, t=t)
        return loaded

    # -- rejoin under the load ------------------------------------------------------------------------------------
    def rejoin(self) -> None:
        """Start the killed node again at rejoin_at_s under the load; then follow its lag (the newest ledger write
        it holds against the writer's acknowledgements) every 100 ms until the load ends."""
        plan, node = self.plan, self.fault.nodes[0]
        assert plan.rejoin_at_s is not None
        if self.halt.wait(max(0.0, plan.rejoin_at_s - (self.clock() - self.load_t0))):
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
        while not self.halt.wait(0.1):
            try:
                conn = conn or self.lab.connect(node, timeout=1.0)
                newest = sql.scalar(conn, f"SELECT COALESCE(MAX(seq), 0) FROM {LEDGER_TABLE} WHERE run = %s",
                                    (self.run_id,))
            except (BenchlibError, pymysql.MySQLError, OSError):
                conn = None
                continue
            now = self.clock()
            with self.ledger.lock:
                missing = [r[3] for r in self.ledger.rows if r[4] == "acked" and r[0] > int(newest)]
            self.log.add(now, node, "ledger_lag_ms", 1000 * (now - min(missing)) if missing else 0.0)
        if conn is not None:
            conn.close()

    # -- after the load: the cluster whole again, and how it came back --------------------------------------------
    def settle(self, wait_s: float = 30.0) -> None:
        """After a freeze or a cut was released, give the cluster ``wait_s`` to take its nodes back by itself (a Galera
        node rejoins, an async replica reconnects); a node still not back in its role (a group member expelled while
        it was gone stays in ERROR) is killed, so that the heal restarts it and it rejoins."""
        nodes = self.setup.nodes
        deadline = time.monotonic() + wait_s
        while True:
            problems = [p for p in self.lab.health.check().problems if any(n in p for n in nodes)
                        and OFFLINE_MODE not in p]  # back in its cluster, in offline_mode: the heal ends it
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

    def after_load(self) -> None:
        """Heal the lab after the load (a heal that fails stops the campaign: the lab is broken)."""
        lab = self.lab
        heal_t0 = time.monotonic()
        killed = {p.step.target for p in self.schedule if p.step.do == "kill"}
        if self.promotion is None and any(p.step.do != "kill" and p.step.target not in killed for p in self.schedule):
            self.settle()  # a node that was only held may not come back by itself (a promoted cluster is rebuilt)
        lab.tuning.refresh()
        self.count_errant()
        restarted: list[str] = []
        how: list[str] = []  # this run's heal only: a lab that healed itself still reports the last heal's words
        try:
            if lab.health.broken() or any(OFFLINE_MODE in p for p in lab.health.check().problems):
                restarted, how = lab.health.heal(timeout=self.plan.heal_timeout_s), lab.health.heal_report()
        except BenchlibError as exc:
            raise CampaignError(f"the lab could not be healed after fault run {self.run_id}: {exc.message}",
                                hint="benchlib lab status shows the nodes; benchlib lab heal retries; the campaign "
                                     "resumes when rerun", detail=exc.detail) from None
        self.healed = {"restarted": restarted, "how": how, "s": time.monotonic() - heal_t0}
        self.events.add("heal", ",".join(restarted), "; ".join(how) or "nothing to heal", t=time.monotonic())
        self.survivor = self.router.node
        if self.before_audit is not None:
            self.before_audit(lab, self.survivor)

    def count_errant(self) -> None:
        """A promoted cluster's old primary, before the heal rebuilds it: what it holds that the new primary lacks
        (``FaultControl.errant``); with ``errant = "refuse"`` and any, the campaign stops with the count."""
        old, new = self.setup.write_node, (self.promotion or {}).get("primary")
        if not new or new == old:
            return
        try:
            self.errant = self.control.errant(self.cluster, old, new, timeout=self.plan.heal_timeout_s)
        except BenchlibError as exc:
            self.errors.append(f"could not count {old}'s errant transactions: {exc.message}")
            return
        self.events.add("errant", old, f"{old} holds {self.errant['count']} transactions {new} lacks"
                        + (f" ({self.errant['gtids']})" if self.errant["count"] else ""), t=time.monotonic())
        if self.errant["count"] and self.plan.errant == "refuse":
            raise CampaignError(f"fault run {self.run_id}: the old primary {old} came back with "
                                f"{self.errant['count']} errant transactions ({self.errant['gtids']}) that {new}, "
                                "the new primary, lacks; the heal is refused (fault.errant = \"refuse\")",
                                hint=f"the lab is left unhealed ({old} stopped, its datadir as it came back); "
                                     "benchlib lab heal rebuilds it from the new primary, discarding them; the "
                                     "campaign resumes when rerun")

    def stop(self) -> str | None:
        """What went wrong with the fault itself (the run fails, naming it)."""
        return "; ".join(self.errors) or None

    # -- audit: every acknowledged write on the survivor (and what every other node lacks) ------------------------
    def audit(self) -> None:
        lab, nodes = self.lab, self.setup.nodes
        survivor = self.survivor or self.router.node
        order = [survivor] + [n for n in nodes if n != survivor]
        origin = self.ctx.origin
        self.ledger_frame, self.counts = ledger_audit(lab, self.writers, self.ledger, self.run_id, order, origin)
        self.reads_frame = self.reader.frame(origin, ledger_rows(lab, survivor, self.run_id))
        done = self.reads_frame[self.reads_frame.lost.notna()]
        self.counts["direct"].update({"reads": int(len(done)), "reads_of_lost": int(done.lost.astype(bool).sum())})

    # -- record: its frames and its entry of the manifest ---------------------------------------------------------
    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        out = {"fault_events": self.events.frame(origin), "cluster": self.log.frame(origin)}
        if hasattr(self, "ledger_frame"):
            out.update(ledger=self.ledger_frame, ledger_reads=self.reads_frame)
        return out

    def manifest(self) -> dict[str, object]:
        if self.healed is None:  # before the load: what the fault is
            return dict(self.entry)
        origin, counts = self.ctx.origin, getattr(self, "counts", {"direct": {}})
        return {**self.entry,
                "happened_s": None if self.t_fault is None else self.t_fault - origin,
                "steps_done": [{**{k: v for k, v in d.items() if k not in ("planned_t", "started_t", "done_t")},
                                "planned_s": d["planned_t"] - origin, "started_s": d["started_t"] - origin,
                                "done_s": d["done_t"] - origin}
                               for d in self.steps_done],
                "semisync": semisync_summary(self.log, self.setup.write_node, self.t_fault, self.lost_at, origin),
                "promotion": self.promotion,
                "errant": self.errant,
                "switchover": {**self.switched, "open_transaction": self.idle_words or None}
                if self.switched else None,
                "heal": self.healed,
                "survivor": self.survivor,
                "ledger": {**counts["direct"], **({"via": {k: v for k, v in counts.items() if k != "direct"}}
                                                  if len(counts) > 1 else {})},
                "proxy": {"kind": self.plan.proxy, "address": f"{self.front.host}:{self.front.port}"}
                if self.front is not None else None}

    def close(self) -> None:
        self.halt.set()
        self.close_idle_transaction()
        if self.sampler is not None:
            self.sampler.stop()
        if self.front is not None:
            self.front.stop()


def execute_fault_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, plan: "FaultPlan", *,
                      before_audit: Callable[["Lab", str], None] | None = None, **run: Any) -> Path:
    """One run of the fault ``plan`` on ``cluster`` through the run engine (``RunEngine``, its keywords in ``run``);
    returns the run folder. ``before_audit(lab, survivor)`` runs after the heal, before the audit."""
    def tamper(hooks: dict[str, AxisRun]) -> None:
        hook = hooks["fault"]
        assert isinstance(hook, FaultHook)
        hook.before_audit = before_audit

    return RunEngine(lab, cluster, opts, writer, axes={"fault": plan},
                     on_hooks=tamper if before_audit is not None else None, **run).execute()
