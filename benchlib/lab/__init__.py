"""The embedded lab: MariaDB replication and Galera clusters this machine starts, wires, heals and tears down.

``benchlib.lab.base`` is the ``Lab`` protocol every lab implements (this one and remote labs);
``benchlib.lab.lab.Lab`` is the embedded lab: spec (``spec``), placement (``layout``), server
configuration (``mycnf``), seeds and node processes (``seed``, ``node``, ``procs``), topologies
(``topology``), WAN links (``wan``, ``relay``), state on disk (``state``, ``secrets``), health
(``check``, ``status``) and housekeeping (``cleanup``).
"""

__all__ = ["base", "lab", "spec"]
