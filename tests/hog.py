"""A reproducible disturbance: CPU hogs outside benchlib's process tree, as another job on the host would be.

``CpuHog(cpus, duty, seconds)`` starts ``cpus`` processes that each keep one CPU busy ``duty`` of every 100 ms, for
at most ``seconds``. They are started through a shell that exits at once, so they are not descendants of the test
(benchlib counts its own descendants as its own load, not as interference). ``stop()`` kills them (also on
``with`` exit); they stop by themselves after ``seconds`` whatever happens to the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

LOOP = """
import sys, time
duty, until = float(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:
    t = time.monotonic()
    while time.monotonic() - t < 0.1 * duty:
        pass
    if duty < 1:
        time.sleep(0.1 * (1 - duty))
"""


class CpuHog:
    def __init__(self, cpus: int = 1, duty: float = 1.0, seconds: float = 120.0):
        self.cpus, self.duty, self.seconds = cpus, duty, seconds
        self.pids: list[int] = []

    def start(self) -> "CpuHog":
        for _ in range(self.cpus):
            # the shell prints the hog's pid and exits: the hog (its output to /dev/null, so it holds no pipe of
            # ours) is reparented away from this process
            out = subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "hog", sys.executable,
                                  "-c", LOOP, str(self.duty), str(self.seconds)], capture_output=True, text=True,
                                 check=True)
            self.pids.append(int(out.stdout.strip()))
        return self

    def running(self) -> bool:
        return any(os.path.exists(f"/proc/{p}") for p in self.pids)

    def stop(self) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.pids = []

    def __enter__(self) -> "CpuHog":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class CpuCap:
    """A process held to ``share`` of one CPU (a node starved by a noisy neighbour): the cgroup v1 ``cpu`` controller's
    CFS quota, every thread of ``pid`` moved into a cgroup of its own for the ``with`` block and back out after it,
    whatever happens. ``available()`` says whether this machine has the controller (it needs root)."""

    ROOT = "/sys/fs/cgroup/cpu"

    def __init__(self, pid: int, share: float, name: str = "benchlib-test-cap"):
        self.pid, self.share = pid, share
        self.path = os.path.join(self.ROOT, f"{name}-{os.getpid()}")

    @classmethod
    def available(cls) -> bool:
        return os.geteuid() == 0 and os.path.exists(os.path.join(cls.ROOT, "cpu.cfs_quota_us"))

    def __enter__(self) -> "CpuCap":
        os.makedirs(self.path, exist_ok=True)
        self._write("cpu.cfs_period_us", "100000")
        self._write("cpu.cfs_quota_us", str(max(1000, int(100000 * self.share))))
        self._write("cgroup.procs", str(self.pid))
        return self

    def __exit__(self, *exc) -> None:
        for _ in range(3):  # threads started meanwhile land in the cgroup too: move them all out
            try:
                tasks = open(os.path.join(self.path, "tasks")).read().split()
            except OSError:
                break
            for t in tasks:
                try:
                    with open(os.path.join(self.ROOT, "tasks"), "w") as f:
                        f.write(t)
                except OSError:
                    pass  # gone
        try:
            os.rmdir(self.path)
        except OSError:
            time.sleep(0.2)
            os.rmdir(self.path)

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)
