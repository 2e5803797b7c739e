"""The fault axis's planning: per cluster, the faults of ``[fault]`` (kind x target x rejoin path), what the lab
cannot inject or a promotion on a system that fails over by itself refused, saying why. The lab spec is asked what it
can do (``lacks("faults")``, ``fault_refusal``), never which class it is."""

from __future__ import annotations

import itertools
from typing import Any

from benchlib import catalogue
from benchlib.axes.fault import FaultPlan
from benchlib.axes.fault.sequences import SINGLE, Step, steps_of
from benchlib.errors import SpecError

__all__ = ["variants"]


def variants(spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[FaultPlan]]:
    """Per cluster, the faults of ``[fault]``. What the lab cannot inject, or a promotion on a system that fails over
    by itself, is refused here, saying why."""
    f = spec.axes["fault"]

    def refuse(what: str, hint: str) -> SpecError:
        return SpecError(f"{source}: {what}", hint=hint)

    lacks = lab.lacks("faults")
    if lacks:
        raise refuse(f"[fault] needs a lab that can inject faults: {lacks}",
                     "point the campaign at a local lab spec (examples/labs/)")
    if spec.load.warmup_s:
        raise refuse("[fault] runs have no warm-up (the fault comes at fault.at_s into the load)",
                     "set load.warmup_s = 0, or move fault.at_s later")
    at = f"fault.at_s = {f.last_s:g}" if f.first_s == f.last_s else f"fault.at_s's range ends at {f.last_s:g}, which"
    if f.last_s >= spec.load.time_s:
        raise refuse(f"{at} is not within the load (load.time_s = {spec.load.time_s})",
                     "a fault at_s smaller than load.time_s, leaving time to see the recovery")
    own = f.own()
    for kind in f.kind:
        last = max(st.at_s for st in steps_of(kind, "write_node", f.duration_s, own))
        if f.last_s + last >= spec.load.time_s:
            raise refuse(f"fault {kind}: its last step comes {f.last_s + last:g} s into the load, which lasts "
                         f"{spec.load.time_s} s", "a longer load.time_s, or an earlier fault.at_s")
    if f.rejoin_at_s is not None:
        if f.kind != ["kill"]:
            raise refuse("fault.rejoin_at_s restarts a killed node: it goes with kind = \"kill\" only",
                         "kind = \"kill\", or drop rejoin_at_s")
        if not f.last_s < f.rejoin_at_s < spec.load.time_s:
            raise refuse(f"fault.rejoin_at_s = {f.rejoin_at_s:g} must fall after fault.at_s ({f.last_s:g}) and within "
                         f"the load (load.time_s = {spec.load.time_s})", "leave time after it to see the rejoin")
    if "discard" in f.relay_logs and f.failover == "none":
        raise refuse("fault.relay_logs = \"discard\" is what the lab's promotion does: no cluster is promoted "
                     "(fault.failover = \"none\")", "fault.failover = \"promote\"")
    wanted = f.failover if isinstance(f.failover, dict) else {}
    unknown = sorted(set(wanted) - set(clusters))
    if unknown:
        raise refuse(f"fault.failover names {unknown}, not clusters of this campaign", f"clusters: {clusters}")
    out: dict[str, list[FaultPlan]] = {}
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
        if f.proxy == "router" and not getattr(lab.clusters[c], "router", False):
            raise refuse(f"fault.proxy = \"router\" on cluster {c}: MySQL Router fronts a Group Replication group "
                         "whose lab spec puts it there", f"router = true in [clusters.{c}] of the lab spec (a "
                         "group_replication cluster), or leave the cluster out")
        plans: list[FaultPlan] = []
        seen: set[tuple[str, str, str, bool]] = set()
        for kind, target, rejoin, relay_logs, idle in itertools.product(f.kind, f.target,
                                                                       f.rejoin if f.rejoin_at_s else ["auto"],
                                                                       f.relay_logs if promote else ["apply"],
                                                                       f.open_transaction):
            if idle and kind != "switchover":
                continue  # an idle transaction is a switchover's axis
            steps = steps_of(kind, target, f.duration_s, own)
            if kind not in SINGLE:  # a sequence names its own targets: one run whatever fault.target says
                target = "write_node"
                if (kind, rejoin, relay_logs, idle) in seen:
                    continue
                seen.add((kind, rejoin, relay_logs, idle))
            if kind == "switchover" and relay_logs == "discard":
                continue  # a switchover promotes by its own steps: the relay logs are applied
            for step in steps:
                _refuse_step(lab, c, kind, step, size, refuse)
            whole = any(st.target == "all_nodes" for st in steps)
            if (target == "replica" or whole) and relay_logs == "discard":
                continue  # a replica's fault or a power cut promotes nothing: its run is the "apply" one's
            if whole and promote and c in wanted:
                raise refuse(f"fault {kind} on cluster {c} kills every node: there is no replica to promote",
                             f"leave {c} out of fault.failover")
            if f.rejoin_at_s is not None and promote and target == "write_node":
                raise refuse(f"fault.rejoin_at_s on cluster {c}: a promoted cluster's old primary comes back by the "
                             "heal's rebuild, not by a rejoin", f"target a replica, or leave {c} out of the promotion")
            if rejoin == "full" and f.rejoin_at_s is not None and how is not None and how.failover == "promote":
                raise refuse(f"fault.rejoin = \"full\" on cluster {c}: {system} replicas catch up from their GTID "
                             "position; the lab has no full transfer for them", "rejoin = \"auto\" there")
            if relay_logs == "discard" and size > 2:
                raise refuse(f"fault.relay_logs = \"discard\" on cluster {c} of {size} nodes: a replica that applied "
                             "more than the promoted one could not follow it, and the lab does not rebuild it",
                             f"a cluster of one primary and one replica, or leave {c} out of the promotion")
            promoting = promote and target != "replica" and not whole and kind != "switchover"
            plans.append(FaultPlan(kind, target, f.first_s, f.duration_s, promoting, f.detect_s,
                                   f.write_rate, f.timeout_s, f.heal_timeout_s, f.rejoin_at_s, rejoin, f.proxy,
                                   steps, relay_logs if promoting else "apply", f.errant if promoting else "rebuild",
                                   idle, f.switchover_wait_s,
                                   at_range=f.at_s if isinstance(f.at_s, tuple) else None, seed=spec.seed))
        out[c] = plans
    return out


