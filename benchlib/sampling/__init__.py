"""Sampling during a run: millisecond heartbeat lag, each system's status probe, liveness, clocks.

``benchlib.sampling.probe`` is the probe interface and the lane-based sampler; the probes are
``heartbeat`` (lag on one clock), ``status`` (MariaDB replication, Galera and PXC, processes,
liveness), ``mysql`` (MySQL replication, Group Replication, Aurora) and ``clock`` (remote server
clock offsets). ``benchlib.campaign.sampling.build_sampling`` assembles them for any lab.
"""

__all__ = ["clock", "heartbeat", "mysql", "probe", "session", "status"]
