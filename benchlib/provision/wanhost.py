"""WAN delay on a provisioned host: what ``benchlib provision`` runs on each host of a lab spec with [sites].

A host delays what it sends toward hosts of other sites, as the embedded lab's sites do (``benchlib.lab.wan``): a
host in site A sends to one in site B after (rtt_A + rtt_B) / 2, to a host in no site after rtt_A / 2 (that host
delays its answers as much), and to benchlib's own machine, which shapes nothing, after rtt_A; each with half of
each side's jitter. Two shapers:

- ``netem``: the kernel's netem qdisc. On the interface toward the peers, a ``prio`` qdisc (handle 3307:) whose
  band 1 takes all other traffic unshaped, and one band per distinct delay with netem under it; a u32 filter per
  peer address. Nothing keeps running.
- ``relay``, for kernels without netem (this machine kind): the host's packets to those peers are routed into a TUN
  device ``blwan0`` (policy routing: table 3307, consulted for every packet not marked 3307), held by the embedded
  lab's relay loop (``relay.py``, copied beside this file) and sent on through a raw socket marked 3307, so the main
  table routes them out as before.

Standalone (Python's standard library and relay.py): copied to /usr/local/lib/benchlib/ on the hosts.

    python3 wanhost.py start|stop|status CONFIG   CONFIG: /etc/benchlib/wan.json
    python3 wanhost.py relay CONFIG                the relay in the foreground (the unit benchlib-wan, or start's child)

CONFIG: {"shaper": "netem" | "relay", "service": "auto" | "systemd" | "direct", "source": this host's address,
"peers": [{"address": ..., "delay_ms": ..., "jitter_ms": ...}, ...]}
"""

from __future__ import annotations

import collections
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

try:  # on the hosts: relay.py beside this file; in benchlib: the embedded lab's module
    import relay  # type: ignore[import-not-found]
except ImportError:
    from benchlib.lab import relay

MARK = 3307  # the relay's packets, and its routing table and rule priority
HANDLE = "3307:"  # the netem shaper's root qdisc
TUN = "blwan0"
PIDFILE = Path("/run/benchlib-wan.pid")
UNIT = "benchlib-wan"


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {(res.stderr or res.stdout).strip()}")
    return res


def device_toward(address: str) -> str:
    """The interface the main table sends ``address``'s packets out of."""
    parts = _run("ip", "route", "get", address, "mark", str(MARK)).stdout.split()
    return parts[parts.index("dev") + 1]


# -- netem ------------------------------------------------------------------------------------------------------------
def netem_commands(peers: list[dict], dev_of: dict[str, str]) -> list[list[str]]:
    """The tc commands that shape ``peers`` (each peer's interface in ``dev_of``): per interface a prio root, one
    netem band per distinct (delay, jitter), a filter per peer address."""
    cmds: list[list[str]] = []
    by_dev: dict[str, list[dict]] = {}
    for p in peers:
        by_dev.setdefault(dev_of[p["address"]], []).append(p)
    for dev, group in by_dev.items():
        delays = sorted({(p["delay_ms"], p.get("jitter_ms", 0.0)) for p in group})
        if len(delays) > 15:
            raise RuntimeError(f"{dev}: {len(delays)} distinct delays; a prio qdisc has 16 bands")
        cmds.append(["tc", "qdisc", "replace", "dev", dev, "root", "handle", HANDLE, "prio",
                     "bands", str(max(2, len(delays) + 1)), "priomap", *["0"] * 16])
        for k, (delay, jitter) in enumerate(delays, start=2):
            cmds.append(["tc", "qdisc", "replace", "dev", dev, "parent", f"{HANDLE}{k}", "handle", f"{10 + k}:",
                         "netem", "delay", f"{delay:g}ms", *([f"{jitter:g}ms"] if jitter else [])])
            for p in group:
                if (p["delay_ms"], p.get("jitter_ms", 0.0)) == (delay, jitter):
                    cmds.append(["tc", "filter", "add", "dev", dev, "parent", HANDLE, "protocol", "ip", "prio", "1",
                                 "u32", "match", "ip", "dst", f"{p['address']}/32", "flowid", f"{HANDLE}{k}"])
    return cmds


def _peer_devices(cfg: dict) -> list[str]:
    return sorted({device_toward(p["address"]) for p in cfg["peers"]})


def _netem_on(dev: str) -> bool:
    return f"qdisc prio {HANDLE}" in _run("tc", "qdisc", "show", "dev", dev, "root", check=False).stdout


