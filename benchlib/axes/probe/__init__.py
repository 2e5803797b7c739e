"""The stale-read probe and its read consistency, an axis: ``[probe]`` runs a writer and readers beside every run's
load (``benchlib.sampling.stale_reads``), each run under one of ``probe.consistency`` (the campaign's axis: every
setting a cluster's system has); analysis counts the stale reads per setting and what each setting costs
(``benchlib.axes.probe.analysis``)."""

from __future__ import annotations


from pydantic import Field

from benchlib.axis import AxisRecord
from benchlib.specs import Strict
from benchlib.schema import Cell

__all__ = ["ROUTER_READER", "ProbeRecord", "ProbeSpec"]


#: the probe's reader behind MySQL Router's read-only port (``[probe] router``): its reads carry this node name
ROUTER_READER = "router:ro"


class ProbeSpec(Strict):
    """The stale-read probe beside every run (``benchlib.sampling.stale_reads``) and the read consistency axis."""

    write_rate: float = Field(default=10.0, gt=0, le=1000)  # commits per second on the write node
    read_rate: float = Field(default=10.0, gt=0, le=1000)  # reads per second on each other node
    consistency: list[str] = Field(default_factory=list)  # read consistency settings (empty: each system's default)
    #: a causal read that waits longer than this for the writer's position is a failed read
    wait_timeout_s: float = Field(default=10.0, gt=0, le=600)
    #: also a reader through the group's MySQL Router read-only port (a Group Replication cluster with router = true
    #: in the lab spec), as an application behind Router reads; its reads are reported apart ("via router")
    router: bool = False


def _facts(probe: "ProbeRecord | None") -> dict[str, Cell]:
    """The read consistency the probe's sessions ran under and its system's default (the weakest, what a setting's
    cost is measured against); None without the probe."""
    return {"read_consistency": probe.consistency if probe else None,
            "default_consistency": probe.default if probe else None}


class ProbeRecord(AxisRecord):
    """The stale-read probe's options and the read consistency its readers ran under."""

    consistency: str | None = None
    default: str | None = None  # the system's default read consistency
    read_rate: float | None = None
    write_rate: float | None = None
    wait_timeout_s: float | None = None
    router: bool | None = None  # a reader through MySQL Router's read-only port too
