"""Process helpers that stay correct with zombies and pid reuse.

``kill(pid, 0)`` reports a process alive for a while after it exited (a zombie
whose parent has not reaped it), so liveness is read from ``/proc/PID/stat``.
Before signalling a pid we check its command line still holds our marker (the
node's defaults-file path, the lab directory of a relay), so a reused pid is
never signalled.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchlib.lab.layout import Layout


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    state: str
    cmdline: list[str]

    @property
    def running(self) -> bool:
        return self.state not in {"Z", "X", "x"}


def proc_info(pid: int) -> ProcInfo | None:
    """State letter and argv of ``pid``, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    state = stat[stat.rindex(")") + 2 :].split(" ", 1)[0]
    return ProcInfo(pid, state, [a.decode(errors="replace") for a in raw.split(b"\0") if a])


def reap(pid: int) -> None:
    """Collect the exit status of ``pid`` if it is our own child (no-op otherwise)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def kill_pending(pid: int) -> bool:
    """True when SIGKILL was sent to ``pid`` but it has not died yet."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & (1 << (signal.SIGKILL - 1)):
            return True
    return False


def is_running(pid: int | None, marker: str | None = None) -> bool:
    """True when ``pid`` is a live process whose argv contains ``marker``: not a zombie, not being killed."""
    if not pid:
        return False
    reap(pid)
    info = proc_info(pid)
    if info is None or not info.running or kill_pending(pid):
        return False
    return marker is None or any(marker in a for a in info.cmdline)


def find(marker: str) -> list[ProcInfo]:
    """Every live process whose argv contains ``marker`` (used to find orphans)."""
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        info = proc_info(int(entry.name))
        if info and info.running and any(marker in a for a in info.cmdline):
            found.append(info)
    return found


def signal_if_ours(pid: int, marker: str, sig: int = signal.SIGTERM) -> bool:
    """Send ``sig`` only if ``pid`` still runs with ``marker`` in its argv."""
    if not is_running(pid, marker):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def has_exited(pid: int) -> bool:
    """True once ``pid`` has really exited (gone or a zombie): its ports and files are released.
    Stricter than ``not is_running``, which already says False while a SIGKILL is on its way."""
    reap(pid)
    info = proc_info(pid)
    return info is None or not info.running


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until every one of ``pids`` has exited; return those still there at the timeout."""
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if not has_exited(p)]
        if left:
            time.sleep(0.02)
    return left


def stop(pids_markers: list[tuple[int, str]], *, graceful: bool = True, timeout: float = 60.0) -> None:
    """Stop processes: SIGTERM and wait (graceful), then SIGKILL what remains."""
    if graceful:
        sent = [pid for pid, marker in pids_markers if signal_if_ours(pid, marker, signal.SIGTERM)]
        wait_gone(sent, timeout)
    sent = [pid for pid, marker in pids_markers if signal_if_ours(pid, marker, signal.SIGKILL)]
    wait_gone(sent, 10.0)


def kill_lab_processes(lab_dir: Path, pids: dict[str, int], layout: "Layout | None") -> None:
    """SIGKILL every process of a lab: its nodes, relay, seed servers and SST helpers."""
    targets = []
    if layout is not None:
        targets = [(pids[n.name], n.marker) for n in layout.nodes.values() if n.name in pids]
    marker = f"{lab_dir}/"
    targets += [(p.pid, marker) for p in find(marker)]
    stop(targets, graceful=False)
    # SST scripts can spawn rsync daemons a moment later: sweep until none is left
    for _ in range(20):
        left = find(marker)
        if not left:
            break
        stop([(p.pid, marker) for p in left], graceful=False)
