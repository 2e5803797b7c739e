"""The probe axis's planning: per cluster, the read consistency settings of ``[probe] consistency`` its system has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchlib.errors import SpecError
from benchlib.sampling.stale_reads import ProbeOptions
from benchlib.systems import consistency
from benchlib.systems.consistency import ReadSetting
from benchlib.schema import Cell

__all__ = ["ProbeVariant", "variants"]


@dataclass(frozen=True)
class ProbeVariant:
    """One run's probe: its options, the read consistency chosen (None: the system's default)."""

    options: ProbeOptions
    setting: ReadSetting | None = None

    def identity(self) -> list[Any]:
        return [self.options.consistency]

    def params(self) -> dict[str, Cell]:
        return {"consistency": self.options.consistency}

    def load_settings(self) -> dict[str, Cell]:
        """Settings the load runs under as well (GR's AFTER levels make the writers pay)."""
        return dict(self.setting.load or {}) if self.setting is not None else {}


def variants(spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[ProbeVariant]]:
    """Per cluster, the read consistency settings of ``[probe] consistency`` its system has (its default, when it has
    none of them). A setting no cluster's system has is refused, saying what each supports."""
    table = spec.axes["probe"]
    wanted = table.consistency
    system = {c: lab.system_of(c) for c in clusters}
    unknown = [w for w in wanted if not any(w in consistency.supported(system[c]) for c in clusters)]
    if unknown:
        told = "; ".join(f"{s}: {consistency.described(s)}" for s in dict.fromkeys(system.values()))
        raise SpecError(f"{source}: probe.consistency {unknown[0]!r} is a read consistency of none of the clusters "
                        f"{clusters}", hint=f"the systems support {told}")
    fronted = {c for c in clusters if getattr(lab.clusters[c], "router", False)}
    if table.router and not fronted:
        raise SpecError(f"{source}: probe.router reads through MySQL Router, and no cluster of {clusters} has one",
                        hint="router = true on a group_replication cluster of the lab spec")
    out: dict[str, list[ProbeVariant]] = {}
    for c in clusters:
        mine: list[ReadSetting | None] = [consistency.for_system(system[c], w) for w in wanted
                                          if w in consistency.supported(system[c])]
        out[c] = [ProbeVariant(ProbeOptions(table.write_rate, table.read_rate, read.name if read else None,
                                            table.wait_timeout_s, table.router and c in fronted), read)
                  for read in (mine or [None])]
    return out
