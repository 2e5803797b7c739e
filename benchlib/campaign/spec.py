"""Campaign specs (TOML) and the run plan they expand to.

    name = "quick"
    lab = "../labs/demo.toml"          # relative to this file
    seed = 1
    repetitions = 2
    sustained = true                    # also search each configuration's maximum sustained throughput
    adaptive = true                     # rounds while a headline ratio is not settled (see below)
    settle_within = 0.10                # settled: its 95% interval within +-10% (unset: its verdict decided)
    budget_s = 250                      # a round is added only while it fits in this much campaign time

    [load]
    workloads = ["oltp_read_write"]
    threads = [1, 8]
    time_s = 10
    tables = 4
    table_size = 10000
    rates = []                          # open loop: target TPS values (empty: closed loop)
    warmup_s = 0                        # unmeasured load before each run's measured window
    rows_per_trx = 50                   # insert_batch: single-row INSERTs per transaction
    read_threads = 0                    # read split: sysbench threads reading (oltp_read_only) on every other node
    stability_s = 30                    # (optional) the last round runs the largest thread count this long

    [matrix]                            # runtime settings swept on a running lab
    clusters = ["async", "galera"]      # clusters of the lab to measure (default: all)
    durability = ["durable", "relaxed"]
    fc_limit = [16, 256]                # applies to Galera clusters only
    parallel_threads = [0, 4]           # applies to async / semi-sync clusters only

    [search]                            # (all optional) how the search runs
    threads = 16                        # client threads of the open-loop runs (default: the largest of load.threads)
    time_s = 60                         # length of each open-loop run (default: load.time_s)
    start = 0.5                         # first rate: this share of the configuration's peak (closed-loop) TPS
    step = 1.5                          # sweep factor, up until a rate fails (down if the first one fails)
    precision = 0.02                    # bisect until the bracket [last sustained, first failing] is this narrow
    repetitions = 1                     # runs per rate (a rate holds when a majority of its runs do, and none fails)
    max_runs = 16                       # per search
    only = { workload = ["oltp_read_write"], durability = ["relaxed"] }   # limit the searches

    [interference]                      # (all optional) runs others' use of the host spoiled
    redo_above = 0.10                   # a run that lost more of the host's CPU (steal, other processes): redone
    max_redos = 2                       # per run; disturbed every time: left out

    [fault]                             # (optional) a fault in every run, what follows measured (fault_run)
    kind = ["kill"]                     # an axis: kill | freeze | cut
    target = ["write_node"]             # an axis: write_node | replica | site:NAME (cut only)
    at_s = 5                            # into the load; freeze and cut last duration_s
    failover = "promote"                # async / semi-sync: the lab promotes (GR and Galera fail over themselves)
    rejoin_at_s = 30                    # (optional) the killed node starts again under the load
    proxy = "haproxy"                   # (optional) a second ledger writer through HAProxy

Top-level run policy: ``failed = "redo" | "keep"`` (what a rerun does with failed runs),
``stall_s`` (the watchdog: seconds without progress before a run is HUNG),
``catch_up_timeout_s`` (how long to wait for replicas after the load); ``adaptive = true`` adds
whole rounds (every configuration, baseline included, shuffled) while a headline comparison against the baseline
is not settled (its verdict INCONCLUSIVE; with ``settle_within``, its 95% interval wider than that), up to
``max_repetitions`` rounds and while one more round fits in ``budget_s`` (without a baseline: while a
configuration's 95% interval is wider than ``target_halfwidth`` of its mean). ``[interference]``: a run that lost
more than ``redo_above`` of the host's CPU to others is disturbed and redone (``max_redos`` times at most). ``note`` says what the campaign reproduces
and what it cannot (the CLI prints it).

With ``sustained = true``, after the planned (closed-loop) runs, one search per cluster, settings
and workload finds the highest open-loop rate that every member sustains: its runs carry the
parameter ``search`` (the search's key) and are judged by ``benchlib.analysis.sustained``.

A setting applies to the clusters whose topology has it; every configuration is
(cluster, settings, workload, threads, rate). Runs are configurations x repetitions
in a seeded random order, each repetition round shuffled anew, and never the same
configuration twice in a row. Run ids are stable (index, configuration hash,
repetition), so a rerun of the campaign can skip the runs it already has.

Size: about 560 lines (schema, planner, fault validation); the planner goes to ``campaign/plan.py`` and the fault plans to the fault axis with issue 36 (axes as units).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from benchlib.campaign.ids import RunId
from benchlib.errors import SpecError
from benchlib.labs import AnyLabSpec, load_lab_spec
from benchlib.specs import Strict as _Strict
from benchlib.specs import format_validation, read_toml
from benchlib.sampling.stale_reads import ProbeOptions
from benchlib.sysbench.options import WORKLOADS, SysbenchOptions
from benchlib.systems import consistency
from benchlib.systems.consistency import ReadSetting


class Load(_Strict):
    workloads: list[str] = Field(default=["oltp_read_write"], min_length=1)
    threads: list[int] = Field(default=[8], min_length=1)
    time_s: int = Field(default=30, ge=1, le=86_400)
    tables: int = Field(default=4, ge=1, le=1000)
    table_size: int = Field(default=10_000, ge=1)
    rates: list[int] = Field(default_factory=list)
    percentile: int = Field(default=95, ge=1, le=100)
    warmup_s: int = Field(default=0, ge=0, le=3600)
    rows_per_trx: int = Field(default=50, ge=1, le=10_000)  # insert_batch
    #: a read-split load: this many sysbench threads on every node but the write node read the dataset
    #: (oltp_read_only, each session under the run's read consistency) beside the writers; 0: none
    read_threads: int = Field(default=0, ge=0, le=10_000)
    #: the last repetition round runs the largest thread count this long instead of time_s: one run per
    #: configuration long enough to show stability over time, in a campaign of short runs (they count in every
    #: statistic like the others: a run's mean is the same quantity, measured longer)
    stability_s: int | None = Field(default=None, ge=20, le=86_400)

    @field_validator("workloads")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [w for w in v if w not in WORKLOADS]
        if bad:
            raise ValueError(f"unknown workloads {bad}; known: {', '.join(sorted(WORKLOADS))}")
        return v

    @field_validator("threads", "rates")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x < 1 for x in v):
            raise ValueError("values must be at least 1")
        return v


class Search(_Strict):
    """How the sustained-throughput search runs (statistics spec F; benchlib.analysis.sustained)."""

    threads: int | None = Field(default=None, ge=1, le=100_000)
    time_s: int | None = Field(default=None, ge=10, le=86_400)
    start: float = Field(default=0.5, gt=0, le=2)
    step: float = Field(default=1.5, gt=1, le=10)
    precision: float = Field(default=0.02, gt=0, lt=1)
    repetitions: int = Field(default=1, ge=1, le=20)
    max_runs: int = Field(default=16, ge=2, le=1000)
    only: dict[str, list[Any]] = Field(default_factory=dict)


class ProbeSpec(_Strict):
    """The stale-read probe beside every run (``benchlib.sampling.stale_reads``) and the read consistency axis."""

    write_rate: float = Field(default=10.0, gt=0, le=1000)  # commits per second on the write node
    read_rate: float = Field(default=10.0, gt=0, le=1000)  # reads per second on each other node
    consistency: list[str] = Field(default_factory=list)  # read consistency settings (empty: each system's default)
    wait_timeout_s: float = Field(default=10.0, gt=0, le=600)


class FaultSpec(_Strict):
    """[fault]: every run injects a fault under load and measures what follows (``benchlib.campaign.fault_run``)."""

    kind: list[Literal["kill", "freeze", "cut"]] = Field(default=["kill"], min_length=1)  # an axis
    target: list[str] = Field(default=["write_node"], min_length=1)  # write_node | replica | site:NAME (an axis)
    at_s: float = Field(default=10.0, gt=0)  # into the load
    duration_s: float = Field(default=10.0, gt=0, le=3600)  # freeze and cut: until released; kill: until the heal
    #: async and semi-sync clusters: "promote" (the lab promotes the most advanced replica once the write node has
    #: not answered for detect_s) or "none"; a table gives it per cluster. Galera and Group Replication fail over
    #: by themselves.
    failover: Literal["none", "promote"] | dict[str, Literal["none", "promote"]] = "none"
    detect_s: float = Field(default=1.0, ge=0, le=600)  # how long the write node must be silent before promotion
    write_rate: float = Field(default=50.0, gt=0, le=1000)  # the ledger writer's commits per second
    timeout_s: float = Field(default=1.0, gt=0, le=60)  # a ledger commit without reply this long: unknown, move on
    heal_timeout_s: float = Field(default=300.0, gt=0)
    #: rejoin under load: the killed node starts again this long into the load, while the load goes on (its path,
    #: time to ONLINE/Synced, time until its lag stays under 100 ms, the donor's throughput meanwhile are measured)
    rejoin_at_s: float | None = Field(default=None, gt=0)
    #: "auto": the path the cluster picks (Galera IST, GR incremental recovery); "full": its full transfer, forced
    #: (Galera SST: the node's grastate.dat removed; GR clone: the survivors' binary logs purged)
    rejoin: list[Literal["auto", "full"]] = Field(default=["auto"], min_length=1)  # an axis
    #: a second ledger writer through a proxy in front of the cluster (benchlib.lab.proxy): what a client behind
    #: HAProxy sees, beside the writer that follows the failover itself
    proxy: Literal["none", "haproxy"] = "none"

    @field_validator("kind", "target", "rejoin", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("target")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        bad = [t for t in v if t not in ("write_node", "replica") and not (t.startswith("site:") and len(t) > 5)]
        if bad:
            raise ValueError(f"unknown fault targets {bad}: write_node, replica or site:NAME")
        return v


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

    @property
    def label(self) -> str:
        return f"{self.kind} {self.target}" + (f", rejoin {self.rejoin}" if self.rejoin_at_s else "")

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        out = asdict(self)
        if self.rejoin_at_s is None:  # campaigns planned before rejoin existed keep their configuration keys
            del out["rejoin_at_s"], out["rejoin"]
        if self.proxy == "none":
            del out["proxy"]
        return out


class InterferenceSpec(_Strict):
    """[interference]: runs that others' use of the host spoiled (``benchlib.analysis.interference``)."""

    #: a run that lost more than this share of the host's CPU to others (the hypervisor's steal, processes outside
    #: the lab and benchlib) is disturbed: kept, marked, left out, and redone before its round closes; 1 turns it off
    redo_above: float = Field(default=0.10, gt=0, le=1)
    #: redos per run; a run disturbed in every attempt stays out (its round one run short: the two-way model fits
    #: unequal rounds; a rerun of the campaign tries it again)
    max_redos: int = Field(default=2, ge=0, le=10)


