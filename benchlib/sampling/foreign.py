"""CPU used on this host by processes that are neither the lab's nor benchlib's: the noisy neighbours.

``ForeignCpuProbe`` scans ``/proc`` once a second. A process is *ours* when it is this process, one of its
ancestors or descendants (the campaign's kernel and its CLI, sysbench, the sampler), or when its command line holds
one of the lab's markers (the lab directory: every server's defaults file, the WAN relay, HAProxy's config).
Kernel threads are left out: the kernel's own work (I/O completion, loopback networking) is driven by the lab's
load, so it is no neighbour's. Everything else is *foreign*.

It logs, as node ``host:<name>``:

- ``foreign.cpu_s``: a counter, seconds of CPU the foreign processes used since the probe started (a process that
  started meanwhile counts from its birth; a process that ended between two scans loses its last second);
- ``foreign.comm.<command>.cpu_s``: the same per command name, for every command that has used at least
  ``NAMED_S`` seconds (what the report names: "stress-ng took 45% of a CPU").

A scan of about 150 processes takes about 2 ms of CPU.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Callable

from benchlib.sampling.probe import Probe
from benchlib.sampling.status import StatusLog

__all__ = ["ForeignCpuProbe", "scan"]

CLK_TCK = os.sysconf("SC_CLK_TCK")
NAMED_S = 0.05  # a command is logged by name once it has used this much CPU in the run
KTHREADD = 2
_SAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(command, parent pid, CPU ticks user + system, start time in ticks since boot) of ``pid``; None when gone."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    head, _, tail = raw.rpartition(b")")
    comm = head.split(b"(", 1)[1].decode(errors="replace") if b"(" in head else "?"
    f = tail.split()
    # fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    return comm, int(f[1]), int(f[11]) + int(f[12]), int(f[19])


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def scan() -> dict[int, tuple[str, int, int, int]]:
    """Every process: pid -> (command, parent pid, CPU ticks, start ticks)."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            s = _stat(int(entry.name))
            if s is not None:
                out[int(entry.name)] = s
    return out


class ForeignCpuProbe(Probe):
    """This host's CPU used by processes outside the lab and outside benchlib, every second (see the module)."""

    def __init__(self, log: StatusLog, clock: Callable[[], float], *, markers: tuple[str, ...] = (),
                 name: str | None = None, interval_s: float = 1.0, me: int | None = None):
        self.host = name or socket.gethostname()
        self.name, self.log, self.clock, self.interval_s = f"foreign:{self.host}", log, clock, interval_s
        self.lane = "status"
        self.markers = tuple(m for m in markers if m)
        self.me = me or os.getpid()
        self._ours: dict[tuple[int, int], bool] = {}  # (pid, start) -> ours, by command line (cached)
        self._last: dict[tuple[int, int], int] = {}  # (pid, start) -> CPU ticks at the last scan
        self._total = 0
        self._by_comm: dict[str, int] = {}
        self._boot_ticks: int | None = None  # the first scan's time in ticks since boot

    def _uptime_ticks(self) -> int:
        with open("/proc/uptime") as f:
            return int(float(f.read().split()[0]) * CLK_TCK)

    def _tree(self, procs: dict[int, tuple[str, int, int, int]]) -> set[int]:
        """This process, its ancestors and its descendants."""
        mine = {self.me}
        p = self.me
        while p in procs and procs[p][1] > 1:
            p = procs[p][1]
            mine.add(p)
        children: dict[int, list[int]] = {}
        for pid, (_, ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        todo = [self.me]
        while todo:
            for c in children.get(todo.pop(), ()):
                if c not in mine:
                    mine.add(c)
                    todo.append(c)
        return mine

    def _is_ours(self, pid: int, start: int, tree: set[int]) -> bool:
        if pid in tree:
            return True
        key = (pid, start)
        if key not in self._ours:
            line = _cmdline(pid)
            self._ours[key] = any(m in line for m in self.markers)
        return self._ours[key]

    def setup(self) -> None:
        self._boot_ticks = self._uptime_ticks()
        procs = scan()
        tree = self._tree(procs)
        for pid, (comm, ppid, ticks, start) in procs.items():
            if pid == KTHREADD or ppid == KTHREADD or self._is_ours(pid, start, tree):
                continue
            self._last[(pid, start)] = ticks

    def sample(self, t: float) -> None:
        procs = scan()
        tree = self._tree(procs)
        seen: dict[tuple[int, int], int] = {}
        for pid, (comm, ppid, ticks, start) in procs.items():
            if pid == KTHREADD or ppid == KTHREADD or self._is_ours(pid, start, tree):
                continue
            key = (pid, start)
            before = self._last.get(key)
            if before is None:  # new since the last scan: all of its CPU is this run's if it started after setup
                before = 0 if self._boot_ticks is not None and start >= self._boot_ticks else ticks
            used = max(0, ticks - before)
            seen[key] = ticks
            if used:
                self._total += used
                self._by_comm[comm] = self._by_comm.get(comm, 0) + used
        self._last = seen
        if len(self._ours) > 4 * len(procs) + 64:  # forget processes long gone
            alive = {(pid, s[3]) for pid, s in procs.items()}
            self._ours = {k: v for k, v in self._ours.items() if k in alive}
        now = self.clock()
        node = f"host:{self.host}"
        self.log.add(now, node, "foreign.cpu_s", self._total / CLK_TCK, counter=True)
        for comm, ticks in self._by_comm.items():
            if ticks / CLK_TCK >= NAMED_S:
                self.log.add(now, node, f"foreign.comm.{_SAFE.sub('_', comm)}.cpu_s", ticks / CLK_TCK, counter=True)
