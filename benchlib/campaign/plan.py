"""The run plan a campaign spec expands to: every run (cluster x settings x workload x threads x rate x key
distribution x the probe's read consistency x the fault, times the repetitions) in a seeded random order, each
repetition round shuffled anew and never the same configuration twice in a row, with stable run ids (index,
configuration hash, repetition) so a rerun skips the runs it has; and the sustained-throughput searches over those
runs. What the lab cannot do, or what cannot run together, is refused here, saying why.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass, field
from typing import Any

from benchlib.campaign.ids import RunId
from benchlib.axis import AXES, Variant
from benchlib.campaign.spec import CampaignSpec
from benchlib.errors import SpecError
from benchlib.labs import AnyLabSpec
from benchlib.sampling.stale_reads import ProbeOptions
from benchlib.lab.spec import parse_size
from benchlib.sysbench.options import RunError, SysbenchOptions, sized
from benchlib.schema import Cell

__all__ = ["PlannedRun", "PlannedSearch", "plan", "plan_searches"]


@dataclass(frozen=True)
class PlannedRun:
    index: int
    run_id: str
    cluster: str
    topology: str
    settings: dict[str, Cell]
    options: SysbenchOptions
    repetition: int
    config_key: str
    search: str | None = None  # the sustained-throughput search this open-loop run belongs to
    #: axis -> this run's variant of it (``benchlib.axes``): the probe's read consistency, the read split, the fault
    axes: dict[str, Variant] = field(default_factory=dict)
    usual_time_s: int | None = None  # a long run of load.stability_s: the configuration's usual length

    @property
    def probe(self) -> ProbeOptions | None:
        """The stale-read probe's options, its read consistency chosen (None: no probe)."""
        v: Any = self.axes.get("probe")  # benchlib.axes.probe.plan.ProbeVariant (the campaign runner names no axis)
        return v.options if v is not None else None

    def again(self, index: int, repetition: int) -> "PlannedRun":
        """The same configuration as another repetition, at ``index`` (of the usual length)."""
        from dataclasses import replace

        run_id = RunId(index, self.cluster, self.options.workload, self.options.threads, self.config_key, repetition)
        options = self.options if self.usual_time_s is None else replace(self.options, time_s=self.usual_time_s)
        return replace(self, index=index, repetition=repetition, run_id=str(run_id), options=options,
                       usual_time_s=None)

    @property
    def params(self) -> dict[str, Cell]:
        """What the run store records as this run's parameters (and load_campaign joins on)."""
        extra: dict[str, Any] = {"search": self.search} if self.search else {}
        for variant in self.axes.values():
            extra.update(variant.params())
        if self.options.distribution is not None:
            extra["distribution"] = self.options.distribution
        if self.options.data_vs_buffer_pool is not None:
            extra["data_vs_buffer_pool"] = self.options.data_vs_buffer_pool
        return {"cluster": self.cluster, "topology": self.topology, "workload": self.options.workload,
                "threads": self.options.threads, "rate": self.options.rate, "repetition": self.repetition,
                "config": self.config_key, **self.settings, **extra}


