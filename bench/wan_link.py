"""The emulated WAN link: round-trip accuracy, bulk throughput and the relay's CPU cost.

Brings up a lab with one node in a far site (``--rtt`` ms away), then
1. measures TCP handshake round trips to it (min/median/p95/max over 50);
2. streams data from the root namespace to a receiver inside the site for a few
   seconds and reports MiB/s (TCP over a long fat link: bounded by the window);
3. reads the relay's CPU time over both phases.
Run as root. Figures, not assertions.

    python bench/wan_link.py [--rtt 100] [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.lab.spec import parse_spec  # noqa: E402

RECEIVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
print(n, flush=True)
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtt", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    spec = parse_spec(f'name = "benchwan"\n[clusters.s]\ntopology = "single"\n'
                      f'[sites.far]\nnodes = ["s-1"]\nrtt_ms = {args.rtt}\n')
    lab = LocalLab.up(spec)
    try:
        node = lab.node("s-1")
        relay = lab.record.link_pid
        print(f"link shaper: {lab.record.shaper}; requested RTT {args.rtt:g} ms")
        cpu0, t0 = cpu_seconds(relay), time.monotonic()
        rtts = []
        for _ in range(50):
            a = time.perf_counter()
            with socket.create_connection((node.listen_host, node.port)):
                rtts.append((time.perf_counter() - a) * 1000)
            time.sleep(0.01)
        rtts.sort()
        med = statistics.median(rtts)
        print(f"TCP handshake RTT: min {rtts[0]:.2f} / median {med:.2f} / p95 {rtts[47]:.2f} / max {rtts[-1]:.2f} ms "
              f"(median {100 * (med - args.rtt) / args.rtt:+.2f}% of requested)")
        site = lab.layout.sites["far"]
        rx = subprocess.Popen(["ip", "netns", "exec", site.netns, sys.executable, "-c", RECEIVER, site.address, "5999"],
                              stdout=subprocess.PIPE, text=True)
        assert rx.stdout.readline().strip() == "ready"
        chunk = b"x" * (1 << 20)
        sent = 0
        with socket.create_connection((site.address, 5999)) as s:
            start = time.monotonic()
            while time.monotonic() - start < args.seconds:
                s.sendall(chunk)
                sent += len(chunk)
            s.shutdown(socket.SHUT_WR)
            received = int(rx.stdout.readline())
            elapsed = time.monotonic() - start
        rx.wait()
        print(f"bulk TCP through the link: {received / elapsed / (1 << 20):.1f} MiB/s over {elapsed:.1f} s "
              f"({received >> 20} MiB)")
        cpu = cpu_seconds(relay) - cpu0
        wall = time.monotonic() - t0
        print(f"relay CPU: {cpu:.2f} s over {wall:.1f} s ({100 * cpu / wall:.0f}% of one core, mostly the bulk phase)")
        idle0 = cpu_seconds(relay)
        time.sleep(5)
        print(f"relay CPU idle (lab up, no traffic): {100 * (cpu_seconds(relay) - idle0) / 5:.1f}% of one core")
    finally:
        lab.close(down=True)


if __name__ == "__main__":
    main()
