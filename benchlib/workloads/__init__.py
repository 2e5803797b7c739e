"""Workloads benchlib bundles beside sysbench's own: Lua scripts for sysbench 1.0.20 (``insert_rows.lua``,
``replica_reads.lua``, ``tpcc_like.lua``), their registration (``benchlib.workloads.builtin``: every workload is an
entry point of the group ``benchlib.workloads``, a user's as benchlib's) and, for a workload with records of its own,
the module that reads them (``benchlib.workloads.tpcc``). Analysis code may import these modules: none of them
touches a lab."""

__all__ = ["builtin", "tpcc"]
