"""The run store's records, typed: what every run folder says about itself (``Manifest``, with upgraders for
older formats) and what a campaign folder says once about its campaign (``CampaignRecord``, its campaign.json).

A run's ``manifest.json`` is written once by the run store (``benchlib.store.RunWriter``). ``Manifest``
is its typed view (pydantic; fields benchlib does not know are kept, not refused), read through the
upgraders so that a run written by an older benchlib reads like a new one:

- format 1 -> 2: the per-cluster *run facts* analysis needs (``lab.facts``: system, placement, nodes
  with their round-trip times, durability, binary log) were not recorded; they are derived here, once,
  from the lab spec the format-1 manifest carries (``campaign.lab_spec``), so analysis never reads lab
  spec shapes or node names itself.
- format 2 -> 3: what an axis adds to a run is a typed sub-record, absent (None) where the run had none; format 2
  wrote an empty table ({}) there.
- format 3 -> 4: what each axis adds to a run is its entry of ``axes``, by the axis's name (``axes.fault``,
  ``axes.probe``, ``axes.read_split``, ``axes.stall``, a third party's own), typed by the axis's record
  (``benchlib.axis.Axis.record``, in the axis's package); the core manifest names no axis. A fault run's entry
  holds what format 3 kept beside it (failover, ``fault_at_s`` as ``happened_s``, ``fault_steps`` as
  ``steps_done``, semisync, promotion, heal, survivor, ledger, proxy).

A record reads by attribute (``m.axis("fault").ledger``, ``m.audit.mismatches``) and, as the plain tables older code
and notebooks read, by key (``m.axis("fault")["ledger"]``); fields benchlib does not know are kept.
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from benchlib import catalogue
from benchlib.axis import AxisRecord
from benchlib.errors import StoreError

__all__ = ["FORMAT_VERSION", "AuditRecord", "CampaignRecord", "ClusterFacts", "LabFacts", "Manifest", "UPGRADERS",
           "upgrade"]

MARGIN = 0.02  # the equivalence margin delta when a campaign sets none

FORMAT_VERSION = 4


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class NodeFacts(_Open):
    name: str
    role: str | None = None
    host: str | None = None
    port: int | None = None
    site: str | None = None
    rtt_ms: float | None = None  # round trip between the node's site and the lab's own (0: same; None: unknown)


class ClusterFacts(_Open):
    """What analysis needs of the run's cluster."""

    system: str | None = None  # benchlib.systems key: mariadb, galera, mysql, group_replication, pxc, aurora
    version: str | None = None  # the write node's @@version
    topology: str | None = None  # the label analysis groups by (async is the baseline)
    placement: str | None = None  # local | remote
    nodes: list[NodeFacts] = Field(default_factory=list)
    durability: str | None = None  # the lab's durability profile (a run's own setting is in its params)
    binlog: bool | None = None
    server: str | None = None  # the server binaries a local cluster ran ("MySQL 9.7.4")
    mode: str | None = None  # a remote group's mode (single-primary, multi-primary)
    cpus: str | None = None  # the CPU list its servers and load ran on (None: not pinned; a local lab's share the host)

    @property
    def rtt_ms(self) -> float | None:
        known = [n.rtt_ms for n in self.nodes if n.rtt_ms is not None]
        return max(known) if known else None


class LabFacts(_Open):
    name: str | None = None
    kind: str | None = None  # local | remote
    cluster: str | None = None
    topology: str | None = None
    system: str | None = None
    nodes: list[str] = Field(default_factory=list)
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    facts: ClusterFacts = Field(default_factory=ClusterFacts)


class AuditRecord(AxisRecord):
    """The consistency audit after the run (``campaign.setup.Audit``): does every node hold the write node's data?"""

    nodes: list[str] = Field(default_factory=list)
    tables: list[str] = Field(default_factory=list)
    checksums: dict[str, dict[str, int | None]] = Field(default_factory=dict)  # node -> table -> checksum
    positions: dict[str, JsonValue] = Field(default_factory=dict)  # node -> its replication position when checked
    mismatches: list[str] = Field(default_factory=list)  # what differs, in words (empty: identical)
    wait_s: float | None = None
    check_s: float | None = None
    skipped: str | None = None  # why nothing was compared (a system with one storage ...)

    @property
    def identical(self) -> bool | None:
        return None if self.skipped else not self.mismatches


#: the sub-records of format 3 (format 2 wrote an empty table where a run had none)
SUB_RECORDS = ("audit", "probe", "read_split", "fault", "ledger")
#: format 3's top-level entries of the fault axis -> their names in its format-4 entry (``axes.fault``)
_V3_FAULT = {"failover": "failover", "fault_at_s": "happened_s", "fault_steps": "steps_done", "semisync": "semisync",
             "promotion": "promotion", "heal": "heal", "survivor": "survivor", "ledger": "ledger", "proxy": "proxy"}
