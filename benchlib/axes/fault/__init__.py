"""The fault, an axis: ``[fault]`` makes every run inject a fault under load (kill, freeze or cut of the write node,
a replica or a site) and measure what follows: the failover, the unavailability a client saw, acknowledged writes
lost, the heal and the rejoin (``benchlib.axes.fault.run`` runs it, ``benchlib.axes.fault.measures`` measures it).
Its kinds, targets and rejoin paths are axes of their own. A fault run has its own writer, so the probe, the read
split and the sustained search cannot run beside it."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from benchlib.axis import AxisRecord
from benchlib.axes.fault.sequences import ACTIONS, BUILT_IN, SINGLE, Step, check
from benchlib.specs import Strict
from benchlib.schema import Cell

__all__ = ["FailoverRecord", "FaultPlan", "FaultRecord", "FaultSpec", "HealRecord", "LedgerRecord", "PromotionRecord",
           "ProxyRecord", "SemisyncRecord", "StepRecord", "StepSpec"]


def _target_problem(t: str) -> str | None:
    if t in ("write_node", "replica", "all_nodes") or (t.startswith("site:") and len(t) > 5):
        return None
    return f"unknown fault target {t!r}: write_node, replica, all_nodes or site:NAME"


class StepSpec(Strict):
    """One step of a fault sequence of one's own (``[fault.sequences]``)."""

    at_s: float = Field(ge=0, le=3600)  # from the fault's start (fault.at_s into the load)
    do: Literal[ACTIONS]  # type: ignore[valid-type]
    #: write_node, replica, all_nodes or site:NAME
    target: str = "write_node"

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        problem = _target_problem(v)
        if problem:
            raise ValueError(problem)
        return v


