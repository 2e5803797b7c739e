"""The stale-read probe and its read consistency, an axis: ``[probe]`` runs a writer and readers beside every run's
load (``benchlib.sampling.stale_reads``), each run under one of ``probe.consistency`` (the campaign's axis: every
setting a cluster's system has); analysis counts the stale reads per setting and what each setting costs
(``benchlib.axes.probe.analysis``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchlib.specs import Strict

__all__ = ["ProbeSpec"]


class ProbeSpec(Strict):
    """The stale-read probe beside every run (``benchlib.sampling.stale_reads``) and the read consistency axis."""

    write_rate: float = Field(default=10.0, gt=0, le=1000)  # commits per second on the write node
    read_rate: float = Field(default=10.0, gt=0, le=1000)  # reads per second on each other node
    consistency: list[str] = Field(default_factory=list)  # read consistency settings (empty: each system's default)
    #: a causal read that waits longer than this for the writer's position is a failed read
    wait_timeout_s: float = Field(default=10.0, gt=0, le=600)


def _facts(m: dict[str, Any]) -> dict[str, Any]:
    """The read consistency the probe's sessions ran under and its system's default (the weakest, what a setting's
    cost is measured against); None without the probe."""
    probe = m.get("probe") or {}
    return {"read_consistency": probe.get("consistency") if probe else None,
            "default_consistency": probe.get("default") if probe else None}
