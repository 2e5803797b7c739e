"""The history axis's planning: per cluster, the isolation levels and read consistency settings of ``[history]`` its
system has, each a configuration; what none of the clusters has, or what only the stale-read probe can do, refused."""

from __future__ import annotations

from typing import Any

from benchlib.axes.history import HistorySpec, HistoryVariant, levels_of
from benchlib.errors import SpecError
from benchlib.systems import consistency
from benchlib.systems.base import ReadSetting

__all__ = ["variants"]

_DEFAULT = ReadSetting("default", "the system's default", waits=False)


def _readings(names: list[str], system: str) -> list[tuple[str | None, ReadSetting]]:
    """The settings of ``names`` that ``system`` has, with their statements."""
    return [(n, consistency.for_system(system, n)) for n in names if n in consistency.supported(system)]


def variants(table: HistorySpec, lab: Any, clusters: list[str], source: str) -> dict[str, list[HistoryVariant]]:
    """Per cluster, a variant per isolation level and read consistency setting its system has."""
    system = {c: lab.system_of(c) for c in clusters}
    for level in table.isolation:
        if not any(level in levels_of(system[c]) for c in clusters):
            raise SpecError(f"{source}: [history] isolation {level!r} is a level of none of the clusters "
                            f"{clusters}", hint="snapshot-isolation is MariaDB's innodb_snapshot_isolation")
    if table.on == "replicas" and not any(len(lab.nodes_of(c)) > 1 for c in clusters):
        raise SpecError(f"{source}: [history] on = \"replicas\", and no cluster of {clusters} has more than one "
                        "node", hint="on = \"write\" on a single server")
    reads: dict[str, list[tuple[str | None, ReadSetting]]] = {c: _readings(table.consistency, system[c])
                                                              for c in clusters}
    if table.consistency and not any(reads.values()):
        told = "; ".join(f"{s}: {consistency.described(s)}" for s in dict.fromkeys(system.values()))
        raise SpecError(f"{source}: [history] consistency {table.consistency} names a read consistency of none "
                        f"of the clusters {clusters}", hint=f"the systems support {told}")
    if waits := sorted({str(name) for c in clusters for name, setting in reads[c] if setting.waits and
                        setting.wait is not None}):
        raise SpecError(f"{source}: [history] consistency {waits[0]!r} waits for a writer's token before each "
                        "read: the stale-read probe's ([probe] consistency), not a history's",
                        hint="a setting of the session (Galera's wsrep_sync_wait, Group Replication's levels)")
    return {c: [HistoryVariant(level, table.on, table, name, tuple(dict.fromkeys(s.reader + s.writer)))
                for level in table.isolation if level in levels_of(system[c])
                for name, s in (reads[c] or [(None, _DEFAULT)])] for c in clusters}
