"""Machine-wide housekeeping: what crashed runs left behind (processes, namespaces, directories)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from benchlib.errors import BenchlibError
from benchlib.lab import procs, wan
from benchlib.lab.lab import LocalLab
from benchlib.lab.layout import lab_root
from benchlib.lab.state import list_labs

__all__ = ["CleanupReport", "cleanup"]


@dataclass
class CleanupReport:
    processes: int
    namespaces: list[str]
    directories: list[str]
    labs: list[str]


def cleanup(root: Path | None = None, *, all_labs: bool = False) -> CleanupReport:
    """Stop orphans left by crashed runs: processes, namespaces and directories of no live lab.

    With ``all_labs``, every lab under the root is taken down too.
    """
    root = (root or lab_root()).absolute()
    labs_down = []
    if all_labs:
        for name in list_labs(root):
            try:
                LocalLab.open(name, root).close(down=True)
            except BenchlibError:
                pass
            labs_down.append(name)
    live = set(list_labs(root))
    nprocs = 0
    dirs = []
    if root.is_dir():
        for d in root.iterdir():
            if d.name.startswith(".") or not d.is_dir() or d.name in live:
                continue
            found = procs.find(f"{d}/")
            nprocs += len(found)
            devices = [dev for p in found for dev in wan.relay_devices(p.cmdline)]
            procs.kill_lab_processes(d, {}, None)
            wan.wait_devices_gone(devices)  # a killed relay's TUN device goes a moment after it
            shutil.rmtree(d, ignore_errors=True)
            dirs.append(str(d))
        # processes whose lab directory is already gone
        for p in procs.find(f"{root}/"):
            owner = next((name for name in live if any(f"{root}/{name}/" in a for a in p.cmdline)), None)
            if owner is None and not any(f"{root}/.cache/" in a for a in p.cmdline):
                procs.stop([(p.pid, f"{root}/")], graceful=False)
                nprocs += 1
    namespaces = wan.cleanup_orphans(root, live)
    return CleanupReport(nprocs, namespaces, dirs, labs_down)
