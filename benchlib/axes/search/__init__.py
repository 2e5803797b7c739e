"""The sustained-throughput search, an axis: with ``sustained = true``, after the planned (closed-loop) runs, one search
per cluster, settings and workload finds the highest open-loop rate every member sustains (``[search]`` says how;
``benchlib.campaign.search`` runs it, ``benchlib.analysis.sustained`` judges it). Its runs carry the parameter
``search``; it adds no variant to the planned runs."""

__all__ = ["axis"]  # the axis itself: benchlib.axes.search.axis
