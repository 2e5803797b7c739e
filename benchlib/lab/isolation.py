"""Cutting one node off from the other nodes of its cluster while its clients still reach it (the ``isolate`` fault).

A host that loses its network towards the rest of the cluster, or a primary cut off from its replicas while the
application servers beside it still reach it: the writes it acknowledges then are the ones a failover loses. The lab
stages it with routes, in the WAN sites' network namespaces: in the node's namespace a ``blackhole`` route to the
address of every site that holds another node of its cluster, and in each of those namespaces one back to the node's
site. Packets between them are dropped where they are sent (a TCP connection stalls; a new one fails at once, as a
refused route does), while the clients of the root namespace (the load, the ledger writer, the sampler, the lab's own
connections) reach every node as before, through the hub.

So the node must be alone in its site, and every other node of its cluster in a site (a node on loopback shares the
clients' address: cutting it off would cut the clients too): ``benchlib.lab.spec.refusal`` says which is missing. ``release`` removes
the routes; ``forget`` first closes the sockets a killed node left in its namespace (a lost host sends nothing after
it is gone); ``leftovers`` finds routes a run did not remove (``benchlib lab heal`` removes them).
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from benchlib.errors import LabError

if TYPE_CHECKING:
    from benchlib.lab.layout import Layout

__all__ = ["forget", "isolate", "leftovers", "release", "remove"]


def _pairs(layout: "Layout", node: str) -> list[tuple[str, str]]:
    """(namespace, address) of every route that cuts ``node`` off: one way and back, per site of its peers."""
    me = layout.nodes[node]
    if me.site is None:
        raise LabError(f"{node} is on loopback: there is no route to cut", hint="place it alone in a WAN site")
    mine = layout.sites[me.site]
    sites = sorted({n.site for n in layout.cluster_nodes(me.cluster) if n.name != node and n.site and n.site != me.site})
    out = []
    for s in sites:
        out += [(mine.netns, layout.sites[s].address), (layout.sites[s].netns, mine.address)]
    return out


def _route(action: str, netns: str, address: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "-n", netns, "route", action, "blackhole", f"{address}/32"], capture_output=True,
                          text=True)


def isolate(layout: "Layout", node: str) -> list[str]:
    """Cut ``node`` off from the other nodes of its cluster; returns the sites it was cut from."""
    done: list[tuple[str, str]] = []
    for netns, address in _pairs(layout, node):
        res = _route("replace", netns, address)
        if res.returncode != 0:
            for n, a in done:
                _route("del", n, a)
            raise LabError(f"could not cut {node} off (blackhole route to {address} in {netns}): {res.stderr.strip()}",
                           hint="benchlib lab heal removes every cut")
        done.append((netns, address))
    me = layout.nodes[node]
    return sorted({n.site for n in layout.cluster_nodes(me.cluster) if n.site and n.site != me.site})


def forget(layout: "Layout", node: str) -> int:
    """A lost host's kernel is gone with it: the TCP sockets in ``node``'s namespace (it is alone in its site) are
    destroyed (``ss -K``), so that what its killed server had queued is never sent once the cut ends. A process killed
    on a live kernel leaves orphaned sockets that retransmit when the route comes back: the replicas (or the group)
    would then still receive the lost primary's last writes, which no lost host does. Returns how many it closed."""
    me = layout.nodes[node]
    if me.site is None:
        return 0
    res = subprocess.run(["ip", "netns", "exec", layout.sites[me.site].netns, "ss", "-K", "-t", "-H"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise LabError(f"could not close {node}'s sockets after its loss: {res.stderr.strip()}",
                       hint="ss -K needs the kernel's INET_DIAG_DESTROY")
    return len([line for line in res.stdout.splitlines() if line.strip()])


def release(layout: "Layout", node: str) -> None:
    """Undo ``isolate``: the routes between ``node`` and its cluster's other sites removed."""
    failed = [f"{a} in {n}: {r.stderr.strip()}" for n, a in _pairs(layout, node)
              if (r := _route("del", n, a)).returncode != 0 and "No such process" not in r.stderr]
    if failed:
        raise LabError(f"could not end the cut of {node}: {'; '.join(failed)}", hint="benchlib lab heal removes it")


def leftovers(layout: "Layout") -> list[tuple[str, str]]:
    """(namespace, address) of every blackhole route in the lab's sites: cuts a run did not release."""
    out = []
    for s in layout.sites.values():
        res = subprocess.run(["ip", "-n", s.netns, "route", "show", "type", "blackhole"], capture_output=True, text=True)
        out += [(s.netns, line.split()[1].split("/")[0]) for line in res.stdout.splitlines() if line.startswith("blackhole")]
    return out


def remove(routes: list[tuple[str, str]]) -> None:
    for netns, address in routes:
        _route("del", netns, address)