def _buffer_pool(lab: AnyLabSpec, cluster: str, source: str) -> int:
    """The buffer pool of ``cluster``'s servers in bytes, from the lab spec (what data_vs_buffer_pool sizes against)."""
    settings = getattr(lab, "settings_for", None)
    pool = getattr(settings(cluster), "buffer_pool", None) if settings else None
    if not pool:
        raise SpecError(f"{source}: load.data_vs_buffer_pool needs cluster {cluster}'s buffer pool, which lab "
                        f"{lab.name}'s spec does not give", hint="size the dataset with table_size or warehouses")
    return parse_size(str(pool))


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
    variants = _axis_variants(spec, lab, clusters, source)
    for cluster in clusters:
        topology = lab.clusters[cluster].topology
        rules = lab.setting_rules(cluster)
        dims = {k: [rules.parse(k, v) for v in values] for k, values in matrix.items() if k in rules
                and _applies(rules.settings[k].only_with, topology, matrix)}
        used |= set(dims)
        rates: list[int | None] = [*spec.load.rates] or [None]
        keys: list[str | None] = [*spec.load.distributions] or [None]  # None: sysbench's default, not passed
        ratios: list[float | None] = [*spec.load.data_vs_buffer_pool] or [None]  # None: the sizes the spec gives
        pool = _buffer_pool(lab, cluster, source) if spec.load.data_vs_buffer_pool else 0
        loads = itertools.product(spec.load.workloads, spec.load.threads, rates, keys, ratios)
        seen: set[str] = set()
        names = list(variants)
        for (workload, threads, rate, distribution, ratio), combo, chosen in itertools.product(
                loads, itertools.product(*dims.values()), itertools.product(*(variants[a][cluster] for a in names))):
            settings = dict(zip(dims, combo))
            for k in list(settings):
                switch = rules.settings[k].only_with
                if switch is not None and switch in settings and settings[switch] is False:  # off in this one
                    del settings[k]
            axes = dict(zip(names, chosen))
            for name, variant in axes.items():  # settings the load runs under for an axis (GR's AFTER levels)
                load = variant.load_settings() if hasattr(variant, "load_settings") else {}
                clash = sorted(set(load) & set(dims))
                if clash:
                    raise SpecError(f"{source}: [{name}] sets {clash[0]} for the load; the matrix sweeps it too",
                                    hint=f"drop {clash[0]} from the matrix, or from [{name}]")
                settings.update(load)
            opts = SysbenchOptions(workload=workload, tables=spec.load.tables, table_size=spec.load.table_size,
                                   threads=threads, time_s=spec.load.time_s, rate=rate,
                                   percentile=spec.load.percentile, rows_per_trx=spec.load.rows_per_trx,
                                   warehouses=spec.load.warehouses, scale=spec.load.warehouse_scale,
                                   distribution=distribution)
            for variant in axes.values():  # what an axis changes in the load itself (the writer nodes)
                opts = variant.load_options(opts) if hasattr(variant, "load_options") else opts
            if ratio is not None:
                try:
                    opts = sized(opts, ratio, pool)
                except RunError as e:
                    raise SpecError(f"{source}: {e.message}", hint=e.hint) from None
            identity = [cluster, settings, workload, threads, rate] + [x for v in axes.values() for x in v.identity()]
            identity += [distribution] if distribution is not None else []  # (a campaign that chose none: as before)
            identity += [ratio] if ratio is not None else []
            key = hashlib.sha1(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
            if key in seen:  # a combination whose switch is off repeats another: one configuration
                continue
            seen.add(key)
            configs.append((cluster, topology, settings, opts, key, axes))
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
                       rep, c[4], axes=c[5])
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
    driven = [a.name for a in AXES.values() if a.breaks and a.active(spec)]
    if driven or spec.load.rates:
        raise SpecError(f"{source}: load.stability_s lengthens closed-loop runs; this campaign has "
                        f"{f'a [{driven[0]}]' if driven else 'load.rates'}", hint="leave stability_s out")
    from dataclasses import replace

    top = max(spec.load.threads)
    return [replace(r, options=replace(r.options, time_s=long_s), usual_time_s=r.options.time_s)
            if r.repetition == spec.repetitions and r.options.threads == top else r for r in runs]


def _axis_variants(spec: CampaignSpec, lab: AnyLabSpec, clusters: list[str], source: str) -> dict[str, dict[str, list]]:
    """Per axis the campaign has (``benchlib.axes``, in registration order), per cluster the variants of it its runs
    take; axes that cannot run together are refused first, saying why."""
    present = [a for a in AXES.values() if a.active(spec)]
    for a in present:
        for b in present:
            if b.name in a.excludes:
                what = a.excludes[b.name]
                raise SpecError(f"{source}: {a.apart}; {what} cannot run beside it",
                                hint=f"a campaign of its own for {what}, or drop it here")
    planned = {a.name: a.plan(spec, lab, clusters, source) for a in present}
    return {name: variants for name, variants in planned.items() if variants is not None}


def _applies(switch: str | None, topology: str, matrix: dict[str, list[Any]]) -> bool:
    """A setting that means something only while ``switch`` is on (the semi-sync wait point) is swept on a cluster
    whose topology has it on, or where the matrix sweeps the switch too; elsewhere it would only repeat runs."""
    return switch is None or topology == switch or switch in matrix


@dataclass(frozen=True)
class PlannedSearch:
    """One sustained-throughput search: open-loop runs of one cluster, settings and workload."""

    key: str
    cluster: str
    topology: str
    settings: dict[str, Cell]
    workload: str
    threads: int
    distribution: str | None = None

    def probe(self, spec: CampaignSpec, rate: int, repetition: int, index: int) -> PlannedRun:
        opts = SysbenchOptions(workload=self.workload, tables=spec.load.tables, table_size=spec.load.table_size,
                               threads=self.threads, time_s=spec.search.time_s or spec.load.time_s, rate=rate,
                               percentile=spec.load.percentile, rows_per_trx=spec.load.rows_per_trx,
                               warehouses=spec.load.warehouses, scale=spec.load.warehouse_scale,
                               distribution=self.distribution)
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
        which = [r.cluster, r.settings, r.options.workload, threads]
        which += [r.options.distribution] if r.options.distribution is not None else []
        key = "s" + hashlib.sha1(json.dumps(which, sort_keys=True, default=str).encode()).hexdigest()[:7]
        out.setdefault(key, PlannedSearch(key, r.cluster, r.topology, dict(r.settings), r.options.workload, threads,
                                          r.options.distribution))
    if not out:
        raise SpecError(f"{source}: sustained = true, but search.only leaves no configuration to search",
                        hint="widen search.only, or remove it")
    return sorted(out.values(), key=lambda s: (s.cluster, s.workload, json.dumps(s.settings, default=str),
                                               s.distribution or ""))
