"""Systems: one package per MySQL-family replication technology (``benchlib/systems/<name>/``), and what they share.

A system's package holds ``facts.py`` (what it is, pure data: its entry point of the ``benchlib.systems`` group, read
through ``benchlib.catalogue``) and ``system.py`` (what acts on its servers: a ``benchlib.systems.base.System``, found
beside its facts by lab-side code). The modules here are what the systems share: settings and their values, async
replication and semi-sync statements, positions, read consistency, invariants, failover, the server dialect.

This package imports nothing, so that reading a system's facts loads no lab code.
"""

__all__ = ["base", "consistency", "dialect", "failover", "invariants", "positions", "replication", "semisync",
           "settings", "sql", "values"]  # its modules (none is imported here)
