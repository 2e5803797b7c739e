"""The read split, an axis: ``load.read_threads`` sysbench threads read (oltp_read_only) on every node besides the write
node while the writers write, each session under the run's read consistency (``benchlib.axes.read_split.run``); the
readers' throughput is compared like the writers' (metric ``read_tps``)."""

from __future__ import annotations

from benchlib.axes.registry import Axis, register

__all__ = ["AXIS"]

AXIS = register(Axis("read_split", "the read split", active=lambda spec: spec.load.read_threads > 0,
                     plan="benchlib.axes.read_split.plan:variants", run="benchlib.axes.read_split.run:hook"))