class FaultSpec(Strict):
    """[fault]: every run injects a fault under load and measures what follows (``benchlib.axes.fault.run``)."""

    #: an axis: a single fault (kill, freeze, cut of ``target``), a built-in sequence (host_loss, isolation,
    #: replica_then_loss, power_cut: ``benchlib.axes.fault.sequences``) or one of ``sequences``
    kind: list[str] = Field(default=["kill"], min_length=1)
    #: write_node | replica | all_nodes | site:NAME (an axis)
    target: list[str] = Field(default=["write_node"], min_length=1)
    #: into the load: a moment (s), or a range [from, to] within which each run's moment is drawn (uniformly, seeded by
    #: the campaign's seed and the run: recorded per run as axes.fault.at_s): a fault locked to the schedule hits the
    #: same phase of every periodic thing a server does (a log flush once a second) in every run
    at_s: float | tuple[float, float] = Field(default=10.0)
    #: freeze and cut: until released; kill: until the heal; host_loss: the cut before the kill; isolation: the cut;
    #: replica_then_loss: the replica's cut before the write node's kill
    duration_s: float = Field(default=10.0, gt=0, le=3600)
    #: sequences of one's own: name -> steps ({at_s, do, target}), each a kind to name in ``kind``
    sequences: dict[str, list[StepSpec]] = Field(default_factory=dict)
    #: async and semi-sync clusters: "promote" (the lab promotes the most advanced replica once the write node has
    #: not answered for detect_s) or "none"; a table gives it per cluster. Galera and Group Replication fail over
    #: by themselves.
    failover: Literal["none", "promote"] | dict[str, Literal["none", "promote"]] = "none"
    #: what the lab's promotion does with the replicas' relay logs (an axis): "apply" (every surviving replica applies its relay log first, then the most
    #: advanced takes the writes: orchestrator's way) or "discard" (the replica that applied the most takes the writes at
    #: once, its relay log thrown away unapplied: what a hasty failover tool does, resetting the replica first). A
    #: semi-sync replica acknowledges a write once it is in its relay log: "discard" loses what it had not applied yet
    relay_logs: list[Literal["apply", "discard"]] = Field(default=["apply"], min_length=1)
    #: a promoted cluster's old primary, before the heal: the transactions it holds that the promoted replica lacks
    #: are counted (errant once it is back: started again if it was killed, crash recovery committing what its
    #: binary log holds), then "rebuild" (the heal rebuilds it from a copy of the new primary, discarding them) or
    #: "refuse" (the campaign stops with the count, the lab left as it is for a look)
    errant: Literal["rebuild", "refuse"] = "rebuild"
    #: kind = "switchover": a transaction left open and idle on the old primary before it (an axis: [false, true])
    open_transaction: list[bool] = Field(default=[False], min_length=1)
    #: how long a switchover waits for an open transaction on the old primary before disconnecting its client
    #: (Group Replication's running_transactions_timeout; the lab's read_only lock wait)
    switchover_wait_s: float = Field(default=15.0, ge=0, le=3600)
    detect_s: float = Field(default=1.0, ge=0, le=600)  # how long the write node must be silent before promotion
    write_rate: float = Field(default=50.0, gt=0, le=1000)  # the ledger writer's commits per second
    timeout_s: float = Field(default=1.0, gt=0, le=60)  # a ledger commit without reply this long: unknown, move on
    #: how long the heal after a fault may take before the run fails
    heal_timeout_s: float = Field(default=300.0, gt=0)
    #: rejoin under load: the killed node starts again this long into the load, while the load goes on (its path,
    #: time to ONLINE/Synced, time until its lag stays under 100 ms, the donor's throughput meanwhile are measured)
    rejoin_at_s: float | None = Field(default=None, gt=0)
    #: "auto": the path the cluster picks (Galera IST, GR incremental recovery); "full": its full transfer, forced
    #: (Galera SST: the node's grastate.dat removed; GR clone: the survivors' binary logs purged)
    rejoin: list[Literal["auto", "full"]] = Field(default=["auto"], min_length=1)  # an axis
    #: a second ledger writer through a proxy in front of the cluster: what a client behind HAProxy
    #: (benchlib.lab.proxy) or the lab's MySQL Router (benchlib.lab.router; a group with router = true) sees, beside
    #: the writer that follows the failover itself
    proxy: Literal["none", "haproxy", "router"] = "none"

    @field_validator("at_s")
    @classmethod
    def _moment(cls, v: float | tuple[float, float]) -> float | tuple[float, float]:
        if isinstance(v, tuple):
            if not 0 < v[0] < v[1]:
                raise ValueError(f"a range [from, to] with 0 < from < to, not {list(v)}")
        elif not v > 0:
            raise ValueError(f"a moment after the load's start (> 0), not {v}")
        return v

    @property
    def first_s(self) -> float:
        """The earliest moment of the fault (``at_s``, or the start of its range)."""
        return self.at_s[0] if isinstance(self.at_s, tuple) else self.at_s

    @property
    def last_s(self) -> float:
        """The latest moment of the fault (``at_s``, or the end of its range)."""
        return self.at_s[1] if isinstance(self.at_s, tuple) else self.at_s

    @field_validator("kind", "target", "rejoin", "relay_logs", "open_transaction", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, (str, bool)) else v

    @field_validator("target")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        bad = [t for t in v if _target_problem(t)]
        if bad:
            raise ValueError(f"unknown fault targets {bad}: write_node, replica, all_nodes or site:NAME")
        return v

    @model_validator(mode="after")
    def _kinds(self):
        taken = sorted(set(self.sequences) & set(SINGLE + BUILT_IN))
        if taken:
            raise ValueError(f"fault.sequences: {', '.join(taken)} is a built-in fault kind: give yours another name")
        known = SINGLE + BUILT_IN + tuple(self.sequences)
        unknown = [k for k in self.kind if k not in known]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}: {', '.join(known)}")
        for name, steps in self.sequences.items():
            if not steps:
                raise ValueError(f"fault.sequences.{name}: no steps")
            problem = check([Step(st.at_s, st.do, st.target) for st in steps])
            if problem:
                raise ValueError(f"fault.sequences.{name}: {problem}")
        return self

    def own(self) -> dict[str, list[Step]]:
        """The sequences of one's own, as steps."""
        return {name: [Step(st.at_s, st.do, st.target) for st in steps] for name, steps in self.sequences.items()}


