"""Load drivers: where sysbench runs for a lab, behind one interface.

``LoadDriver`` is what a measured run needs of the load: ``prepare`` a dataset on a node,
``run`` one load against a node (live per-second callback, the shared watchdog), and
``stop_strays`` (a previous start's load that is still running is stopped before measuring).
``LocalDriver`` runs sysbench on this host (the embedded lab, and remote labs without
client hosts); the SSH driver of remote labs (``benchlib.remote.load``) runs it on the
client hosts together.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from benchlib.sysbench.options import RunError, SysbenchOptions, connection_config
from benchlib.sysbench.output import Interval
from benchlib.sysbench.process import LoadResult, run_sysbench, stop_recorded

__all__ = ["Endpoint", "LoadDriver", "LocalDriver", "prepare_failure"]


def prepare_failure(returncode: int, output: str) -> str | None:
    """Why a ``sysbench prepare`` failed, from its exit status and output; None when it did not. sysbench 1.0.20
    exits 0 when one thread of a parallel prepare fails (its units of work are then missing): only its FATAL line
    says so."""
    if returncode != 0:
        return f"exit {returncode}"
    return next((line.strip() for line in output.splitlines() if line.startswith("FATAL:")), None)


@dataclass(frozen=True)
class Endpoint:
    """Where sysbench connects for one node, and as whom."""

    host: str
    port: int
    user: str
    password: str

    def config(self) -> str:
        return connection_config(self.host, self.port, self.user, self.password)


class LoadDriver(Protocol):
    def prepare(self, node: str, opts: SysbenchOptions) -> None:
        """``sysbench prepare`` of ``opts``'s dataset on ``node``; RunError when it fails."""

    def run(self, node: str, opts: SysbenchOptions, *, on_interval: Callable[[Interval], None] | None = None,
            stall_s: float = 10.0, source: str = "sysbench",
            abort_if: Callable[[], str | None] | None = None) -> LoadResult:
        """One load of ``opts`` against ``node``, watched (``benchlib.sysbench.process.Watchdog``)."""

    def stop_strays(self) -> list[str]:
        """Stop loads a previous start left running; returns what was stopped (for the event log)."""


class LocalDriver:
    """sysbench on this host; ``endpoint(node)`` says where and as whom it connects."""

    def __init__(self, endpoint: Callable[[str], Endpoint], pid_dir: Path, sysbench: str = "sysbench",
                 cpus: Callable[[str], str | None] | None = None):
        self.endpoint, self.pid_dir, self.sysbench = endpoint, pid_dir, sysbench
        self.cpus = cpus or (lambda node: None)  # the CPU set of a node's cluster: its load runs there too

    def _pinned(self, node: str, argv: list[str]) -> list[str]:
        cpus = self.cpus(node)
        return ["taskset", "-c", cpus, *argv] if cpus else argv

    def prepare(self, node: str, opts: SysbenchOptions) -> None:
        argv = self._pinned(node, opts.argv("prepare", *opts.prepare_args(), sysbench=self.sysbench))
        res = subprocess.run(argv, input=self.endpoint(node).config(), capture_output=True, text=True)
        if why := prepare_failure(res.returncode, res.stdout + res.stderr):
            raise RunError(f"sysbench prepare of {opts.dataset_key} failed on {node} ({why})",
                           detail="\n".join("    " + line for line in (res.stdout + res.stderr).splitlines()[-8:]))

    def run(self, node: str, opts: SysbenchOptions, *, on_interval: Callable[[Interval], None] | None = None,
            stall_s: float = 10.0, source: str = "sysbench",
            abort_if: Callable[[], str | None] | None = None) -> LoadResult:
        return run_sysbench(self._pinned(node, opts.argv("run", *opts.run_args(), sysbench=self.sysbench)),
                            self.endpoint(node).config(),
                            on_interval=on_interval, stall_s=stall_s, source=source, abort_if=abort_if,
                            pid_dir=self.pid_dir)

    def stop_strays(self) -> list[str]:
        return [f"sysbench pid {p} (here)" for p in stop_recorded(self.pid_dir)]
