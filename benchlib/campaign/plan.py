"""The run plan a campaign spec expands to: every run (cluster x settings x workload x threads x rate x the probe's
read consistency x the fault, times the repetitions) in a seeded random order, each repetition round shuffled anew and
never the same configuration twice in a row, with stable run ids (index, configuration hash, repetition) so a rerun
skips the runs it has; and the sustained-throughput searches over those runs. What the lab cannot do, or what cannot
run together, is refused here, saying why.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

from benchlib.campaign.ids import RunId
from benchlib.campaign.spec import CampaignSpec, FaultPlan
from benchlib.errors import SpecError
from benchlib.labs import AnyLabSpec
from benchlib.sampling.stale_reads import ProbeOptions
from benchlib.sysbench.options import WORKLOADS, SysbenchOptions
from benchlib.systems import consistency
from benchlib.systems.consistency import ReadSetting

__all__ = ["PlannedRun", "PlannedSearch", "plan", "plan_searches"]


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
        extra: dict[str, Any] = {"search": self.search} if self.search else {}
        if self.probe is not None:
            extra["consistency"] = self.probe.consistency
        if self.read_threads:
            extra["read_threads"] = self.read_threads
        if self.fault is not None:
            extra.update(fault=self.fault.label, failover="promote" if self.fault.promote else "")
        return {"cluster": self.cluster, "topology": self.topology, "workload": self.options.workload,
                "threads": self.options.threads, "rate": self.options.rate, "repetition": self.repetition,
                "config": self.config_key, **self.settings, **extra}


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
        rates: list[int | None] = [*spec.load.rates] or [None]
        loads = itertools.product(spec.load.workloads, spec.load.threads, rates)
        seen: set[str] = set()
        for (workload, threads, rate), combo, read, fault in itertools.product(
                loads, itertools.product(*dims.values()), reads[cluster], faults[cluster]):
            settings = dict(zip(dims, combo))
            for k in list(settings):
                switch = rules.settings[k].only_with
                if switch is not None and switch in settings and settings[switch] is False:  # off in this one
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
    order: list[tuple[int, tuple]] = []
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
    from benchlib import catalogue

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
        how = catalogue.get(system)
        promote = (wanted.get(c, "none") if wanted else f.failover) == "promote"
        if promote and (how is None or how.automatic_failover or not how.failover):
            if c in wanted:
                raise refuse(f"fault.failover promotes on cluster {c}, but {system} fails over by itself "
                             f"({how.promise if how and how.promise else 'benchlib knows no failover of it'})",
                             f"leave {c} out of fault.failover")
            promote = False  # "promote" for the whole campaign: the clusters that have none of their own
        size = lab.clusters[c].node_count
        plans: list[FaultPlan | None] = []
        for kind, target, rejoin in itertools.product(f.kind, f.target, f.rejoin if f.rejoin_at_s else ["auto"]):
            if target == "replica" and size < 2:
                raise refuse(f"fault.target replica: cluster {c} has one node", f"leave {c} out, or target write_node")
            nodes = [f"{c}-1"] if target == "write_node" else [f"{c}-{size}"] if target == "replica" else []
            site: str | None = target[5:] if target.startswith("site:") else None
            if site is not None and kind != "cut":
                raise refuse(f"fault.target {target}: a site is a target of a cut only", "kind = \"cut\"")
            if site is not None and not any(lab.site_of(f"{c}-{i}") == site for i in range(1, size + 1)):
                raise refuse(f"fault.target {target}: no node of cluster {c} is in site {site}",
                             f"sites: {', '.join(lab.sites) or 'none'}")
            refused = fault_refusal(lab, kind, nodes, site)
            if refused:
                raise refuse(f"fault {kind} of {target} on cluster {c}: {refused}",
                             "a site in the lab spec for a cut ([sites]), or another fault kind")
            if f.rejoin_at_s is not None and promote and target == "write_node":
                raise refuse(f"fault.rejoin_at_s on cluster {c}: a promoted cluster's old primary comes back by the "
                             "heal's rebuild, not by a rejoin", f"target a replica, or leave {c} out of the promotion")
            if rejoin == "full" and f.rejoin_at_s is not None and how is not None and how.failover == "promote":
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
    out: dict[str, list[ReadSetting | None]] = {}
    for c in clusters:
        mine: list[ReadSetting | None] = [consistency.for_system(system[c], w) for w in wanted
                                          if w in consistency.supported(system[c])]
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