@dataclass(frozen=True)
class FaultPlan:
    """One run's fault: what, where, when, and whether the lab promotes a replica."""

    kind: str
    target: str  # write_node | replica | site:NAME
    at_s: float
    duration_s: float
    promote: bool
    detect_s: float
    write_rate: float
    timeout_s: float
    heal_timeout_s: float
    rejoin_at_s: float | None = None
    rejoin: str = "auto"
    proxy: str = "none"
    steps: tuple[Step, ...] = ()  # what the run does, when (``benchlib.axes.fault.sequences``)
    relay_logs: str = "apply"  # apply | discard: the promoted replica's relay log applied first, or thrown away
    errant: str = "rebuild"  # rebuild | refuse: what the heal does with an old primary holding errant transactions
    open_transaction: bool = False  # switchover: an idle transaction open on the old primary first
    switchover_wait_s: float = 15.0
    at_range: tuple[float, float] | None = None  # each run draws its moment within it (``at_s``: its start until then)
    seed: int = 1  # the campaign's: with the run's id, what a run's moment is drawn from

    def drawn(self, run_id: str) -> "FaultPlan":
        """This plan with its moment drawn for run ``run_id`` (itself when it has one fixed moment): uniform within
        ``at_range``, from the campaign's seed and the run, so that a rerun of a campaign draws the same moments."""
        if self.at_range is None:
            return self
        lo, hi = self.at_range
        return replace(self, at_s=round(random.Random(f"{self.seed}:{run_id}").uniform(lo, hi), 3))

    @property
    def sequence(self) -> bool:
        """A sequence (host_loss, isolation, one's own), not a single fault of ``target``."""
        return self.kind not in SINGLE

    @property
    def label(self) -> str:
        what = self.kind if self.sequence else f"{self.kind} {self.target}"
        return what + (f", rejoin {self.rejoin}" if self.rejoin_at_s else "") + \
            (", relay logs discarded" if self.discards else "") + \
            (", an idle transaction open" if self.open_transaction and self.kind == "switchover" else "")

    @property
    def discards(self) -> bool:
        """The lab promotes a replica without applying its relay log first."""
        return self.promote and self.relay_logs == "discard"

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.rejoin_at_s is None:  # campaigns planned before rejoin existed keep their configuration keys
            del out["rejoin_at_s"], out["rejoin"]
        if self.proxy == "none":
            del out["proxy"]
        if self.relay_logs == "apply":  # campaigns planned before the promotion had a mode keep their keys
            del out["relay_logs"]
        if self.errant == "rebuild":
            del out["errant"]
        if self.kind != "switchover":
            del out["open_transaction"], out["switchover_wait_s"]
        if self.at_range is None:  # campaigns planned before moments were drawn keep their configuration keys
            del out["at_range"], out["seed"]
        else:
            out["at_range"] = list(self.at_range)
        if self.sequence:  # a sequence's key holds its steps; a single fault's stays what it was
            out["steps"] = [st.as_dict() for st in self.steps]
        else:
            del out["steps"]
        return out

    def identity(self) -> list[Any]:
        out = self.as_dict()
        if self.at_range is not None:  # the configuration is its range; each run's moment is drawn within it
            out.pop("at_s")
        return [out]

    def params(self) -> dict[str, Cell]:
        return {"fault": self.label,
                "failover": ("promote, relay logs discarded" if self.discards else "promote") if self.promote else ""}


def _facts(f: "FaultRecord | None") -> dict[str, Cell]:
    """A fault run's facts in the ``runs`` table (absent for other runs): when the fault came, how the cluster failed
    over, the ledger's counts after the audit, and the heal."""
    if f is None:
        return {}
    led = f.ledger or LedgerRecord()
    semisync = f.semisync or SemisyncRecord()
    return {"fault_at_s": f.happened_s, "fault_moment_s": f.at_s, "failover_how": f.failover.how,
            "new_primary": (f.promotion.primary if f.promotion else None) or f.survivor, "survivor": f.survivor,
            "ledger_writes": led.writes, "ledger_acked": led.acked, "ledger_failed": led.failed,
            "ledger_unknown": led.unknown, "lost_writes": led.lost, "phantom_writes": led.phantoms,
            "heal_s": f.heal.s, "heal_how": "; ".join(f.heal.how),
            "reads_of_lost": led.reads_of_lost, "fell_back_s": semisync.fell_back_s, "no_ack_commits": semisync.no_ack_commits,
            "errant": f.errant.count if f.errant else None,
            "switchover_s": f.switchover.s if f.switchover else None}


class LedgerRecord(AxisRecord):
    """What the fault run's ledger writer counted: writes, acknowledged, failed, unknown, and what was lost."""

    writes: int | None = None
    acked: int | None = None
    failed: int | None = None
    unknown: int | None = None
    lost: int | None = None
    lost_seqs: list[int] = Field(default_factory=list)
    phantoms: int | None = None
    missing_on: dict[str, int] = Field(default_factory=dict)
    audited_on: str | None = None
    reads: int | None = None
    reads_of_lost: int | None = None  # reads that returned a write the survivor lacks