# -- relay ------------------------------------------------------------------------------------------------------------
class Egress(relay.Relay):
    """The relay loop on one host: packets read from the TUN device leave after their peer's delay."""

    def __init__(self, config: dict):
        super().__init__(config)
        self.delays = {socket.inet_aton(p["address"]): (p["delay_ms"] / 1000.0, p.get("jitter_ms", 0.0) / 1000.0)
                       for p in config["peers"]}
        self.tun = -1
        self.raw: socket.socket | None = None

    def setup(self) -> None:
        cfg = self.config
        mtu = min(int(Path(f"/sys/class/net/{d}/mtu").read_text()) for d in _peer_devices(cfg))
        self.tun = relay.open_tun(TUN)
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.raw.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
        relay.ip("link", "set", TUN, "mtu", str(mtu), "up")
        for p in cfg["peers"]:
            relay.ip("route", "replace", f"{p['address']}/32", "dev", TUN, "table", str(MARK), "src", cfg["source"])
        _run("ip", "rule", "del", "priority", str(MARK), check=False)
        relay.ip("rule", "add", "priority", str(MARK), "not", "fwmark", str(MARK), "lookup", str(MARK))
        for dst in self.delays:
            self.queues[dst] = collections.deque()
            self.last_due[dst] = 0.0

    def inputs(self) -> list[int]:
        return [self.tun]

    def _route(self, src_fd: int, packet: bytes, now: float) -> None:
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return
        dst = packet[16:20]
        if dst not in self.delays:  # not a peer (the table routes only peers here): send it on at once
            self._emit(dst, packet)
            return
        self._enqueue(dst, packet, now, *self.delays[dst])

    def _emit(self, out, packet: bytes) -> None:
        assert self.raw is not None
        try:
            self.raw.sendto(packet, (socket.inet_ntoa(out), 0))
        except OSError:
            pass  # a full queue or an unreachable peer: dropped, as a link would


def _teardown() -> None:
    _run("ip", "rule", "del", "priority", str(MARK), check=False)


def run_relay(cfg: dict) -> int:
    """The relay in the foreground: READY once packets are routed through it; the rule goes when it ends."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    egress = Egress(cfg)
    try:
        egress.setup()
    except (OSError, RuntimeError) as exc:
        _teardown()
        print(f"ERROR {exc}", flush=True)
        return 1
    relay._raise_priority()
    print("READY", flush=True)
    try:
        egress.serve()
    finally:
        _teardown()
    return 0


# -- start, stop, status ----------------------------------------------------------------------------------------------
def _systemd(cfg: dict) -> bool:
    mode = cfg.get("service", "auto")
    return mode == "systemd" or (mode == "auto" and Path("/run/systemd/system").is_dir())


def _relay_pid() -> int | None:
    try:
        pid = int(PIDFILE.read_text())
        if b"wanhost.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    except (OSError, ValueError):
        pass
    return None


def _rule_present() -> bool:
    return f"lookup {MARK}" in _run("ip", "rule", "show", "priority", str(MARK), check=False).stdout


def running(cfg: dict) -> bool:
    if cfg["shaper"] == "netem":
        return all(_netem_on(d) for d in _peer_devices(cfg))
    if _systemd(cfg):
        return _run("systemctl", "is-active", "--quiet", UNIT, check=False).returncode == 0 and _rule_present()
    return _relay_pid() is not None and _rule_present()


def start(cfg: dict, config_path: str) -> str:
    if running(cfg):
        return "WAN delay already on"
    if cfg["shaper"] == "netem":
        devs = {p["address"]: device_toward(p["address"]) for p in cfg["peers"]}
        for dev in set(devs.values()):
            _run("tc", "qdisc", "del", "dev", dev, "root", check=False)
        for cmd in netem_commands(cfg["peers"], devs):
            _run(*cmd)
        return f"WAN delay started (netem on {', '.join(sorted(set(devs.values())))})"
    if _systemd(cfg):
        _run("systemctl", "start", UNIT)
    else:
        with open("/var/log/benchlib-wan.log", "ab") as log:
            proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "relay", config_path],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        line = proc.stdout.readline().decode().strip() if proc.stdout else ""
        if line != "READY":
            proc.kill()
            raise RuntimeError(f"the relay did not start: {line or 'no answer'} (see /var/log/benchlib-wan.log)")
        PIDFILE.write_text(str(proc.pid))
    deadline = time.monotonic() + 15
    while not _rule_present():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the relay did not route within 15 s (systemctl status {UNIT})")
        time.sleep(0.1)
    return f"WAN delay started (relay through {TUN})"


def stop(cfg: dict) -> str:
    if cfg["shaper"] == "netem":
        devs = [d for d in _peer_devices(cfg) if _netem_on(d)]
        for dev in devs:
            _run("tc", "qdisc", "del", "dev", dev, "root")
        return "WAN delay stopped" if devs else "WAN delay not on"
    was = _rule_present()
    if _systemd(cfg):
        _run("systemctl", "stop", UNIT, check=False)
    else:
        pid = _relay_pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        PIDFILE.unlink(missing_ok=True)
    _teardown()
    return "WAN delay stopped" if was else "WAN delay not on"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop", "status", "relay"):
        print("usage: wanhost.py start|stop|status|relay CONFIG", file=sys.stderr)
        return 2
    cmd, path = argv
    cfg = json.loads(Path(path).read_text())
    if cmd == "relay":
        return run_relay(cfg)
    try:
        if cmd == "status":
            return 0 if running(cfg) else 3
        print(start(cfg, path) if cmd == "start" else stop(cfg))
        return 0
    except RuntimeError as exc:
        print(f"wanhost: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
