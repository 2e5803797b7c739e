"""Like for like: what differs between the two clusters of a ratio besides the replication mode it compares.

A ratio of semi-sync to async throughput measures semi-sync only when nothing else differs. Each cluster's traits
(``benchlib.traits``: servers, binary log, durability, buffer pool, redo log, performance_schema, server version,
applier threads, CPUs, round trip, the row ids of sysbench's tables) are compared, and each difference is one of:

- **confound**: it could move the ratio by itself, so the ratio cannot be put down to the mode. Servers on a
  shared host (every replica writes its relay log, binary log and data to the same disk and CPUs as the write node:
  on a 2-core VM a second async replica costs the write node 12-17%), a binary log on one side only where both
  systems could run either way, durability, buffer pool, redo log, performance_schema, server version, the CPUs the
  clusters ran on, the round trip to their far nodes, sysbench's tables holding other row ids (an older benchlib
  prepared them through AUTO_INCREMENT, which a Galera node spaces by the cluster's size). The verdict becomes
  "confounded by ...", with how to make
  the comparison like for like;
- **design**: it belongs to the system compared (Galera certifies write sets and keeps no binary log, which async
  replication cannot do without): named beside the ratio, with its measured effect
  (``benchlib.analysis.mechanism``);
- **noted**: it differs but does not set what a commit waits for (applier threads set how fast replicas apply:
  their lag), or the clusters did not share a host.

Traits a run did not record (an older benchlib) are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchlib import catalogue
from benchlib.traits import NAMES, TRAITS

__all__ = ["Unlike", "confounds", "placement_words", "shared_host", "unlike", "words"]


@dataclass(frozen=True)
class Unlike:
    """One way two clusters differ: the trait, its value on the compared cluster and on the baseline, the kind
    (confound, design, noted), why it matters or not, and how to make the two alike."""

    trait: str
    this: str
    baseline: str
    kind: str
    why: str = ""
    remedy: str = ""

    @property
    def what(self) -> str:
        return NAMES.get(self.trait, self.trait)

    def words(self, this: str = "", baseline: str = "") -> str:
        names = f" ({this} against {baseline})" if this and baseline else ""
        return f"{self.what}: {self.this} against {self.baseline}{names}"


def _value(runs: pd.DataFrame, column: str):
    """The value a column takes over ``runs`` (its most common one; None when not recorded)."""
    if column not in runs:
        return None
    v = runs[column].dropna()
    if v.empty:
        return None
    return v.astype(str).mode().iloc[0]


def _cpus_overlap(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if "all" in (a, b):
        return True
    return bool(_cpu_set(a) & _cpu_set(b))


def _cpu_set(text: str) -> set[int]:
    out: set[int] = set()
    for part in str(text).split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def shared_host(this: pd.DataFrame, base: pd.DataFrame) -> tuple[bool, str]:
    """Whether the two clusters' servers shared a host's CPUs or disk, and in words how."""
    placement = {_value(this, "placement"), _value(base, "placement")}
    if placement != {"local"}:
        return False, "on servers of their own" if placement == {"remote"} else ""
    a, b = _value(this, "cluster_cpus"), _value(base, "cluster_cpus")
    if _cpus_overlap(a, b):
        return True, "sharing the host's CPUs and disk"
    if a is not None and b is not None:
        return True, f"on their own CPUs ({a} and {b}) but sharing the host's disk"
    return True, "on one host"


def _servers(n: str) -> str:
    try:
        k = int(n)
    except ValueError:
        return n
    return f"{k} server{'s' if k != 1 else ''}"


def unlike(this: pd.DataFrame, base: pd.DataFrame) -> list[Unlike]:
    """Every way the cluster of runs ``this`` differs from the baseline's runs ``base`` besides the mode they
    compare (their topologies), classified (see the module)."""
    out: list[Unlike] = []
    shared, how = shared_host(this, base)
    topo_a, topo_b = _value(this, "topology"), _value(base, "topology")
    facts_a = catalogue.TOPOLOGIES.get(topo_a) if topo_a else None
    facts_b = catalogue.TOPOLOGIES.get(topo_b) if topo_b else None
    for trait in TRAITS:
        col = f"cluster_{trait}"
        a, b = _value(this, col), _value(base, col)
        if a is None or b is None or a == b:
            continue
        out.append(_classify(trait, a, b, shared, how, facts_a, facts_b))
    rtt_a, rtt_b = _value(this, "rtt_ms"), _value(base, "rtt_ms")
    if rtt_a is not None and rtt_b is not None and abs(float(rtt_a) - float(rtt_b)) >= 0.5:
        rtts = (f"{float(rtt_a):g} ms", f"{float(rtt_b):g} ms")
        waits = [f for f, r in ((facts_a, rtt_a), (facts_b, rtt_b)) if f is not None and f.commit_waits
                 and float(r) > 0]
        if facts_a is not None and facts_b is not None and not (facts_a.commit_waits and facts_b.commit_waits):
            quiet = facts_b if not facts_b.commit_waits else facts_a
            out.append(Unlike("rtt_ms", *rtts, "noted",
                              f"{quiet.name}'s commits wait for no other node, so where its nodes sit does not move "
                              f"it; the ratio prices the round trip {'the other' if waits else 'neither'} waits for"))
        else:
            out.append(Unlike("rtt_ms", *rtts, "confound", "a commit that waits for a far node waits its round trip",
                              "put both clusters' far nodes behind the same link (the same [sites] round trip)"))
    return out


def _classify(trait: str, a: str, b: str, shared: bool, how: str, facts_a, facts_b) -> Unlike:
    if trait == "servers":
        if not shared:
            return Unlike(trait, _servers(a), _servers(b), "noted", f"the clusters ran {how}" if how else "")
        return Unlike(trait, _servers(a), _servers(b), "confound",
                      f"{how}, every replica's relay log, binary log and data writes and its applying compete with "
                      "the write node's",
                      "give both clusters the same number of servers (e.g. semi-sync 1+2 beside async 1+2), or run "
                      "each on its own CPUs and disk")
    if trait == "binlog":
        on, off = (facts_b, facts_a) if a == "False" else (facts_a, facts_b)
        if on is not None and off is not None and on.needs_binlog and not off.needs_binlog:
            return Unlike(trait, "off" if a == "False" else "on", "off" if b == "False" else "on", "design",
                          f"{off.name} replicates without one, {on.name} through it")
        return Unlike(trait, "off" if a == "False" else "on", "off" if b == "False" else "on", "confound",
                      "a binary log adds its writes and, with sync_binlog = 1, an fsync per group commit",
                      "the same binary log on both (binlog = true or false in the lab spec)")
    if trait == "appliers":
        return Unlike(trait, a, b, "noted", "they set how fast replicas apply, not what a commit waits for")
    if trait == "cpus":
        return Unlike(trait, a, b, "confound", "one cluster had other CPUs than the other",
                      "the same CPU placement for both (placement in the lab spec)")
    if trait == "row_ids":
        return Unlike(trait, a, b, "confound",
                      "sysbench draws row ids from 1 to the table size: where only some of them exist, most point "
                      "selects read nothing and most updates change nothing, and the rows found are fewer",
                      "run the campaign again: benchlib now prepares the ids 1 to the table size on every system "
                      "(an older one let a Galera node or a multi-primary group space them out)")
    remedies = {"sync_binlog": "the same durability on both", "flush_log": "the same durability on both",
                "buffer_pool": "the same buffer_pool on both", "redo_log": "the same redo_log on both",
                "performance_schema": "the same performance_schema setting on both",
                "version": "the same server version on both (basedir, or the server each system runs)"}
    if trait == "performance_schema":
        a, b = ("on" if a == "True" else "off"), ("on" if b == "True" else "off")
    return Unlike(trait, a, b, "confound", "", remedies.get(trait, f"the same {TRAITS[trait]} on both"))


def confounds(differences: list[Unlike]) -> list[Unlike]:
    return [d for d in differences if d.kind == "confound"]


def words(differences: list[Unlike], this: str, baseline: str) -> str:
    """The confounds in words, for a verdict: what differs, why it could move the ratio, how to compare like with
    like ("" when nothing confounds it)."""
    found = confounds(differences)
    if not found:
        return ""
    what = "; ".join(f"{d.what}, {d.this} in {this} against {d.baseline} in {baseline}" for d in found)
    why = "; ".join(dict.fromkeys(d.why for d in found if d.why))
    todo = "; ".join(dict.fromkeys(d.remedy for d in found if d.remedy))
    return (f"confounded by {what}{' (' + why + ')' if why else ''}: the ratio is not the replication mode's alone"
            + (f"; to compare like with like, {todo}" if todo else ""))


def placement_words(runs: pd.DataFrame, host_cpus: int | None = None) -> str:
    """Where the campaign's clusters ran, in one sentence: on CPU sets of their own, or sharing the host's CPUs (and,
    on one host, its disk). "" for a remote lab or a campaign of one cluster."""
    ok = runs[runs.status == "ok"] if "status" in runs else runs
    if ok.empty or "cluster" not in ok or ok.cluster.nunique() < 2:
        return ""
    local = ok[ok.placement == "local"] if "placement" in ok else ok.iloc[:0]
    if local.empty:
        return ""
    cpus = {str(c): _value(g, "cluster_cpus") for c, g in local.groupby("cluster", sort=True)}
    many = f"{host_cpus} " if host_cpus else ""
    if all(v in (None, "all") for v in cpus.values()):
        need = 2 * len(cpus)
        room = (f" (a CPU set for each needs {need} CPUs: the host has {host_cpus})" if host_cpus and host_cpus < need
                else " (placement = \"shared\")" if host_cpus else "")
        servers = {_value(g, "cluster_servers") for _, g in local.groupby("cluster")}
        alike = (f"with {servers.pop()} servers each, their other servers took alike from their write nodes"
                 if len(servers) == 1 and None not in servers
                 else "a cluster with more servers takes more of both from its own write node")
        return (f"The {len(cpus)} clusters shared the host's {many}CPUs and its disk{room}; each ran while the others "
                f"idled, and {alike}.")
    sets = ", ".join(f"{c} on CPUs {v}" for c, v in cpus.items())
    return (f"Each cluster ran on CPUs of its own, with the load driving it ({sets}); they shared the host's disk.")
