"""Remote labs: servers benchlib connects to but never starts, and client hosts reached over SSH.

``benchlib.remote.lab.RemoteLab`` implements the ``benchlib.lab.base.Lab`` protocol; its spec is
``benchlib.remote.spec``, its readiness check ``benchlib.remote.check``, its client hosts
``benchlib.remote.ssh`` and its SSH load driver ``benchlib.remote.load``. What each system is and
how to sample it is shared with the embedded lab (``benchlib.systems``, ``benchlib.sampling``).
"""

__all__ = ["check", "lab", "load", "spec", "ssh"]
