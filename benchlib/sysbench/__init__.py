"""sysbench: its options and workloads, its output grammar, one watched process, load drivers.

A leaf package: it imports nothing of the lab, sampling or campaign code. Every lab offers
a ``LoadDriver`` (``benchlib.sysbench.driver``): sysbench here, or on a remote lab's client
hosts, with one watchdog (``benchlib.sysbench.process``) and one merge rule for several
hosts (``benchlib.sysbench.merge``).
"""

from benchlib.sysbench.options import WORKLOADS, RunError, SysbenchOptions, Workload
from benchlib.sysbench.process import LoadResult

__all__ = ["WORKLOADS", "LoadResult", "RunError", "SysbenchOptions", "Workload"]
