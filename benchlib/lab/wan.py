"""WAN sites: network namespaces behind delayed links, and RTT measurement.

Each site of a lab is one network namespace (``bl-<lab>-<site>``). The link
between a site and the rest of the lab is made by a *link shaper* (one small
interface, one registry):

- ``netem``: a veth pair per site with the kernel's ``netem`` qdisc on both ends
  (half the round trip each way); site-to-site traffic is forwarded by the root
  namespace, with forwarding switched on for the lab's own veth ends only.
- ``tun-relay``: the user-space relay of ``benchlib.lab.relay`` between TUN devices,
  for kernels without netem (this machine kind).

``auto`` picks netem where the kernel has it. Both give the same addresses (see
``layout``) and the same delay semantics: site to site is the sum of both halves.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

from benchlib.errors import MissingDependencyError, NetworkError
from benchlib.lab import procs
from benchlib.lab.layout import Layout, NodePlan
from benchlib.lab.state import list_labs, locked, read
from benchlib.plugin import Registry

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


@functools.lru_cache(maxsize=1)
def netem_available() -> bool:
    """Whether this kernel has the netem qdisc (probed once per process on a throw-away veth pair)."""
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

    with locked(INDEX_LOCK):
        used = {rec.net_index for name in list_labs(root) if (rec := read(root / name)) and rec.net_index}
        links = _ip("-o", "link", "show", check=False).stdout
        for index in range(1, 255):
            if index not in used and f" bl{index}h" not in links and f" bl{index}h:" not in links:
                return index
    raise NetworkError("no free network index for WAN sites (254 labs with sites are up)",
                       hint="benchlib lab cleanup --all")


class LinkShaper:
    """Makes the delayed links between the root namespace and a lab's site namespaces."""

    name: ClassVar[str]

    def __init__(self, layout: Layout):
        self.layout = layout

    @classmethod
    def available(cls) -> bool:
        raise NotImplementedError

    def up(self) -> int | None:
        """Create the links (namespaces exist already); return the pid of a helper process, if any."""
        raise NotImplementedError

    def is_up(self, pid: int | None) -> bool:
        raise NotImplementedError

    def down(self, pid: int | None) -> None:
        raise NotImplementedError


SHAPERS: Registry[type[LinkShaper]] = Registry("link shaper")


def register(cls: type[LinkShaper]) -> type[LinkShaper]:
    return SHAPERS.register(cls)


def resolve_shaper(requested: str) -> str:
    """The shaper a lab uses: ``auto`` is netem where the kernel has it, else the TUN relay."""
    if requested == "auto":
        return "netem" if SHAPERS["netem"].available() else "tun-relay"
    if not SHAPERS[requested].available():
        raise MissingDependencyError(
            f"link shaper {requested!r} is not available on this machine",
            hint="set shaper = \"auto\" in the spec (it falls back to the TUN relay where the kernel has no netem)",
        )
    return requested


@register
class TunRelayShaper(LinkShaper):
    name = "tun-relay"

    @classmethod
    def available(cls) -> bool:
        try:
            os.close(os.open("/dev/net/tun", os.O_RDWR))
            return True
        except OSError:
            return False

    def up(self) -> int:
        layout = self.layout
        config = {
            "hub_tun": layout.hub_tun,
            "hub_address": layout.hub_address,
            "sites": [
                {"tun": s.tun, "netns": s.netns, "address": s.address, "rtt_ms": s.rtt_ms, "jitter_ms": s.jitter_ms}
                for s in layout.sites.values()
            ],
        }
        with open(layout.dir / "relay.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "benchlib.lab.relay", f"{layout.relay_marker}/", "--config", json.dumps(config)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True, text=True,
            )
        line = proc.stdout.readline().strip()
        proc.stdout.close()
        if line != "READY":
            procs.stop([(proc.pid, layout.relay_marker)], graceful=False)
            raise NetworkError(f"the WAN relay did not start: {line or 'no output'}",
                               hint=f"see {layout.dir / 'relay.log'}; `benchlib doctor` checks namespaces and /dev/net/tun")
        return proc.pid

    def is_up(self, pid):
        return procs.is_running(pid, self.layout.relay_marker)

    def down(self, pid):
        if pid:  # the relay's TUN devices are not persistent: they vanish with it, a moment after it exits
            procs.stop([(pid, self.layout.relay_marker)], graceful=False)
            wait_devices_gone([self.layout.hub_tun])


