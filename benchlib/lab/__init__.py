"""The embedded lab: MariaDB and MySQL replication, Galera clusters and Group Replication groups this machine
starts, wires, heals and tears down.

``benchlib.lab.base`` is the ``Lab`` protocol every lab implements (this one and remote labs);
``benchlib.lab.lab.LocalLab`` is the embedded lab: spec (``spec``), server flavours (``flavors``, with the
built-in ``mariadb`` and ``mysql``), placement (``layout``), bring-up (``build``), server configuration
(``mycnf``), seeds and node processes (``seed``, ``node``, ``procs``), topologies (``topology``,
``group_replication``), WAN links (``wan``, ``relay``), state on disk (``state``, ``secrets``), health
(``check``, ``status``) and housekeeping (``cleanup``).
"""

from benchlib.lab import group_replication, mariadb, mysql  # the built-in flavours and topologies, registered

__all__ = ["base", "flavors", "group_replication", "lab", "mariadb", "mysql", "spec"]