class StepRecord(AxisRecord):
    """One step of a fault: when (s into the load), what (kill, freeze, cut, isolate, release ...) and on what; as done,
    with its nodes or site and when it was planned, started and done (sampler clock: a step that takes time, a
    release closing a lost host's sockets and removing its routes, is done a moment after it started)."""

    at_s: float | None = None
    do: str | None = None
    target: str | None = None
    nodes: list[str] = Field(default_factory=list)
    site: str | None = None
    planned_s: float | None = None
    started_s: float | None = None
    done_s: float | None = None


class FailoverRecord(AxisRecord):
    """How the system fails over (elect, any, promote, none) and what it promises then."""

    how: str | None = None
    promise: str = ""


class SemisyncRecord(AxisRecord):
    """A semi-sync primary through the fault: on at the fault, when it fell back to async (s after the fault and on
    the sampler clock), and the commits it acknowledged without a replica's acknowledgement until it was lost."""

    on_at_fault: bool | None = None
    fell_back_s: float | None = None
    fell_back_at_s: float | None = None
    no_ack_commits: int | None = None


class PromotionRecord(AxisRecord):
    """The lab's promotion: the new primary, each step with its time (s since the promotion began), and what the old
    primary held that the new one lacks."""

    primary: str | None = None
    steps: list[tuple[str, float]] = Field(default_factory=list)
    held: str | None = None


class SwitchoverRecord(AxisRecord):
    """A planned switchover: the new primary, its steps (s since it began), how long it took, and what became of the
    idle transaction left open on the old primary (None: none was)."""

    primary: str | None = None
    steps: list[tuple[str, float]] = Field(default_factory=list)
    s: float | None = None
    open_transaction: str | None = None


class ErrantRecord(AxisRecord):
    """A promoted cluster's old primary, counted before the heal: the transactions it holds that the new primary
    lacks (errant once it is back), in GTID words, whether it had to be started again for it, and how long it took."""

    node: str | None = None
    against: str | None = None
    count: int | None = None
    gtids: str | None = None
    restarted: bool | None = None
    s: float | None = None


class HealRecord(AxisRecord):
    """The heal after the run: the nodes restarted, how each came back, in words, and how long it took."""

    restarted: list[str] = Field(default_factory=list)
    how: list[str] = Field(default_factory=list)
    s: float | None = None


class ProxyRecord(AxisRecord):
    """The proxy the writes went through: its kind and address."""

    kind: str | None = None
    address: str | None = None


class FaultRecord(AxisRecord):
    """What a fault run's manifest records (``axes.fault``): its fault, as planned and resolved, and what happened."""

    kind: str | None = None  # kill | freeze | cut | host_loss | isolation ...
    target: str | None = None
    nodes: list[str] = Field(default_factory=list)
    site: str | None = None
    at_s: float | None = None  # the fault's moment into the load (drawn within at_range when it has one)
    at_range: list[float] | None = None
    seed: int | None = None
    duration_s: float | None = None
    detect_s: float | None = None
    timeout_s: float | None = None
    heal_timeout_s: float | None = None
    promote: bool | None = None
    relay_logs: str | None = None  # what the lab's promotion did with them: apply | discard (absent: apply)
    write_rate: float | None = None
    steps: list[StepRecord] | None = None  # a sequence's steps, as planned
    words: str | None = None
    # -- what happened in the run (benchlib.axes.fault.run) --
    failover: FailoverRecord = Field(default_factory=FailoverRecord)
    happened_s: float | None = None  # when the fault came (sampler clock)
    steps_done: list[StepRecord] = Field(default_factory=list)  # each step of the fault as done
    semisync: SemisyncRecord | None = None
    promotion: PromotionRecord | None = None
    errant: ErrantRecord | None = None  # a promoted cluster's old primary before the heal
    switchover: SwitchoverRecord | None = None  # kind = "switchover"
    heal: HealRecord = Field(default_factory=HealRecord)
    survivor: str | None = None  # the node the writes ended on
    ledger: LedgerRecord | None = None  # the ledger writer's counts after the audit
    proxy: ProxyRecord | None = None

    @field_validator("ledger", "semisync", "promotion", "errant", "switchover", "proxy", mode="before")
    @classmethod
    def _absent(cls, value: Any) -> Any:
        return value or None  # an empty table: the run had none
