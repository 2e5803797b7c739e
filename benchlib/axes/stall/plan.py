"""The stall axis's planning: per cluster with a replica whose system can stall it, one variant per
``stall.duration_s``; a cluster of one node, a system without a stall, or a stall that does not end within the load
is refused, saying why."""

from __future__ import annotations

from typing import Any

from benchlib.systems import base as systems
from benchlib.axes.stall import StallPlan
from benchlib.errors import SpecError

__all__ = ["variants"]


def variants(spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[StallPlan]]:
    table = spec.axes["stall"]
    longest = max(table.duration_s)
    if table.at_s + longest >= spec.load.time_s:
        raise SpecError(f"{source}: the stall ends {table.at_s + longest:g} s into the load, which lasts "
                        f"{spec.load.time_s} s", hint="a longer load.time_s, or an earlier or shorter stall, leaving "
                                                      "time to see the replica catch up")
    out: dict[str, list[StallPlan]] = {}
    for c in clusters:
        if lab.clusters[c].node_count < 2:
            raise SpecError(f"{source}: [stall] stops a replica's applier; cluster {c} has one node",
                            hint=f"leave {c} out of the campaign's clusters")
        system = lab.system_of(c)
        if systems.get(system).stall is None:
            raise SpecError(f"{source}: [stall] on cluster {c}: benchlib knows no way to stop a {system} node's "
                            "applier from SQL", hint=f"leave {c} out of the campaign's clusters")
        out[c] = [StallPlan(table.at_s, d) for d in table.duration_s]
    return out
