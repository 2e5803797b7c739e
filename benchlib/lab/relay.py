"""A user-space WAN emulator: a delaying IPv4 router between TUN devices.

Used where the kernel has no ``netem`` qdisc. One relay process serves one lab:
a *hub* TUN device in the root namespace (address 198.18.L.1/24) and one TUN
device per WAN site, moved into that site's network namespace (198.18.L.(10+s)).
Every packet read from one device is written to the device owning its
destination address after the one-way delay of the path (half the site's RTT
each way; site to site: the sum of both halves), with optional uniform jitter (a site's ``jitter_ms`` bounds the round trip: half of it each way).
Packets leave in the order they arrived on each output (like netem without
reordering). The devices are not persistent: they vanish when the relay exits.

Run as ``python -m benchlib.lab.relay --lab-dir=DIR/ --config JSON``; prints
``READY`` on stdout once the devices are up and configured.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
MTU = 16000
READ_SIZE = 65536


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {res.stderr.strip()}")


class Relay:
    def __init__(self, config: dict):
        self.config = config
        self.fds: dict[int, dict] = {}  # fd -> {"one_way": s, "jitter": s, "addr": bytes}
        self.by_addr: dict[bytes, int] = {}
        self.queues: dict[int, collections.deque] = {}
        self.last_due: dict[int, float] = {}

    def setup(self) -> None:
        cfg = self.config
        hub = open_tun(cfg["hub_tun"])
        ip("link", "set", cfg["hub_tun"], "mtu", str(MTU), "up")
        ip("addr", "add", f"{cfg['hub_address']}/24", "dev", cfg["hub_tun"])
        self._add(hub, cfg["hub_address"], 0.0, 0.0)
        for site in cfg["sites"]:
            fd = open_tun(site["tun"])
            ip("link", "set", site["tun"], "netns", site["netns"])
            ip("-n", site["netns"], "link", "set", site["tun"], "mtu", str(MTU), "up")
            ip("-n", site["netns"], "addr", "add", f"{site['address']}/24", "dev", site["tun"])
            self._add(fd, site["address"], site["rtt_ms"] / 2000.0, site["jitter_ms"] / 2000.0)

    def _add(self, fd: int, address: str, one_way: float, jitter: float) -> None:
        self.fds[fd] = {"one_way": one_way, "jitter": jitter}
        self.by_addr[socket.inet_aton(address)] = fd
        self.queues[fd] = collections.deque()
        self.last_due[fd] = 0.0

    def _route(self, src_fd: int, packet: bytes, now: float) -> None:
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return  # IPv4 only
        out = self.by_addr.get(packet[16:20])
        if out is None or out == src_fd:
            return
        a, b = self.fds[src_fd], self.fds[out]
        self._enqueue(out, packet, now, a["one_way"] + b["one_way"], a["jitter"] + b["jitter"])

    def _enqueue(self, out, packet: bytes, now: float, delay: float, jitter: float) -> None:
        """Hold ``packet`` for output ``out`` for ``delay`` s (± ``jitter``), never overtaking one queued before."""
        if jitter:
            delay = max(0.0, delay + random.uniform(-jitter, jitter))
        due = max(now + delay, self.last_due[out])
        self.last_due[out] = due
        self.queues[out].append((due, packet))

    def _emit(self, out, packet: bytes) -> None:
        """Send ``packet`` on output ``out`` (here: the TUN device's fd)."""
        os.write(out, packet)

    def inputs(self) -> list[int]:
        return list(self.fds)

    def serve(self) -> None:
        fds = self.inputs()
        # select() oversleeps by a steady amount on VMs (about 0.2 ms here): wake that
        # much early, tracked as a moving estimate, so packets leave on time.
        early = 0.0002
        while True:
            now = time.monotonic()
            next_due = None
            for out, q in self.queues.items():
                while q and q[0][0] <= now:
                    try:
                        self._emit(out, q.popleft()[1])
                    except BlockingIOError:
                        break  # the kernel queue is full: drop, as a link would
                    except OSError:
                        pass
                if q and (next_due is None or q[0][0] < next_due):
                    next_due = q[0][0]
            timeout = None if next_due is None else max(0.0, next_due - time.monotonic() - early)
            ready, _, _ = select.select(fds, [], [], timeout)
            now = time.monotonic()
            if not ready and timeout:
                over = now - (next_due - early)
                early = min(0.002, max(0.0, 0.9 * early + 0.1 * (early + over)))
            for fd in ready:
                for _ in range(256):
                    try:
                        packet = os.read(fd, READ_SIZE)
                    except BlockingIOError:
                        break
                    self._route(fd, packet, now)


def _raise_priority() -> None:
    """Real-time priority: the emulated delay must not grow when the benchmark loads both cores.

    The relay sleeps in select() between packets, so it cannot starve the machine
    (and the kernel caps real-time tasks at 95% of each second anyway)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (PermissionError, OSError, AttributeError):
        try:
            os.nice(-10)
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab-dir", required=True, help="the lab this relay belongs to (marks the process)")
    parser.add_argument("--config", required=True, help="JSON: hub_tun, hub_address, sites[]")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    relay = Relay(json.loads(args.config))
    try:
        relay.setup()
    except (OSError, RuntimeError) as exc:
        print(f"ERROR {exc}", flush=True)
        return 1
    _raise_priority()
    print("READY", flush=True)
    sys.stdout.close()
    os.close(1)
    relay.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