#: format 3's top-level entries that were an axis's whole entry
_V3_AXES = ("probe", "read_split", "stall")


class Manifest(_Open):
    format_version: int
    run_id: str
    #: ok | failed | invalid (it ran, but its cluster broke an invariant: benchlib.systems.invariants) | disturbed
    #: (it ran, but lost more of the host's CPU to others than the campaign allows: redone, left out)
    status: str
    reason: str | None = None
    started_utc: str
    ended_utc: str
    params: dict[str, JsonValue] = Field(default_factory=dict)
    frames: list[str] = Field(default_factory=list)
    lab: LabFacts = Field(default_factory=LabFacts)
    summary: dict[str, JsonValue] = Field(default_factory=dict)
    load_window_s: list[float | None] | None = None
    catch_up_s: float | None = None
    catch_up_low_s: float | None = None
    in_sync_wait_s: float | None = None
    sampler: dict[str, JsonValue] = Field(default_factory=dict)
    server_variables: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)  # node -> variable -> value
    sysbench: dict[str, JsonValue] = Field(default_factory=dict)  # the options of the load
    campaign: dict[str, JsonValue] = Field(default_factory=dict)  # its campaign's name and resolved specs
    git_revision: str | None = None
    warmup_s: float | None = None
    client_hosts: dict[str, JsonValue] | None = None
    clock_offsets: dict[str, JsonValue] | None = None
    breaches: list[dict[str, JsonValue]] = Field(default_factory=list)  # why an invalid run is invalid (Breach.as_dict)
    audit: AuditRecord | None = None  # the consistency audit after the run
    #: what each axis added to the run, by the axis's name (``benchlib.axis.Axis.record``: its typed view,
    #: ``AXES.lookup(name).recorded(m)``): the stale-read probe's options, a read split's readers, a fault run's
    #: fault, failover, ledger and heal, a stall ...; an axis the run did not have has no entry
    axes: dict[str, AxisRecord] = Field(default_factory=dict)
    #: what took the host from the lab over the load window (benchlib.analysis.interference.of_run): steal, foreign
    #: CPU, their sum lost_cpu, pressure, frequency, the top foreign command
    interference: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("audit", mode="before")
    @classmethod
    def _absent(cls, value: Any) -> Any:
        return value or None  # an empty table: the run had none

    def axis(self, name: str) -> AxisRecord | None:
        """The entry axis ``name`` added to this run (read by attribute or key); None: the run had none."""
        return self.axes.get(name)

    @classmethod
    def of(cls, data: dict[str, JsonValue]) -> "Manifest":
        """The typed view of a manifest dict (upgraded first when it is of an older format)."""
        return cls.model_validate(upgrade(data))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_dict(self) -> dict[str, JsonValue]:
        """The manifest as it is written (every field, those benchlib does not know included)."""
        return self.model_dump(mode="json")


class CampaignRecord(_Open):
    """A campaign folder's ``campaign.json``: the resolved campaign and lab specs and the plan (written once, when
    the folder is created), what its runs sample, the host and the revision. Read once per analysis
    (``benchlib.store.read_campaign_record``); fields benchlib does not know are kept."""

    campaign: dict[str, JsonValue] = Field(default_factory=dict)  # the campaign spec, resolved
    lab: dict[str, JsonValue] = Field(default_factory=dict)  # the lab spec, resolved
    plan: list[dict[str, JsonValue]] = Field(default_factory=list)  # one row per planned run: run_id and parameters
    metrics: list[str] = Field(default_factory=list)  # what every run samples beyond lag and replication state
    created_utc: str | None = None
    git_revision: str | None = None
    host: dict[str, JsonValue] = Field(default_factory=dict)  # the machine: cpus, cpu_model, kernel, memory

    @property
    def name(self) -> str:
        return str(self.campaign.get("name") or "")

    @property
    def margin(self) -> float:
        """The equivalence margin the campaign's spec set, else 2%."""
        value = self.campaign.get("margin")
        return float(value) if isinstance(value, (int, float)) and 0 < value < 1 else MARGIN

    @property
    def target_halfwidth(self) -> float | None:
        """The relative half-width a configuration's 95% interval should reach (``target_halfwidth``), or None: the
        analysis default."""
        value = self.campaign.get("target_halfwidth")
        return float(value) if isinstance(value, (int, float)) and 0 < value < 1 else None

    @property
    def settle_within(self) -> float | None:
        """The precision the campaign's headline ratios settle at (``settle_within``), or None: settled by verdict."""
        value = self.campaign.get("settle_within")
        return float(value) if isinstance(value, (int, float)) and 0 < value < 1 else None

    def _table(self, name: str) -> dict[str, JsonValue]:
        """A table of the campaign spec (``[interference]``, ``[search]``): empty when it had none."""
        value = self.campaign.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def redo_above(self) -> float:
        """The share of the host's CPU lost to others above which a run of the campaign is disturbed."""
        value = self._table("interference").get("redo_above")
        return float(value) if isinstance(value, (int, float)) and 0 < value <= 1 else 0.10

    @property
    def search_precision(self) -> float:
        value = self._table("search").get("precision", 0.02)
        return float(value) if isinstance(value, (int, float)) else 0.02

    @property
    def cores(self) -> int | None:
        value = self.host.get("cpus")
        return value if isinstance(value, int) else None

    def plan_values(self, key: str) -> set[Any]:
        """The values ``key`` takes over the planned runs."""
        return {run.get(key) for run in self.plan if key in run}


