"""This host's noise, measured in a few seconds: what `benchlib doctor` states and a campaign records at its start.

- **steal**: the share of the CPU time the hypervisor gave to other guests over the window (/proc/stat);
- **background CPU**: the share used by processes outside benchlib (and outside ``markers``: a running lab) over
  the window, with the commands that used the most (``benchlib.sampling.foreign``);
- **fsync latency**: ``fsyncs`` 4 KiB writes each followed by fdatasync in a scratch file of ``folder``: median,
  p99 and their ratio (a disk whose durable commits are uneven makes every durable configuration noisy).

``measure`` returns a plain dict (JSON-ready); ``benchlib.analysis.interference.noise_words`` says it in words, with
what a user can do about each.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchlib.sampling.foreign import ForeignCpuProbe
from benchlib.sampling.status import StatusLog

__all__ = ["measure"]


def _cpu_ticks() -> list[int]:
    with open("/proc/stat") as f:
        return [int(v) for v in f.readline().split()[1:9]]


def fsync_latency(folder: Path, fsyncs: int = 60) -> dict[str, float] | None:
    """Median and p99 of a 4 KiB write plus fdatasync in ``folder``, ms (None: the folder is not writable)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=".benchlib-fsync-", dir=folder)
    except OSError:
        return None
    block = os.urandom(4096)
    took = []
    try:
        for _ in range(fsyncs):
            t = time.perf_counter()
            os.write(fd, block)
            os.fdatasync(fd)
            took.append((time.perf_counter() - t) * 1000)
    except OSError:
        return None
    finally:
        os.close(fd)
        os.unlink(path)
    arr = np.array(took)
    return {"fsync_p50_ms": float(np.median(arr)), "fsync_p99_ms": float(np.percentile(arr, 99)),
            "fsyncs": len(arr)}


def measure(folder: str | Path = ".", seconds: float = 2.0, markers: tuple[str, ...] = ()) -> dict[str, Any]:
    """Steal and background CPU over ``seconds``, then the fsync latency in ``folder`` (see the module)."""
    log = StatusLog()
    foreign = ForeignCpuProbe(log, time.monotonic, markers=markers)
    foreign.setup()
    before = _cpu_ticks()
    time.sleep(seconds)
    foreign.sample(0)
    after = _cpu_ticks()
    delta = [b - a for a, b in zip(before, after)]
    total = sum(delta) or 1
    frame = log.frame()
    used = frame[frame.metric == "foreign.cpu_s"].value
    comms = frame[frame.metric.str.startswith("foreign.comm.")]
    top = (comms.sort_values("value", ascending=False).drop_duplicates("metric").head(3)
           if not comms.empty else comms)
    clk = os.sysconf("SC_CLK_TCK")
    out: dict[str, Any] = {
        "seconds": seconds, "cpus": os.cpu_count(),
        "steal": delta[7] / total,
        "background": float(used.iloc[-1]) * clk / total if len(used) else 0.0,
        "background_top": {m.removeprefix("foreign.comm.").removesuffix(".cpu_s"): float(v) * clk / total
                           for m, v in zip(top.metric, top.value)},
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    fs = fsync_latency(Path(folder))
    if fs is not None:
        out.update(fs, fsync_folder=str(Path(folder).resolve()))
    return out