def _refuse_step(lab: Any, c: str, kind: str, step: Step, size: int, refuse: Any) -> None:
    """A step of fault ``kind`` on cluster ``c`` that the lab cannot stage, refused saying why."""
    target, do = step.target, step.do
    what = f"fault {kind}" if kind == do else f"fault {kind}'s {do} of {target} at {step.at_s:g} s"
    if target == "replica" and size < 2:
        raise refuse(f"{what}: cluster {c} has one node, no replica", f"leave {c} out, or target write_node")
    names = lab.nodes_of(c)
    nodes = ([names[0]] if target == "write_node" else [names[-1]] if target == "replica" else
             list(names) if target == "all_nodes" else [])
    if target == "all_nodes" and do != "kill":
        raise refuse(f"{what}: every node of a cluster is a target of a kill only (a power cut)", "do = \"kill\"")
    site: str | None = target[5:] if target.startswith("site:") else None
    if site is not None and do not in ("cut", "release"):
        raise refuse(f"{what}: a site is a target of a cut only ({target})", "kind = \"cut\"")
    if site is not None and not any(lab.site_of(n) == site for n in lab.nodes_of(c)):
        raise refuse(f"{what}: no node of cluster {c} is in site {site}", f"sites: {', '.join(lab.sites) or 'none'}")
    if do == "release":
        return
    refused = lab.fault_refusal(do, nodes, site)
    if refused:
        hint = ("place the node alone in a [sites] entry of the lab spec, and the other nodes of its cluster in "
                "sites of their own" if do == "isolate" else
                "a site in the lab spec for a cut ([sites]), or another fault kind")
        raise refuse(f"{what} on cluster {c}: {refused}", hint)
