"""The sustained-throughput search, an axis: with ``sustained = true``, after the planned (closed-loop) runs, one search
per cluster, settings and workload finds the highest open-loop rate every member sustains (``[search]`` says how;
``benchlib.campaign.search`` runs it, ``benchlib.analysis.sustained`` judges it). Its runs carry the parameter
``search``; it adds no variant to the planned runs."""

from __future__ import annotations

from benchlib.axes.registry import Axis, register

__all__ = ["AXIS"]

AXIS = register(Axis("search", "the sustained-throughput search", active=lambda spec: spec.sustained,
                     docs="docs/campaigns/sustained.md"))