# ---- upgraders -----------------------------------------------------------------------------------------------

_LOCAL_SYSTEM = {"single": "mariadb", "async": "mariadb", "semisync": "mariadb", "galera": "galera"}


def _v1_to_v2(m: dict[str, Any]) -> dict[str, Any]:
    """Derive ``lab.facts`` from the local lab spec a format-1 manifest carries (remote runs of format 1 get
    their system from the remote spec's cluster, and no round-trip times)."""
    lab = dict(m.get("lab") or {})
    spec = (m.get("campaign") or {}).get("lab_spec") or {}
    cluster = lab.get("cluster")
    cspec = (spec.get("clusters") or {}).get(cluster) or {}
    nodes = lab.get("nodes") or []
    if "system" in cspec:  # a remote lab spec
        facts = {"system": cspec["system"], "topology": lab.get("topology"), "placement": "remote",
                 "nodes": [{"name": n} for n in nodes], "durability": None, "binlog": None}
    else:
        topology = cspec.get("topology") or lab.get("topology")
        site_of = {n: (s, float(site.get("rtt_ms", 0.0))) for s, site in (spec.get("sites") or {}).items()
                   for n in site.get("nodes", [])}
        node_facts = []
        for n in nodes:
            site, rtt = site_of.get(n, (None, 0.0))
            node_facts.append({"name": n, "site": site, "rtt_ms": rtt})
        durability = cspec.get("durability") or (spec.get("defaults") or {}).get("durability") or "durable"
        facts = {"system": _LOCAL_SYSTEM.get(str(topology)), "topology": topology, "placement": "local",
                 "nodes": node_facts, "durability": durability,
                 "binlog": bool(cspec.get("binlog", catalogue.topology(str(topology)).binlog if topology in catalogue.TOPOLOGIES else True))}
    facts["version"] = ((m.get("server_variables") or {}).get(nodes[0]) or {}).get("version") if nodes else None
    lab.setdefault("system", facts["system"])
    lab["facts"] = facts
    return {**m, "lab": lab, "format_version": 2}


def _v2_to_v3(m: dict[str, Any]) -> dict[str, Any]:
    """Sub-records a run did not have (format 2 wrote an empty table) become absent."""
    return {**m, **{k: (m.get(k) or None) for k in SUB_RECORDS if k in m}, "format_version": 3}


def _v3_to_v4(m: dict[str, Any]) -> dict[str, Any]:
    """What each axis added moves under ``axes``, by the axis's name: the probe's, the read split's and the stall's
    tables as they were, and a fault run's fault with what happened (failover, when the fault came, its steps as done,
    semi-sync, the promotion, the heal, the survivor, the ledger, the proxy) in one entry."""
    out = {k: v for k, v in m.items() if k not in (*_V3_AXES, "fault", *_V3_FAULT)}
    axes = {k: m[k] for k in _V3_AXES if m.get(k)}
    if m.get("fault"):
        axes["fault"] = {**m["fault"], **{new: m[old] for old, new in _V3_FAULT.items() if old in m}}
    return {**out, "axes": axes, "format_version": 4}


#: format version -> function upgrading a manifest dict of that version to the next one
UPGRADERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def upgrade(data: dict[str, Any], source: str = "manifest") -> dict[str, Any]:
    version = data.get("format_version")
    while version != FORMAT_VERSION:
        if version not in UPGRADERS:
            raise StoreError(f"{source}: run format {version!r} cannot be read by this benchlib "
                             f"(it reads format {FORMAT_VERSION})", hint="upgrade benchlib")
        data = UPGRADERS[version](data)
        version = data["format_version"]
    return data
