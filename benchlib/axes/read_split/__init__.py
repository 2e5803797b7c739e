"""The read split, an axis: ``load.read_threads`` sysbench threads read (oltp_read_only) on every node besides the write
node while the writers write, each session under the run's read consistency (``benchlib.axes.read_split.run``); the
readers' throughput is compared like the writers' (metric ``read_tps``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchlib.axis import AxisRecord

__all__ = ["ReadSplitRecord", "axis"]  # and the axis itself: benchlib.axes.read_split.axis


class ReadSplitRecord(AxisRecord):
    """The read side of a read-split load: its nodes, the read consistency of its sessions and their statements,
    sysbench's summary per node."""

    threads: int | None = None
    consistency: str | None = None
    nodes: list[str] = Field(default_factory=list)
    statements: list[str] = Field(default_factory=list)
    summary: dict[str, dict[str, Any]] = Field(default_factory=dict)
