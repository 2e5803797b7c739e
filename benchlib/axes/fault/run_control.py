"""A fault run's controller (``FaultHook`` runs it on a thread of its own beside the load): each step of the fault when
it is due (``benchlib.axes.fault.sequences``), each timed against its plan; where the lab promotes, the promotion once
the write node is lost to its cluster; which node takes the writes, followed every 100 ms. A client beside a write node
cut off from its cluster stays with it until the cut ends (``benchlib.axes.fault.run_ledger.Router.hold``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from benchlib.axes.fault.run_records import RELEASED, Planned, words
from benchlib.errors import BenchlibError

if TYPE_CHECKING:
    from benchlib.axes.fault import FaultPlan

__all__ = ["Controller"]


class Controller:
    """The controller's steps, as methods of the ``FaultHook`` they act for (what they use of it, typed here)."""

    lab: Any
    cluster: str
    plan: "FaultPlan"
    control: Any  # the lab's FaultControl
    setup: Any  # the run's RunSetup
    how: Any  # the system's Failover (None: benchlib knows none)
    clock: Callable[[], float]
    events: Any  # run_records.Events
    errors: list[str]
    t_fault: float | None
    lost_at: float | None
    lost_by: str
    steps_done: list[dict[str, Any]]
    promotion: dict[str, Any] | None
    switched: dict[str, Any] | None  # a switchover's new primary, steps and duration
    serving: str
    halt: threading.Event  # set when the load ends
    schedule: list[Planned]
    ledger: Any

    @property
    def automatic(self) -> bool:  # FaultHook's: whether the system fails over by itself
        raise NotImplementedError
    router: Any

    def do_step(self, p: Planned, begin: float) -> bool:
        """One step of the fault, now (it was due at ``begin + at_s``); False when the lab could not do it (the run
        fails, naming the step)."""
        st, fault, started = p.step, p.fault, self.clock()
        if st.do == "switchover":
            return self.switch(p, begin)
        try:
            if st.do == "release":
                self.control.release(self.cluster, fault)
            else:
                self.control.inject(self.cluster, fault)
        except BenchlibError as exc:
            what = "the fault could not be injected" if not self.plan.sequence else \
                f"{words(p)} (at {st.at_s:g} s) could not be done"
            self.errors.append(f"{what}: {exc.message}" if st.do != "release" else
                               f"the fault could not be released: {exc.message}")
            return False
        done = self.clock()
        if self.t_fault is None:
            self.t_fault = done
        took = f", done {1000 * (done - started):.0f} ms later" if done - started >= 0.1 else ""
        late = f" ({1000 * (started - begin - st.at_s):.0f} ms after its planned {st.at_s:g} s{took})" \
            if self.plan.sequence else ""
        if st.do == "release":
            self.events.add("released", p.where, RELEASED.get(fault.kind, "") + late)
        else:
            self.events.add("fault", p.where, fault.words() + late)
        self.steps_done.append({**st.as_dict(), "nodes": list(fault.nodes), "site": fault.site,
                                "planned_t": begin + st.at_s, "started_t": started, "done_t": done})
        write_node = self.setup.write_node
        if write_node in fault.nodes:
            if st.do != "release" and self.lost_at is None:  # the write node lost, as its cluster sees it
                self.lost_at, self.lost_by = done, st.do
            if st.do == "isolate" and self.router.node == write_node:  # its clients are on its side of the cut
                self.router.hold()
            elif st.do == "release" and fault.kind == "isolate":
                self.router.unhold(done)
        return True

    def switch(self, p: Planned, begin: float) -> bool:
        """A planned switchover (``FaultControl.switchover``): the lab moves the primary role; where the system does
        not name its primary itself, the writer is told where the writes go now."""
        write_node, t0 = self.setup.write_node, self.clock()
        if self.t_fault is None:
            self.t_fault = t0
        self.events.add("fault", write_node, p.fault.words() + (" (a transaction left open and idle on it)"
                                                                 if self.plan.open_transaction else ""))
        try:
            done = self.control.switchover(self.cluster, timeout=60.0, wait_s=self.plan.switchover_wait_s)
        except BenchlibError as exc:
            self.errors.append(f"the switchover failed: {exc.message}")
            return False
        for step, dt in done.steps:
            self.events.add("step", done.primary, step, t=t0 + dt)
        self.steps_done.append({**p.step.as_dict(), "nodes": [write_node], "site": None,
                                "planned_t": begin + p.step.at_s, "started_t": t0, "done_t": t0})
        self.switched = {"primary": done.primary, "steps": [list(s) for s in done.steps],
                         "s": done.steps[-1][1] if done.steps else 0.0}
        # the old primary is one no longer: its semi-sync watch ends here (it goes on as a replica, whose status says
        # nothing of the switchover)
        self.lost_at, self.lost_by = self.clock(), "switchover"
        if not self.automatic:
            self.promotion = {"primary": done.primary, "steps": [list(s) for s in done.steps], "held": ""}
            self.router.set(done.primary, self.clock(), f"switched over to {done.primary}")
        return True

    def detected(self, now: float, t_start: float) -> bool:
        """The write node has been lost to its cluster for ``detect_s``: silent since its last acknowledged write or
        the fault (killed, frozen), or cut off from the other nodes (its clients still get acknowledgements)."""
        if self.lost_at is None:
            return False
        if self.lost_by == "isolate":
            return now - self.lost_at >= self.plan.detect_s
        last = self.ledger.last_ack if self.ledger.last_ack == self.ledger.last_ack else t_start  # NaN: none yet
        return now - max(last, self.lost_at) >= self.plan.detect_s

    def promote(self) -> None:
        """The lab promotes the most advanced replica; the writer is told where the writes go now."""
        write_node = self.setup.write_node
        t0 = self.clock()
        self.events.add("step", write_node, f"{write_node} silent for {self.plan.detect_s:g} s: promoting"
                        + (", relay logs discarded" if self.plan.discards else ""))
        try:
            done = self.control.promote(self.cluster, write_node, timeout=60.0, discard=self.plan.discards)
        except BenchlibError as exc:
            self.errors.append(f"the promotion failed: {exc.message}")
            return
        for step, dt in done.steps:
            self.events.add("step", done.primary, step, t=t0 + dt)
        self.promotion = {"primary": done.primary, "steps": [list(s) for s in done.steps], "held": done.discarded}
        self.router.set(done.primary, self.clock(), f"promoted {done.primary}")

    def follow_primary(self, primary: str) -> str:
        """Which node takes the writes now (the cluster's answer, or the promotion); an event when it changed."""
        if self.automatic:
            try:
                found = self.how.locate(lambda n: self.lab.connect(n, timeout=0.5), self.setup.infos, primary)
            except Exception:  # noqa: BLE001 - a cluster in the middle of a failover answers badly
                found = None
            if found is not None and found != primary:
                self.events.add("primary", found, f"{found} takes the writes ({self.how.how})")
                return found
        elif self.promotion and primary != self.promotion["primary"]:
            primary = self.promotion["primary"]
            self.events.add("primary", primary, f"{primary} takes the writes (promoted)")
        return primary

    def control_loop(self) -> None:
        """At at_s, each step of the fault when it is due; every 100 ms meanwhile: promote where asked once the write
        node is lost to its cluster, follow which node takes the writes."""
        t_start = self.clock()
        if self.halt.wait(self.plan.at_s):
            return
        begin = self.clock()
        pending = list(self.schedule)
        promoted = False
        primary = self.setup.write_node
        while not self.halt.is_set():
            while pending and self.clock() >= begin + pending[0].step.at_s:
                if not self.do_step(pending.pop(0), begin):
                    return
            now = self.clock()
            if self.plan.promote and not promoted and self.detected(now, t_start):
                promoted = True
                self.promote()
            primary = self.follow_primary(primary)
            due = begin + pending[0].step.at_s - self.clock() if pending else 0.1
            self.halt.wait(max(0.0, min(0.1, due)))

