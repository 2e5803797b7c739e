"""Host and process metrics from the real /proc: a CPU burn and a disk write show up in the right rows within
2 s, a restarted process's counters are flagged as a reset, a host without pressure stall information warns."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchlib.sampling.host import HOST_FILES, HostProbe, ProcessProbe, host_metrics, local_reader
from benchlib.sampling.probe import Sampler
from benchlib.sampling.status import StatusLog

BURN = "while True: pass"
WRITE = """
import os, sys
with open(sys.argv[1], 'wb') as f:
    while True:
        f.write(os.urandom(1 << 20)); f.flush(); os.fsync(f.fileno())
"""


@pytest.fixture
def procs(tmp_path):
    started = []

    def start(code: str, *args: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", code, *args])
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def deltas(log: StatusLog, node: str, metric: str) -> float:
    df = log.frame()
    v = df[(df.node == node) & (df.metric == metric)].value
    return float(v.iloc[-1] - v.iloc[0]) if len(v) >= 2 else float("nan")


def test_the_local_host_reports_cpu_load_disks_and_network():
    metrics = {m: (v, c) for m, v, c in host_metrics(local_reader(HOST_FILES))}
    assert metrics["cpu.all.user_s"][1] and metrics["cpu.cpu0.idle_s"][0] > 0 and "cpu.all.steal_s" in metrics
    assert not metrics["load.1m"][1]
    assert any(m.startswith("disk.") and m.endswith(".write_bytes") for m in metrics)
    assert not any(m.startswith(("disk.loop", "disk.ram")) for m in metrics)
    assert metrics["net.lo.rx_bytes"][1]


@pytest.mark.measures  # a burner's CPU seconds within 2 s: the serial phase, not beside the lab tests
def test_a_cpu_burn_and_a_disk_write_show_up_in_the_right_rows_within_2_s(procs, tmp_path):
    burner, writer = procs(BURN), procs(WRITE, str(tmp_path / "w.bin"))
    time.sleep(0.3)
    log = StatusLog()
    sampler = Sampler([ProcessProbe({"burner": burner.pid, "writer": writer.pid}, log, time.monotonic, 0.5),
                       HostProbe(log, time.monotonic, name="here", interval_s=0.5)])
    with sampler:
        time.sleep(2.0)
    # the burner's CPU in its own row (a share of a core: phase 1's two workers load the host too), none of its writes
    assert deltas(log, "burner", "cpu_user_s") > max(0.15, deltas(log, "writer", "cpu_user_s"))
    assert deltas(log, "burner", "io_write_bytes") == 0
    assert deltas(log, "writer", "io_write_bytes") > 1 << 20 and deltas(log, "writer", "ctx_voluntary") > 0
    df = log.frame()
    assert set(df[df.node == "burner"].metric) >= {"cpu_s", "cpu_sys_s", "ctx_involuntary", "io_read_bytes", "threads",
                                                   "rss_mib"}
    host = df[df.node == "host:here"]
    written = host[host.metric.str.match(r"disk\..*\.write_bytes")].groupby("metric").value.agg(lambda v: v.iloc[-1] - v.iloc[0])
    assert written.max() > 1 << 20
    assert deltas(log, "host:here", "cpu.all.user_s") > 0.5 and not sampler.errors


def test_a_restarted_process_is_a_counter_reset(procs):
    old = procs(BURN)
    time.sleep(1.0)
    log = StatusLog()
    probe = ProcessProbe({"node": old.pid}, log, time.monotonic)
    probe.sample(0)
    old.kill()
    old.wait()
    probe.pids["node"] = procs("import time; time.sleep(30)").pid  # the node came back as a new process
    probe.sample(1)
    df = log.frame()
    cpu = df[(df.node == "node") & (df.metric == "cpu_user_s")]
    assert list(cpu.reset) == [False, True]


def test_a_host_without_pressure_stall_information_warns_and_still_samples():
    def no_psi(paths):
        return {p: (None if "pressure" in p else t) for p, t in local_reader(paths).items()}

    log = StatusLog()
    probe = HostProbe(log, time.monotonic, name="old-kernel", reader=no_psi)
    probe.setup()
    probe.sample(0)
    assert probe.warnings == ["host old-kernel: no pressure stall information (cpu, io, memory): the kernel lacks "
                              "PSI or it is off (psi=1 on the kernel command line)"]
    metrics = set(log.frame().metric)
    assert "cpu.all.idle_s" in metrics and not any(m.startswith("psi.") for m in metrics)


def test_an_unreachable_host_is_a_warning_and_the_sampling_goes_on():
    def unreachable(paths):
        raise OSError("client host c9: connection refused (port 22)")

    log = StatusLog()
    here = HostProbe(log, time.monotonic, name="here", interval_s=0.2)
    gone = HostProbe(log, time.monotonic, name="c9", reader=unreachable, interval_s=0.2)
    sampler = Sampler([gone, here])
    with sampler:  # set-up does not fail the sampler (a run would fail)
        time.sleep(0.7)
    assert gone.warnings == ["host c9: not sampled (client host c9: connection refused (port 22))"]
    assert not sampler.errors and set(log.frame().node) == {"host:here"}


def test_cpu_frequency_is_the_mean_of_cpufreq_where_the_host_has_it():
    """cpufreq's scaling_cur_freq (kHz, a line per CPU): most VMs, this one included, do not expose it."""
    from benchlib.sampling.host import FREQ_FILES, parse_freq

    assert parse_freq("2400000\n3600000\n") == [("cpu.freq_mhz", 3000.0, False)]
    assert parse_freq("") == []
    texts = local_reader(HOST_FILES)
    freq = [m for m in host_metrics(texts) if m[0] == "cpu.freq_mhz"]
    assert bool(freq) == (texts[FREQ_FILES] is not None)
