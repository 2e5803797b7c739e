"""A stalled replica, an axis: ``[stall]`` stops the applier of the cluster's last node for ``duration_s`` seconds,
``at_s`` into every run's load, as a long DDL or a backup lock does in production (``benchlib.axes.stall.run``: each
system's own way, ``benchlib.systems.System.stall``: the replica's SQL thread, the group's applier channel, a Galera
node's ``FLUSH TABLES WITH READ LOCK``). What the stall does is the measurement: with the stale-read probe
(``[probe]``), the share of stale reads on that replica and how stale they got, and how long causal reads waited;
the run stays valid (the stopped applier it causes is not a breach of the run's mode)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field, field_validator

from benchlib.axis import AxisRecord
from benchlib.specs import Strict
from benchlib.schema import Cell

__all__ = ["StallPlan", "StallRecord", "StallSpec"]


class StallSpec(Strict):
    """[stall]: a replica's applier stopped for ``duration_s`` seconds, ``at_s`` into each run's load."""

    #: when the applier stops, seconds into the load
    at_s: float = Field(default=5.0, gt=0)
    duration_s: list[float] = Field(default=[5.0], min_length=1)  # an axis: each length is a configuration

    @field_validator("duration_s", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, (int, float)) else v


@dataclass(frozen=True)
class StallPlan:
    """One run's stall: when, how long, on the cluster's last node."""

    at_s: float
    duration_s: float

    def identity(self) -> list[Any]:
        return [{"stall": asdict(self)}]

    def params(self) -> dict[str, Cell]:
        return {"stall_s": self.duration_s}


class StallRecord(AxisRecord):
    """What a run's manifest records of its stall (``stall``): the node, the plan, how, and when its applier really
    stood still (sampler clock; None when the stall never began)."""

    node: str
    at_s: float
    duration_s: float
    how: str = ""
    started_s: float | None = None
    ended_s: float | None = None
    held_s: float | None = None


def _facts(s: StallRecord | None) -> dict[str, Cell]:
    """The stalled node and how long its applier really stood still (None without a stall)."""
    if s is None:
        return dict.fromkeys(("stalled_node", "stalled_for_s", "stalled_from_s", "stalled_to_s"))
    return {"stalled_node": s.node, "stalled_for_s": s.held_s, "stalled_from_s": s.started_s,
            "stalled_to_s": s.ended_s}
