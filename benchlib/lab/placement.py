"""Where a lab's clusters run on the host's CPUs: pinned, each to a CPU set of its own, or shared.

Clusters side by side on one host compete for its CPUs and its disk: a comparison of two of them prices that
competition too (``benchlib.analysis.likeness``). Where the host has the CPUs, each cluster's servers, and the load
that drives them, run on a CPU set of their own (``taskset``: the servers are started under it, sysbench too), all
sets the same size, so what one cluster does cannot take CPU from another. The disk stays shared; the report says so.

A lab spec's ``placement``:

- ``"auto"`` (the default): pinned when the host has at least ``MIN_CPUS`` CPUs for every cluster, else shared;
- ``"pinned"``: pinned (a CPU or more a cluster), or the lab is refused with what it needs;
- ``"shared"``: every server and load on every CPU of the host.
"""

from __future__ import annotations

import os

from benchlib.errors import SpecError

__all__ = ["MIN_CPUS", "cpu_list", "host_cpus", "plan"]

MIN_CPUS = 2  # a cluster's own set holds at least this many CPUs: its write node and its load beside it


def host_cpus() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def cpu_list(cpus: list[int]) -> str:
    """CPUs in taskset's list form: [0, 1, 2, 5] -> "0-2,5"."""
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(f"{start}-{c}" if c != start else f"{c}")
            start = None
    return ",".join(out)


def plan(clusters: list[str], placement: str = "auto", cpus: list[int] | None = None) -> dict[str, str | None]:
    """Per cluster, the CPU list its servers and load run on (None: every CPU, shared with the other clusters)."""
    cpus = host_cpus() if cpus is None else sorted(cpus)
    if placement == "shared" or (placement == "auto" and (len(cpus) < MIN_CPUS * len(clusters) or len(clusters) < 2)):
        return {c: None for c in clusters}
    if len(cpus) < len(clusters):
        raise SpecError(f"placement = \"pinned\" needs a CPU for each of the {len(clusters)} clusters; this host "
                        f"gives benchlib {len(cpus)}",
                        hint='use placement = "shared" (or "auto": pinned where the host has the CPUs), or fewer '
                             "clusters in one lab")
    each = len(cpus) // len(clusters)  # equal sets: no cluster gets more CPU than another
    return {c: cpu_list(cpus[i * each:(i + 1) * each]) for i, c in enumerate(clusters)}
