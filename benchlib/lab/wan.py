"""WAN sites: network namespaces behind delayed links, and RTT measurement.

Each site of a lab is one network namespace (``bl-<lab>-<site>``). The link
between a site and the rest of the lab is shaped by a *link shaper*: the kernel's
``netem`` qdisc where it exists, else the user-space TUN relay
(``benchlib.lab.relay``). This machine kind has no netem, so ``auto`` picks the
relay here; both give the same addressing (see ``layout``).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib.errors import MissingDependencyError, NetworkError
from benchlib.lab import procs
from benchlib.lab.layout import Layout, NodePlan
from benchlib.lab.state import locked

NETNS_PREFIX = "bl-"
INDEX_LOCK = Path("/run/lock/benchlib-net.lock") if Path("/run/lock").is_dir() else Path("/tmp/.benchlib-net.lock")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)} failed: {res.stderr.strip()}")
    return res


def capability_report() -> dict[str, tuple[bool, str]]:
    """What WAN emulation can use here: root, network namespaces, /dev/net/tun, netem."""
    out: dict[str, tuple[bool, str]] = {}
    out["root"] = (os.geteuid() == 0, "needed to create namespaces and TUN devices")
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        os.close(fd)
        out["tun"] = (True, "/dev/net/tun opens")
    except OSError as exc:
        out["tun"] = (False, f"/dev/net/tun: {exc.strerror}")
    probe = f"blprobe{os.getpid() % 100000}"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True) if os.geteuid() == 0 else None
    if res is not None and res.returncode == 0:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        out["netns"] = (True, "ip netns add works")
    else:
        out["netns"] = (False, (res.stderr.strip() if res else "not root") or "ip netns add failed")
    out["netem"] = (netem_available(), "tc qdisc netem (else the TUN relay is used)")
    return out


def netem_available() -> bool:
    if os.geteuid() != 0:
        return False
    a, b = f"blnq{os.getpid() % 10000}a", f"blnq{os.getpid() % 10000}b"
    if subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], capture_output=True).returncode:
        return False
    try:
        res = subprocess.run(["tc", "qdisc", "add", "dev", a, "root", "netem", "delay", "1ms"], capture_output=True)
        return res.returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def check_capable() -> None:
    report = capability_report()
    missing = [f"{k} ({why})" for k, (ok, why) in report.items() if k != "netem" and not ok]
    if missing:
        raise MissingDependencyError(
            f"WAN sites need {', '.join(missing)}",
            hint="run as root on a kernel with network namespaces and /dev/net/tun, or remove [sites] from the spec",
        )


def allocate_index(root: Path) -> int:
    """A /24 number (1..254) no other lab on this machine uses."""
    from benchlib.lab.lab import list_labs
    from benchlib.lab.state import read

    with locked(INDEX_LOCK):
        used = {rec.net_index for name in list_labs(root) if (rec := read(root / name)) and rec.net_index}
        links = _ip("-o", "link", "show", check=False).stdout
        for index in range(1, 255):
            if index not in used and f" bl{index}h" not in links and f" bl{index}h:" not in links:
                return index
    raise NetworkError("no free network index for WAN sites (254 labs with sites are up)",
                       hint="benchlib lab cleanup --all")


def up(layout: Layout) -> int:
    """Create the lab's namespaces and start its relay; return the relay pid."""
    created = []
    try:
        for site in layout.sites.values():
            if site.netns in list_namespaces():
                raise NetworkError(f"network namespace {site.netns} already exists",
                                   hint="benchlib lab cleanup removes namespaces of labs that are gone")
            _ip("netns", "add", site.netns)
            created.append(site.netns)
            _ip("-n", site.netns, "link", "set", "lo", "up")
        config = {
            "hub_tun": layout.hub_tun,
            "hub_address": layout.hub_address,
            "sites": [
                {"tun": s.tun, "netns": s.netns, "address": s.address, "rtt_ms": s.rtt_ms, "jitter_ms": s.jitter_ms}
                for s in layout.sites.values()
            ],
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchlib.lab.relay", f"{layout.relay_marker}/", "--config", json.dumps(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(layout.dir / "relay.log", "ab"),
            start_new_session=True,
            text=True,
        )
        line = proc.stdout.readline().strip()
        proc.stdout.close()
        if line != "READY":
            procs.stop([(proc.pid, layout.relay_marker)], graceful=False)
            raise NetworkError(f"the WAN relay did not start: {line or 'no output'}",
                               hint=f"see {layout.dir / 'relay.log'}; `benchlib doctor` checks namespaces and /dev/net/tun")
        return proc.pid
    except BaseException:
        for ns in created:
            _ip("netns", "del", ns, check=False)
        raise


def is_up(layout: Layout, relay_pid: int | None) -> bool:
    return procs.is_running(relay_pid, layout.relay_marker)


def list_namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _delete_namespace(ns: str) -> None:
    pids = _ip("netns", "pids", ns, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass
    procs.wait_gone([int(p) for p in pids if p.isdigit()], 10)
    _ip("netns", "del", ns, check=False)


def down(layout: Layout, relay_pid: int | None) -> None:
    """Stop the relay (its TUN devices vanish with it) and delete the lab's namespaces."""
    if relay_pid:
        procs.stop([(relay_pid, layout.relay_marker)], graceful=False)
    present = set(list_namespaces())
    for site in layout.sites.values():
        if site.netns in present:
            _delete_namespace(site.netns)


def cleanup_orphans(live_labs: set[str]) -> list[str]:
    """Delete ``bl-<lab>-<site>`` namespaces whose lab is not up."""
    removed = []
    for ns in list_namespaces():
        if not ns.startswith(NETNS_PREFIX):
            continue
        lab = ns[len(NETNS_PREFIX):].rsplit("-", 1)[0]
        if lab not in live_labs:
            _delete_namespace(ns)
            removed.append(ns)
    return removed


def measure_rtt(node: NodePlan, samples: int = 15) -> dict[str, float]:
    """TCP handshake round-trip from the root namespace to ``node`` (min/median/max in ms).

    A connect() returns after SYN and SYN-ACK: exactly one round trip of the link.
    """
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        with socket.create_connection((node.listen_host, node.port), timeout=10):
            times.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    return {"min_ms": min(times), "median_ms": statistics.median(times), "max_ms": max(times), "samples": samples}