class CampaignSpec(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    lab: str
    seed: int = 1
    repetitions: int = Field(default=3, ge=1, le=100)
    load: Load = Field(default_factory=Load)
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    failed: Literal["redo", "keep"] = "redo"  # on resume: rerun failed runs, or keep them as they are
    stall_s: float = Field(default=10.0, gt=0)  # the watchdog's limit (HUNG)
    catch_up_timeout_s: float = Field(default=120.0, gt=0)
    # adaptive repetitions: after the planned rounds, whole rounds while a comparison is INCONCLUSIVE (without
    # a baseline: while a configuration's interval is wider than target_halfwidth), up to max_repetitions rounds
    adaptive: bool = False
    max_repetitions: int = Field(default=10, ge=2, le=100)
    target_halfwidth: float = Field(default=0.02, gt=0, lt=1)  # relative half-width of the 95% interval
    #: a headline ratio (throughput against the baseline) is settled once its 95% interval lies within +- this of
    #: it, whatever its verdict; unset: once its verdict is no longer INCONCLUSIVE
    settle_within: float | None = Field(default=None, gt=0, lt=1)
    #: campaign time, seconds: the adaptive mode adds a round only while one more fits (estimated from the rounds
    #: run so far); unset: no limit but max_repetitions
    budget_s: float | None = Field(default=None, gt=0)
    interference: InterferenceSpec = Field(default_factory=InterferenceSpec)
    # delta: ratios against the baseline within 1 +- margin count as no difference (EQUIVALENT); FASTER and
    # SLOWER need the whole 95% interval beyond it. The report states it.
    margin: float = Field(default=0.02, gt=0, lt=1)
    # maximum sustained throughput: open-loop searches after the planned runs (one per cluster, settings and
    # workload; see Search)
    sustained: bool = False
    search: Search = Field(default_factory=Search)
    probe: ProbeSpec | None = None  # [probe]: the stale-read probe on every run, its consistency settings an axis
    fault: FaultSpec | None = None  # [fault]: a fault in every run, what follows measured (failover, lost writes)
    note: str = ""  # what the campaign reproduces, what it cannot (printed by the CLI, kept in campaign.json)


@dataclass(frozen=True)
class PlannedRun:
    index: int
    run_id: str
    cluster: str
    topology: str
    settings: dict[str, Any]
    options: SysbenchOptions
    repetition: int
    config_key: str
    search: str | None = None  # the sustained-throughput search this open-loop run belongs to
    probe: ProbeOptions | None = None  # the stale-read probe, its read consistency chosen
    read_threads: int = 0  # the read side of a read-split load: sysbench threads on each other node
    fault: FaultPlan | None = None  # the fault this run injects (a fault run)
    usual_time_s: int | None = None  # a long run of load.stability_s: the configuration's usual length

    def again(self, index: int, repetition: int) -> "PlannedRun":
        """The same configuration as another repetition, at ``index`` (of the usual length)."""
        from dataclasses import replace

        run_id = RunId(index, self.cluster, self.options.workload, self.options.threads, self.config_key, repetition)
        options = self.options if self.usual_time_s is None else replace(self.options, time_s=self.usual_time_s)
        return replace(self, index=index, repetition=repetition, run_id=str(run_id), options=options,
                       usual_time_s=None)

    @property
    def params(self) -> dict[str, Any]:
        """What the run store records as this run's parameters (and load_campaign joins on)."""
        extra = {"search": self.search} if self.search else {}
        if self.probe is not None:
            extra["consistency"] = self.probe.consistency
        if self.read_threads:
            extra["read_threads"] = self.read_threads
        if self.fault is not None:
            extra.update(fault=self.fault.label, failover="promote" if self.fault.promote else "")
        return {"cluster": self.cluster, "topology": self.topology, "workload": self.options.workload,
                "threads": self.options.threads, "rate": self.options.rate, "repetition": self.repetition,
                "config": self.config_key, **self.settings, **extra}


def load_campaign_spec(path: str | Path) -> tuple[CampaignSpec, AnyLabSpec]:
    p = Path(path)
    data = read_toml(p, "campaign spec", "examples/campaigns/quick.toml")
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{p}: invalid campaign spec ({exc.error_count()} problems)",
                        detail=format_validation(exc, str(p))) from None
    lab_path = (p.parent / spec.lab) if not Path(spec.lab).is_absolute() else Path(spec.lab)
    return spec, load_lab_spec(lab_path)