@register
class NetemShaper(LinkShaper):
    name = "netem"

    @classmethod
    def available(cls) -> bool:
        return netem_available()

    def root_end(self, site) -> str:
        return f"bl{self.layout.net_index}v{site.number}"

    def _qdisc(self, dev: str, netns: str | None, one_way_ms: float, jitter_ms: float) -> None:
        cmd = ["tc"] + (["-n", netns] if netns else []) + ["qdisc", "replace", "dev", dev, "root", "netem",
                                                           "delay", f"{one_way_ms:g}ms"]
        if jitter_ms:
            cmd.append(f"{jitter_ms:g}ms")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise NetworkError(f"{' '.join(cmd)} failed: {res.stderr.strip()}")

    def up(self) -> None:
        layout = self.layout
        hub = layout.hub_address
        forward = len(layout.sites) > 1
        for site in layout.sites.values():
            root_end = self.root_end(site)
            _ip("link", "add", root_end, "type", "veth", "peer", "name", site.tun)
            _ip("link", "set", site.tun, "netns", site.netns)
            _ip("addr", "add", hub, "peer", site.address, "dev", root_end)
            _ip("link", "set", root_end, "up")
            _ip("-n", site.netns, "addr", "add", site.address, "peer", hub, "dev", site.tun)
            _ip("-n", site.netns, "link", "set", site.tun, "up")
            # other sites via the hub (a veth is Ethernet: an on-link route would ARP for them and get no answer)
            _ip("-n", site.netns, "route", "add", f"{hub.rsplit('.', 1)[0]}.0/24", "via", hub, "dev", site.tun,
                "src", site.address)
            if forward:  # site to site through the root namespace, on the lab's own devices only
                Path(f"/proc/sys/net/ipv4/conf/{root_end}/forwarding").write_text("1\n")
            self._qdisc(root_end, None, site.rtt_ms / 2, site.jitter_ms / 2)
            self._qdisc(site.tun, site.netns, site.rtt_ms / 2, site.jitter_ms / 2)
        return None

    def is_up(self, pid):
        links = _ip("-o", "link", "show", check=False).stdout
        return all(f" {self.root_end(s)}@" in links for s in self.layout.sites.values())

    def down(self, pid):
        for site in self.layout.sites.values():
            _ip("link", "del", self.root_end(site), check=False)  # removes its peer too


def root_devices(layout: Layout) -> list[str]:
    """Every device name a lab's shapers may create in the root namespace."""
    if not layout.net_index:
        return []
    return [layout.hub_tun] + [f"bl{layout.net_index}v{s.number}" for s in layout.sites.values()]


def up(layout: Layout, shaper: str) -> int | None:
    """Create the lab's namespaces and links; return the pid of the shaper's helper, if any."""
    created = []
    link = SHAPERS[shaper](layout)
    try:
        for site in layout.sites.values():
            if site.netns in list_namespaces():
                raise NetworkError(f"network namespace {site.netns} already exists",
                                   hint="benchlib lab cleanup removes namespaces of labs that are gone")
            _ip("netns", "add", site.netns)
            created.append(site.netns)
            _ip("-n", site.netns, "link", "set", "lo", "up")
        return link.up()
    except BaseException:
        link.down(None)
        for ns in created:
            _delete_namespace(ns)
        raise


def relink(layout: Layout, shaper: str, pid: int | None) -> int | None:
    """Restore the links of a lab whose namespaces are still there (e.g. its relay was killed): the servers
    in the namespaces keep running and their TCP connections carry on once the addresses are back."""
    link = SHAPERS[shaper](layout)
    link.down(pid)
    return link.up()


def is_up(layout: Layout, shaper: str, pid: int | None) -> bool:
    return SHAPERS[shaper](layout).is_up(pid)


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


def down(layout: Layout, shaper: str | None, pid: int | None) -> None:
    """Remove the lab's links and delete its namespaces."""
    if not layout.sites:
        return
    SHAPERS[shaper or "tun-relay"](layout).down(pid)
    present = set(list_namespaces())
    for site in layout.sites.values():
        if site.netns in present:
            _delete_namespace(site.netns)


def relay_devices(cmdline: list[str]) -> list[str]:
    """The root-namespace TUN device of a relay process, from its command line (none for another process)."""
    if "benchlib.lab.relay" not in cmdline or "--config" not in cmdline:
        return []
    try:
        hub = json.loads(cmdline[cmdline.index("--config") + 1]).get("hub_tun")
    except (ValueError, IndexError, AttributeError):
        return []
    return [hub] if hub else []


def wait_devices_gone(devices: list[str], timeout: float = 5.0) -> list[str]:
    """Wait until the kernel has removed ``devices`` (a TUN device goes a moment after its process has exited);
    the names still there after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
        left = [d for d in devices if d and (f" {d}:" in links or f" {d}@" in links)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def cleanup_orphans(root: Path, live_labs: set[str]) -> list[str]:
    """Delete this root's ``bl-<root tag>-<lab>-<site>`` namespaces whose lab is not up (namespaces of
    labs under other roots, e.g. a test session next to a user's labs, are never touched)."""
    from benchlib.lab.layout import netns_prefix

    prefix = netns_prefix(root)
    removed = []
    for ns in list_namespaces():
        if not ns.startswith(prefix):
            continue
        lab = ns[len(prefix):].rsplit("-", 1)[0]
        if lab not in live_labs:
            _delete_namespace(ns)
            removed.append(ns)
    return removed


def measure_rtt(node: NodePlan, samples: int = 15) -> dict[str, float]:
    """TCP handshake round-trip from the root namespace to ``node`` (min/median/p90/max in ms)."""
    return handshake_rtt(node.listen_host, node.port, samples)


def handshake_rtt(host: str, port: int, samples: int = 15, timeout: float = 10) -> dict[str, float]:
    """TCP handshake round-trip from here to ``host:port`` (min/median/p90/max in ms); an ``OSError`` when it cannot
    connect.

    A connect() returns after SYN and SYN-ACK: exactly one round trip of the link.
    """
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        with socket.create_connection((host, port), timeout=timeout):
            times.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    p90 = statistics.quantiles(times, n=10)[-1] if len(times) > 1 else times[0]
    return {"min_ms": min(times), "median_ms": statistics.median(times), "p90_ms": p90, "max_ms": max(times),
            "samples": samples}
