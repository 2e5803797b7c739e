"""Run identity: one format for a run id, one parser.

    0007-galera-oltp_read_write-t8-3f2a9c1e-r2            a planned run (index, cluster, workload,
                                                          threads, configuration hash, repetition)
    0031-galera-oltp_read_write-t16-9b0c7d2a-rate1800-r1  an open-loop run of a sustained-throughput search

The index orders runs in a campaign folder; the configuration hash identifies the configuration
(cluster, settings, workload, threads, rate), so a resumed campaign finds the runs it already has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchlib.errors import BenchlibError

__all__ = ["RunId"]

_PATTERN = re.compile(r"^(\d{4,})-([a-z][a-z0-9]*)-([A-Za-z0-9_]+)-t(\d+)-([0-9a-f]{8})(?:-rate(\d+))?-r(\d+)$")


@dataclass(frozen=True)
class RunId:
    index: int
    cluster: str
    workload: str
    threads: int
    config: str  # the configuration's hash (8 hex digits)
    repetition: int
    rate: int | None = None  # the target rate of a search's open-loop run

    def __str__(self) -> str:
        rate = f"-rate{self.rate}" if self.rate is not None else ""
        return f"{self.index:04d}-{self.cluster}-{self.workload}-t{self.threads}-{self.config}{rate}-r{self.repetition}"

    @classmethod
    def parse(cls, text: str) -> "RunId":
        m = _PATTERN.match(text)
        if not m:
            raise BenchlibError(f"{text!r} is not a run id", hint="run ids look like 0007-galera-oltp_read_write-t8-"
                                                                  "3f2a9c1e-r2")
        index, cluster, workload, threads, config, rate, rep = m.groups()
        return cls(int(index), cluster, workload, int(threads), config, int(rep), int(rate) if rate else None)

    @classmethod
    def is_run_id(cls, text: str) -> bool:
        return bool(_PATTERN.match(text))