def plan(spec: CampaignSpec, lab: AnyLabSpec, source: str = "campaign") -> list[PlannedRun]:
    """Every run of the campaign, in the order to run them."""
    matrix = dict(spec.matrix)
    clusters = matrix.pop("clusters", list(lab.clusters))
    unknown = [c for c in clusters if c not in lab.clusters]
    if unknown:
        raise SpecError(f"{source}: matrix.clusters names {unknown}, not clusters of lab {lab.name}",
                        hint=f"clusters: {', '.join(lab.clusters)}")
    used = set()
    configs = []
    reads = _read_settings(spec, lab, clusters, source)
    _check_read_split(spec, lab, clusters, source)
    faults = _fault_plans(spec, lab, clusters, source)
    for cluster in clusters:
        topology = lab.clusters[cluster].topology
        rules = lab.setting_rules(cluster)
        dims = {k: [rules.parse(k, v) for v in values] for k, values in matrix.items() if k in rules
                and _applies(rules.settings[k].only_with, topology, matrix)}
        used |= set(dims)
        loads = itertools.product(spec.load.workloads, spec.load.threads, spec.load.rates or [None])
        seen = set()
        for (workload, threads, rate), combo, read, fault in itertools.product(
                loads, itertools.product(*dims.values()), reads[cluster], faults[cluster]):
            settings = dict(zip(dims, combo))
            for k in [k for k in settings if rules.settings[k].only_with in settings]:
                if settings[rules.settings[k].only_with] is False:  # its switch is off in this combination
                    del settings[k]
            if read is not None:
                clash = sorted(set(read.load or {}) & set(dims))
                if clash:
                    raise SpecError(f"{source}: probe.consistency sets {clash[0]} for the load; the matrix sweeps it "
                                    "too", hint=f"drop {clash[0]} from the matrix, or the probe's consistency")
                settings.update(read.load or {})
            opts = SysbenchOptions(workload=workload, tables=spec.load.tables, table_size=spec.load.table_size,
                                   threads=threads, time_s=spec.load.time_s, rate=rate,
                                   percentile=spec.load.percentile, rows_per_trx=spec.load.rows_per_trx)
            probe = None if spec.probe is None else ProbeOptions(
                spec.probe.write_rate, spec.probe.read_rate, read.name if read else None, spec.probe.wait_timeout_s)
            identity = [cluster, settings, workload, threads, rate] + ([probe.consistency] if probe else []) \
                + ([{"read_threads": spec.load.read_threads}] if spec.load.read_threads else []) \
                + ([fault.as_dict()] if fault else [])
            key = hashlib.sha1(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
            if key in seen:  # a combination whose switch is off repeats another: one configuration
                continue
            seen.add(key)
            configs.append((cluster, topology, settings, opts, key, probe, fault))
    unused = sorted(set(matrix) - used)
    if unused:
        raise SpecError(f"{source}: matrix settings {unused} apply to none of the clusters {clusters}",
                        hint="remove them, or add a cluster whose topology has them (the semi-sync wait point and "
                             "timeout: a semisync cluster, or sweep semisync too)")
    rng = random.Random(spec.seed)
    order = []
    for rep in range(1, spec.repetitions + 1):
        block = list(configs)
        rng.shuffle(block)
        if order and len(block) > 1 and block[0][4] == order[-1][1][4]:
            block[0], block[1] = block[1], block[0]  # never the same configuration twice in a row
        order += [(rep, c) for c in block]
    runs = [PlannedRun(i, str(RunId(i, c[0], c[3].workload, c[3].threads, c[4], rep)), c[0], c[1], c[2], c[3],
                       rep, c[4], probe=c[5], read_threads=spec.load.read_threads, fault=c[6])
            for i, (rep, c) in enumerate(order, start=1)]
    return _long_last_round(spec, runs, source)


def _long_last_round(spec: CampaignSpec, runs: list[PlannedRun], source: str) -> list[PlannedRun]:
    """``load.stability_s``: the last round's runs at the largest thread count, that long."""
    long_s = spec.load.stability_s
    if long_s is None:
        return runs
    if long_s <= spec.load.time_s:
        raise SpecError(f"{source}: load.stability_s = {long_s} is not longer than load.time_s = {spec.load.time_s}",
                        hint="stability_s is for a campaign of short runs: leave it out, or make it longer")
    if spec.fault is not None or spec.load.rates:
        raise SpecError(f"{source}: load.stability_s lengthens closed-loop runs; this campaign has "
                        f"{'a [fault]' if spec.fault is not None else 'load.rates'}", hint="leave stability_s out")
    from dataclasses import replace

    top = max(spec.load.threads)
    return [replace(r, options=replace(r.options, time_s=long_s), usual_time_s=r.options.time_s)
            if r.repetition == spec.repetitions and r.options.threads == top else r for r in runs]


def _fault_plans(spec: CampaignSpec, lab: AnyLabSpec, clusters: list[str],
                 source: str) -> dict[str, list[FaultPlan | None]]:
    """Per cluster, the faults of ``[fault]`` ([None]: no fault). What the lab cannot inject, or a promotion on a
    system that fails over by itself, is refused here, saying why."""
    f = spec.fault
    if f is None:
        return {c: [None] for c in clusters}
    from benchlib.lab.faults import refusal as fault_refusal
    from benchlib.lab.spec import LabSpec
    from benchlib.systems import failover

    def refuse(what: str, hint: str) -> SpecError:
        return SpecError(f"{source}: {what}", hint=hint)

    if not isinstance(lab, LabSpec):
        raise refuse("[fault] needs a lab benchlib runs: a remote lab's servers are not benchlib's to kill, freeze "
                     "or cut off", "point the campaign at a local lab spec (examples/labs/)")
    for other, why in ((spec.probe, "[probe]"), (spec.load.read_threads, "load.read_threads"),
                       (spec.sustained, "sustained = true")):
        if other:
            raise refuse(f"[fault] runs measure a fault with their own writer; {why} cannot run beside it",
                         f"a campaign of its own for {why}, or drop it here")
    if spec.load.warmup_s:
        raise refuse("[fault] runs have no warm-up (the fault comes at fault.at_s into the load)",
                     "set load.warmup_s = 0, or move fault.at_s later")
    if f.at_s >= spec.load.time_s:
        raise refuse(f"fault.at_s = {f.at_s:g} is not within the load (load.time_s = {spec.load.time_s})",
                     "a fault at_s smaller than load.time_s, leaving time to see the recovery")
    if f.rejoin_at_s is not None:
        if f.kind != ["kill"]:
            raise refuse("fault.rejoin_at_s restarts a killed node: it goes with kind = \"kill\" only",
                         "kind = \"kill\", or drop rejoin_at_s")
        if not f.at_s < f.rejoin_at_s < spec.load.time_s:
            raise refuse(f"fault.rejoin_at_s = {f.rejoin_at_s:g} must fall after fault.at_s ({f.at_s:g}) and within "
                         f"the load (load.time_s = {spec.load.time_s})", "leave time after it to see the rejoin")
    wanted = f.failover if isinstance(f.failover, dict) else {}
    unknown = sorted(set(wanted) - set(clusters))
    if unknown:
        raise refuse(f"fault.failover names {unknown}, not clusters of this campaign", f"clusters: {clusters}")
    out: dict[str, list[FaultPlan | None]] = {}
    for c in clusters:
        system = lab.system_of(c)
        how = failover.of(system)
        promote = (wanted.get(c, "none") if wanted else f.failover) == "promote"
        if promote and (how is None or how.automatic):
            if c in wanted:
                raise refuse(f"fault.failover promotes on cluster {c}, but {system} fails over by itself "
                             f"({how.promise if how else 'benchlib knows no failover of it'})",
                             f"leave {c} out of fault.failover")
            promote = False  # "promote" for the whole campaign: the clusters that have none of their own
        size = lab.clusters[c].node_count
        plans: list[FaultPlan | None] = []
        for kind, target, rejoin in itertools.product(f.kind, f.target, f.rejoin if f.rejoin_at_s else ["auto"]):
            if target == "replica" and size < 2:
                raise refuse(f"fault.target replica: cluster {c} has one node", f"leave {c} out, or target write_node")
            nodes = [f"{c}-1"] if target == "write_node" else [f"{c}-{size}"] if target == "replica" else []
            site = target[5:] if target.startswith("site:") else None
            if site is not None and kind != "cut":
                raise refuse(f"fault.target {target}: a site is a target of a cut only", "kind = \"cut\"")
            if site is not None and not any(lab.site_of(f"{c}-{i}") == site for i in range(1, size + 1)):
                raise refuse(f"fault.target {target}: no node of cluster {c} is in site {site}",
                             f"sites: {', '.join(lab.sites) or 'none'}")
            why = fault_refusal(lab, kind, nodes, site)
            if why:
                raise refuse(f"fault {kind} of {target} on cluster {c}: {why}",
                             "a site in the lab spec for a cut ([sites]), or another fault kind")
            if f.rejoin_at_s is not None and promote and target == "write_node":
                raise refuse(f"fault.rejoin_at_s on cluster {c}: a promoted cluster's old primary comes back by the "
                             "heal's rebuild, not by a rejoin", f"target a replica, or leave {c} out of the promotion")
            if rejoin == "full" and f.rejoin_at_s is not None and how is not None and how.how == "promote":
                raise refuse(f"fault.rejoin = \"full\" on cluster {c}: {system} replicas catch up from their GTID "
                             "position; the lab has no full transfer for them", "rejoin = \"auto\" there")
            plans.append(FaultPlan(kind, target, f.at_s, f.duration_s, promote and target != "replica", f.detect_s,
                                   f.write_rate, f.timeout_s, f.heal_timeout_s, f.rejoin_at_s, rejoin, f.proxy))
        out[c] = plans
    return out


def _applies(switch: str | None, topology: str, matrix: dict[str, list[Any]]) -> bool:
    """A setting that means something only while ``switch`` is on (the semi-sync wait point) is swept on a cluster
    whose topology has it on, or where the matrix sweeps the switch too; elsewhere it would only repeat runs."""
    return switch is None or topology == switch or switch in matrix


def _check_read_split(spec: CampaignSpec, lab: AnyLabSpec, clusters: list[str], source: str) -> None:
    """A read-split load needs other nodes to read on, and the oltp dataset (sbtest1..N) to read."""
    if not spec.load.read_threads:
        return
    alone = [c for c in clusters if lab.clusters[c].node_count < 2]
    if alone:
        raise SpecError(f"{source}: load.read_threads reads on the nodes besides the write node; cluster {alone[0]} "
                        "has one node", hint="leave it out of matrix.clusters, or set load.read_threads = 0")
    wide = [w for w in spec.load.workloads if WORKLOADS[w].dataset != "oltp"]
    if wide:
        raise SpecError(f"{source}: load.read_threads reads the sbtest tables; workload {wide[0]} writes others",
                        hint="an oltp_* workload (oltp_write_only is the usual write side of a read split)")


def _read_settings(spec: CampaignSpec, lab: AnyLabSpec, clusters: list[str],
                   source: str) -> dict[str, list[ReadSetting | None]]:
    """Per cluster, the read consistency settings of ``[probe] consistency`` its system has ([None]: its default, when
    it has none of them or there is no probe). A setting no cluster's system has is refused, saying what each supports."""
    if spec.probe is None:
        return {c: [None] for c in clusters}
    wanted = spec.probe.consistency
    system = {c: lab.system_of(c) for c in clusters}
    unknown = [w for w in wanted if not any(w in consistency.supported(system[c]) for c in clusters)]
    if unknown:
        told = "; ".join(f"{s}: {consistency.described(s)}" for s in dict.fromkeys(system.values()))
        raise SpecError(f"{source}: probe.consistency {unknown[0]!r} is a read consistency of none of the clusters "
                        f"{clusters}", hint=f"the systems support {told}")
    out = {}
    for c in clusters:
        mine = [consistency.for_system(system[c], w) for w in wanted if w in consistency.supported(system[c])]
        out[c] = mine or [None]
    return out


@dataclass(frozen=True)
class PlannedSearch:
    """One sustained-throughput search: open-loop runs of one cluster, settings and workload."""

    key: str
    cluster: str
    topology: str
    settings: dict[str, Any]
    workload: str
    threads: int

    def probe(self, spec: CampaignSpec, rate: int, repetition: int, index: int) -> PlannedRun:
        opts = SysbenchOptions(workload=self.workload, tables=spec.load.tables, table_size=spec.load.table_size,
                               threads=self.threads, time_s=spec.search.time_s or spec.load.time_s, rate=rate,
                               percentile=spec.load.percentile, rows_per_trx=spec.load.rows_per_trx)
        config = hashlib.sha1(json.dumps([self.key, rate], default=str).encode()).hexdigest()[:8]
        run_id = RunId(index, self.cluster, self.workload, self.threads, config, repetition, rate=rate)
        return PlannedRun(index, str(run_id), self.cluster, self.topology, self.settings, opts, repetition,
                          config, search=self.key)


def plan_searches(spec: CampaignSpec, runs: list[PlannedRun], source: str = "campaign") -> list[PlannedSearch]:
    """The searches of a campaign with ``sustained = true``: one per (cluster, settings, workload) of its
    planned runs that passes ``search.only``."""
    if not spec.sustained:
        return []
    known = {"cluster", "workload", *(k for r in runs for k in r.settings)}
    unknown = sorted(set(spec.search.only) - known)
    if unknown:
        raise SpecError(f"{source}: search.only names {unknown}, which the campaign does not vary",
                        hint=f"search.only may name: {', '.join(sorted(known))}")
    threads = spec.search.threads or max(spec.load.threads)
    out: dict[str, PlannedSearch] = {}
    for r in sorted(runs, key=lambda r: r.index):
        values = {"cluster": r.cluster, "workload": r.options.workload, **r.settings}
        if any(k in values and values[k] not in allowed for k, allowed in spec.search.only.items()):
            continue
        key = "s" + hashlib.sha1(json.dumps([r.cluster, r.settings, r.options.workload, threads], sort_keys=True,
                                            default=str).encode()).hexdigest()[:7]
        out.setdefault(key, PlannedSearch(key, r.cluster, r.topology, dict(r.settings), r.options.workload, threads))
    if not out:
        raise SpecError(f"{source}: sustained = true, but search.only leaves no configuration to search",
                        hint="widen search.only, or remove it")
    return sorted(out.values(), key=lambda s: (s.cluster, s.workload, json.dumps(s.settings, default=str)))
