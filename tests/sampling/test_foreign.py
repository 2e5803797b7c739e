"""The foreign-CPU probe: a CPU hog outside benchlib's process tree is counted and named; benchlib's own children
and a lab's processes (by their marker) are not. The host's noise measurement (``benchlib doctor``) sees it too."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchlib.sampling.foreign import ForeignCpuProbe
from benchlib.sampling.noise import measure
from benchlib.sampling.status import StatusLog
from tests.hog import CpuHog

pytestmark = pytest.mark.measures  # a hog's share of the CPU: one test at a time

BUSY = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 4: pass\n"


def sampled(probe: ForeignCpuProbe, log: StatusLog, seconds: int) -> dict[str, float]:
    probe.setup()
    start = time.monotonic()
    for i in range(seconds):
        time.sleep(1)
        probe.sample(i)
    f = log.frame()
    took = time.monotonic() - start
    last = f.groupby("metric").value.last()
    return {m: v / took for m, v in last.items()}


def test_a_hog_outside_benchlib_is_foreign_and_named():
    log = StatusLog()
    with CpuHog(1, 1.0, seconds=30) as hog:
        own = subprocess.Popen([sys.executable, "-c", BUSY])  # our own child: benchlib's load, never foreign
        try:
            rates = sampled(ForeignCpuProbe(log, time.monotonic), log, 3)
        finally:
            own.kill()
            own.wait()
        assert hog.running()
    assert 0.4 < rates["foreign.cpu_s"] < 1.3, rates  # about one CPU (the own child competes for the other)
    assert rates.get("foreign.comm.python.cpu_s", 0) > 0.4
    assert not hog.running()


def test_a_lab_marker_makes_a_process_ours(tmp_path):
    log = StatusLog()
    marker = str(tmp_path / "lab-marker")
    with CpuHog(1, 1.0, seconds=30) as hog:
        # the hog's command line does not hold the marker: a second hog's does (as a server's --defaults-file does)
        r = subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "x", sys.executable, "-c",
                            BUSY, marker], capture_output=True, text=True, check=True)
        lab_pid = int(r.stdout)
        try:
            rates = sampled(ForeignCpuProbe(log, time.monotonic, markers=(marker,)), log, 3)
        finally:
            subprocess.run(["kill", str(lab_pid)])
        assert hog.running()
    assert rates["foreign.cpu_s"] < 1.3  # the hog only, not the marked process beside it


def test_the_noise_measurement_sees_a_hog_and_measures_fsync(tmp_path):
    quiet = measure(tmp_path, 1.0)
    with CpuHog(1, 1.0, seconds=30):
        noisy = measure(tmp_path, 1.5)
    assert noisy["background"] > quiet["background"] + 0.2, (quiet, noisy)
    assert "python" in noisy["background_top"]
    assert 0 < noisy["fsync_p50_ms"] <= noisy["fsync_p99_ms"] and noisy["fsyncs"] == 60
    assert not list(tmp_path.iterdir())  # the scratch file is gone
