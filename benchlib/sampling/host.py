"""Host and process metrics from /proc, once a second, into the run's CLUSTER frame.

``HostProbe`` reads one host's /proc files through a *reader* (a function from paths to their texts: the
local files here; one command over SSH for a remote host) and logs, as node ``host:<name>``:

- ``cpu.<all|cpuN>.<user|nice|system|iowait|irq|softirq|steal|idle>_s``: CPU time, counters in seconds
  (/proc/stat, USER_HZ ticks);
- ``load.1m``, ``load.5m``: the load average (gauges, /proc/loadavg);
- ``cpu.freq_mhz``: the CPUs' mean current frequency (a gauge; cpufreq's ``scaling_cur_freq``, where the host
  exposes it: most VMs do not);
- ``psi.<cpu|io|memory>.<some|full>_us``: pressure stall time, counters in microseconds (/proc/pressure/*;
  left out where the kernel has no PSI: a warning, not an error);
- ``disk.<dev>.<reads|writes|read_bytes|write_bytes|write_ms|busy_ms|flushes|flush_ms>``: counters per whole disk
  (/proc/diskstats; flush requests, what an fsync sends a disk with a write cache, where the kernel counts them;
  loop, ram and zram devices and partitions left out);
- ``net.<iface>.<rx_bytes|tx_bytes|rx_packets|tx_packets>``: counters per interface (/proc/net/dev).

``process_metrics`` reads one server process: CPU user and system seconds, voluntary and involuntary context
switches (summed over its threads), bytes read from and written to storage (/proc/PID/io), threads and RSS.
Counters are stored raw; analysis differences them (``StatusLog`` flags a counter that went down).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Callable

from benchlib.sampling.probe import Probe
from benchlib.sampling.status import StatusLog

__all__ = ["HostProbe", "ProcessProbe", "local_reader", "process_metrics", "parse_stat", "parse_diskstats", "parse_net_dev",
           "parse_pressure", "parse_loadavg"]

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own sector size
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
FREQ_FILES = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq"  # a glob: one line (kHz) per CPU
HOST_FILES = ("/proc/stat", "/proc/loadavg", "/proc/diskstats", "/proc/net/dev", "/proc/pressure/cpu",
              "/proc/pressure/io", "/proc/pressure/memory", FREQ_FILES)
_SKIP_DISK = re.compile(r"^(loop|ram|zram)\d+$|^(sd|vd|xvd|hd)[a-z]+\d+$|^nvme\d+n\d+p\d+$|^mmcblk\d+p\d+$")

Metric = tuple[str, float, bool]  # (metric, value, counter)


def parse_stat(text: str) -> list[Metric]:
    out = []
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *ticks = line.split()
        cpu = "all" if name == "cpu" else name
        for field, v in zip(CPU_FIELDS, ticks):
            out.append((f"cpu.{cpu}.{field}_s", int(v) / CLK_TCK, True))
    return out


def parse_loadavg(text: str) -> list[Metric]:
    one, five, *_ = text.split()
    return [("load.1m", float(one), False), ("load.5m", float(five), False)]


def parse_pressure(kind: str, text: str) -> list[Metric]:
    out = []
    for line in text.splitlines():
        scope, *pairs = line.split()
        total = dict(p.split("=", 1) for p in pairs).get("total")
        if total is not None:
            out.append((f"psi.{kind}.{scope}_us", float(total), True))
    return out


def parse_freq(text: str) -> list[Metric]:
    """The mean current frequency of the CPUs, MHz (cpufreq's ``scaling_cur_freq`` lines, kHz); none where the host
    does not expose it (most VMs)."""
    khz = [float(v) for v in text.split() if v.replace(".", "", 1).isdigit()]
    return [("cpu.freq_mhz", sum(khz) / len(khz) / 1000, False)] if khz else []


def parse_diskstats(text: str) -> list[Metric]:
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14 or _SKIP_DISK.match(f[2]):
            continue
        dev = f[2]
        out += [(f"disk.{dev}.reads", float(f[3]), True), (f"disk.{dev}.read_bytes", float(f[5]) * SECTOR, True),
                (f"disk.{dev}.writes", float(f[7]), True), (f"disk.{dev}.write_bytes", float(f[9]) * SECTOR, True),
                (f"disk.{dev}.write_ms", float(f[10]), True), (f"disk.{dev}.busy_ms", float(f[12]), True)]
        if len(f) >= 20:  # kernels from 5.5 count flush requests (what an fsync sends a disk with a write cache)
            out += [(f"disk.{dev}.flushes", float(f[18]), True), (f"disk.{dev}.flush_ms", float(f[19]), True)]
    return out


def parse_net_dev(text: str) -> list[Metric]:
    out = []
    for line in text.splitlines()[2:]:
        if ":" not in line:
            continue
        iface, rest = line.split(":", 1)
        f = rest.split()
        iface = iface.strip()
        out += [(f"net.{iface}.rx_bytes", float(f[0]), True), (f"net.{iface}.rx_packets", float(f[1]), True),
                (f"net.{iface}.tx_bytes", float(f[8]), True), (f"net.{iface}.tx_packets", float(f[9]), True)]
    return out


MARK = "@@benchlib-file "


def shell_command(paths: tuple[str, ...]) -> str:
    """One shell command that prints every path after a marker line (nothing for a file it cannot read)."""
    return "; ".join(f"echo '{MARK}{p}'; cat {p} 2>/dev/null" for p in paths)


def split_output(out: str, paths: tuple[str, ...]) -> dict[str, str | None]:
    """``shell_command``'s output back into each path's text (None: empty or unreadable)."""
    texts: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith(MARK):
            current = line[len(MARK):]
            texts[current] = []
        elif current is not None:
            texts[current].append(line)
    return {p: ("\n".join(texts[p]) + "\n" if texts.get(p) else None) for p in paths}


def local_reader(paths: tuple[str, ...]) -> dict[str, str | None]:
    """Each path's text, None for a file this kernel lacks (no PSI) or cannot read."""
    import glob

    out: dict[str, str | None] = {}
    for p in paths:
        try:
            if "*" in p:  # a glob: every match's text, joined (None: no match)
                texts = [Path(f).read_text() for f in sorted(glob.glob(p))]
                out[p] = "".join(texts) or None
            else:
                out[p] = Path(p).read_text()
        except OSError:
            out[p] = None
    return out


def host_metrics(texts: dict[str, str | None]) -> list[Metric]:
    out: list[Metric] = []
    for path, parse in (("/proc/stat", parse_stat), ("/proc/loadavg", parse_loadavg),
                        ("/proc/diskstats", parse_diskstats), ("/proc/net/dev", parse_net_dev),
                        (FREQ_FILES, parse_freq)):
        text = texts.get(path)
        if text:
            out += parse(text)
    for kind in ("cpu", "io", "memory"):
        text = texts.get(f"/proc/pressure/{kind}")
        if text:
            out += parse_pressure(kind, text)
    return out


class HostProbe(Probe):
    """One host's CPU, load, pressure, disks and network every second, as node ``host:<name>``."""

    def __init__(self, log: StatusLog, clock: Callable[[], float], *, name: str | None = None,
                 reader: Callable[[tuple[str, ...]], dict[str, str | None]] = local_reader,
                 interval_s: float = 1.0):
        self.host = name or socket.gethostname()
        self.name, self.log, self.clock, self.reader, self.interval_s = f"host:{self.host}", log, clock, reader, interval_s
        self.lane = "status"
        self.warnings: list[str] = []
        self.off = False  # set up failed: the host is not sampled (a warning says why)

    def setup(self) -> None:
        self.off = False
        try:
            texts = self.reader(HOST_FILES)
            if texts.get("/proc/stat") is None:
                raise OSError("/proc/stat cannot be read")
        except Exception as exc:  # noqa: BLE001 - an unreachable host is a gap in the metrics, not a failed run
            self.off = True
            self.warnings.append(f"host {self.host}: not sampled ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
            return
        missing = [k for k in ("cpu", "io", "memory") if texts.get(f"/proc/pressure/{k}") is None]
        if missing:
            self.warnings.append(f"host {self.host}: no pressure stall information ({', '.join(missing)}): "
                                 "the kernel lacks PSI or it is off (psi=1 on the kernel command line)")

    def next_due(self, last_due: float, now: float) -> float | None:
        return None if self.off else last_due + self.interval_s

    def sample(self, t: float) -> None:
        if self.off:
            return
        texts = self.reader(HOST_FILES)
        now = self.clock()
        node = f"host:{self.host}"
        for metric, value, counter in host_metrics(texts):
            self.log.add(now, node, metric, value, counter=counter)


_CTX = re.compile(rb"\nvoluntary_ctxt_switches:\s*(\d+)\nnonvoluntary_ctxt_switches:\s*(\d+)")


def _read(path: str) -> bytes:
    """A small /proc file in one read (no Python file object: this runs for every thread every second)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 16384)
    finally:
        os.close(fd)


def process_metrics(pid: int) -> list[Metric] | None:
    """One process's CPU, context switches, storage I/O, threads and memory; None when it is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()
        rss_pages = int(_read(f"/proc/{pid}/statm").split()[1])
        try:
            io = dict(line.split(b": ", 1) for line in _read(f"/proc/{pid}/io").splitlines())
        except PermissionError:
            io = {}
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return None
    voluntary = involuntary = 0
    tasks = 0
    for tid in tids:  # context switches are counted per thread: the process's own line is its main thread's
        try:
            m = _CTX.search(_read(f"/proc/{pid}/task/{tid}/status"))
        except OSError:
            continue  # a thread that ended meanwhile
        if m:
            voluntary += int(m[1])
            involuntary += int(m[2])
            tasks += 1
    user, system = int(stat[11]) / CLK_TCK, int(stat[12]) / CLK_TCK
    out: list[Metric] = [("cpu_s", user + system, True), ("cpu_user_s", user, True), ("cpu_sys_s", system, True),
                         ("ctx_voluntary", float(voluntary), True), ("ctx_involuntary", float(involuntary), True),
                         ("threads", float(tasks), False), ("rss_mib", rss_pages * PAGE / (1 << 20), False)]
    if io:
        out += [("io_read_bytes", float(io[b"read_bytes"]), True), ("io_write_bytes", float(io[b"write_bytes"]), True)]
    return out


class ProcessProbe(Probe):
    """Every local server process's ``process_metrics``, once a second, as its node's rows."""

    def __init__(self, pids: dict[str, int], log: StatusLog, clock: Callable[[], float], interval_s: float = 1.0):
        self.name, self.pids, self.log, self.clock, self.interval_s = "processes", pids, log, clock, interval_s
        self.lane = "status"

    def sample(self, t: float) -> None:
        for node, pid in self.pids.items():
            metrics = process_metrics(pid)
            if metrics is None:
                continue  # the node is down: no reading, not a zero
            now = self.clock()
            for metric, value, counter in metrics:
                self.log.add(now, node, metric, value, counter=counter)
