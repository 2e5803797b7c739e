"""Namespace hosts: machines on this one, each with its own network, root filesystem, hostname, processes and sshd.

What provisioning is tested on when there are no real machines (``benchlib.provision``'s tests, and anyone who
wants to try ``benchlib provision`` first). A host is

- a network namespace with one interface (``eth0``, 198.19.N.(10+i)/24) on a bridge in this machine's namespace
  (198.19.N.1): the hosts reach each other and this machine, nothing else;
- a copy-on-write layer (overlayfs) over the cached Debian root (``benchlib.provision.hostroot``): its own ``/etc``,
  ``/var/lib``, packages and datadirs;
- its own mount, PID and UTS namespaces, entered with ``unshare`` and ``chroot``, and one of two inits:
  ``tini`` with ``sshd`` its only process (no service manager: benchlib's service script, ``ansible/files/benchlib-node``,
  starts servers directly, as in a container), or ``systemd`` booted as its process 1 in a cgroup namespace of its own
  (a cgroup ``benchlib-<netns>`` here; its own ``/dev`` of a few nodes, ``/sys`` read-only), with ``ssh.service``
  started and consoles, logins and timers masked: there the script runs each server as the unit ``benchlib@NODE``,
  as on a real machine.

Only the kernel is shared. Ansible reaches a host over real SSH with a key made for the kit; the hosts' own host keys
go into the kit's ``known_hosts``. ``down()`` kills each host's whole process tree (its PID namespace), unmounts its
layer, deletes its namespace, interfaces and files: nothing stays behind, also after a failed provisioning.

    kit = NamespaceHosts(Path("/tmp/blh"), ["db1", "db2", "db3"], systemd=["db1"]).up()
    kit.hosts["db1"].address     # 198.19.1.11
    kit.private_key              # for an SSH client (the hosts file names it by environment variable)
    kit.down()
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchlib.errors import LabError, MissingDependencyError
from benchlib.provision import hostroot

__all__ = ["NET_PREFIX", "Host", "NamespaceHosts", "clean_all"]

NET_PREFIX = "198.19"  # the benchmarking range, beside the embedded lab's 198.18
STATE = "kit.json"


@dataclass
class Host:
    name: str
    address: str
    netns: str
    dir: str  # the host's folder: upper layer, work dir, merged root
    pid: int = 0  # the unshare process holding its namespaces
    init: str = "tini"  # or "systemd"
    cgroup: str = ""  # systemd: the cgroup (here) its namespace is rooted at

    @property
    def root(self) -> Path:
        return Path(self.dir) / "root"


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise LabError(f"{' '.join(cmd[:4])} failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def _links() -> set[str]:
    out = _run("ip", "-o", "link", "show", check=False).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def _free_net() -> int:
    taken = {int(name[3:]) for name in _links() if name.startswith("blb") and name[3:].isdigit()}
    for n in range(1, 250):
        if n not in taken:
            return n
    raise LabError("no free 198.19.N.0/24 network for namespace hosts (250 kits up?)",
                   hint="take old kits down: python -m benchlib.provision.nshosts clean PARENT_DIR")


class NamespaceHosts:
    """Hosts ``names`` kept under ``dir`` (state in ``dir/kit.json``)."""

    def __init__(self, dir: Path, names: list[str], *, systemd: list[str] = ()):
        self.dir = Path(dir).absolute()
        self.names = list(names)
        self.systemd = set(systemd)  # the hosts that boot systemd (the others: tini)
        self.net = 0
        self.hosts: dict[str, Host] = {}

    # -- facts ----------------------------------------------------------------------------------------------------------
    @property
    def bridge(self) -> str:
        return f"blb{self.net}"

    @property
    def gateway(self) -> str:
        """This machine's address on the hosts' network (where the hosts see benchlib connect from)."""
        return f"{NET_PREFIX}.{self.net}.1"

    @property
    def private_key(self) -> str:
        return (self.dir / "id_ed25519").read_text()

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    # -- up -------------------------------------------------------------------------------------------------------------
    def up(self, timeout: float = 30.0) -> "NamespaceHosts":
        if os.geteuid() != 0:
            raise MissingDependencyError("namespace hosts need root (network namespaces, overlay mounts)")
        root = hostroot.find()
        if root is None:
            raise MissingDependencyError("the namespace hosts' root filesystem is not built",
                                         hint="python -m benchlib.provision.hostroot (the bootstrap builds it)")
        if (self.dir / STATE).exists():
            raise LabError(f"namespace hosts are already up in {self.dir}", hint="take them down first")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.net = _free_net()
        try:
            self._save()
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            self._save()
            _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
            key = self.dir / "id_ed25519"
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "benchlib-namespace-hosts", "-f", str(key))
            for i, name in enumerate(self.names, start=1):
                self._start(name, i, root)
            self._wait_ssh(timeout)
            self._wait_booted(timeout)
        except BaseException:
            self.down()
            raise
        return self

    def _start(self, name: str, i: int, lower: Path) -> None:
        hdir = self.dir / name
        host = Host(name=name, address=f"{NET_PREFIX}.{self.net}.{10 + i}",
                    netns=f"blh{self.net}-{name}", dir=str(hdir), init="systemd" if name in self.systemd else "tini")
        self.hosts[name] = host
        self._save()
        for sub in ("upper", "work", "root"):
            (hdir / sub).mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={lower},upperdir={hdir / 'upper'},workdir={hdir / 'work'}", str(host.root))
        r = host.root
        (r / "etc/hostname").write_text(name + "\n")
        (r / "etc/hosts").write_text("127.0.0.1 localhost\n" + "".join(
            f"{NET_PREFIX}.{self.net}.{10 + k} {n}\n" for k, n in enumerate(self.names, start=1)))
        ssh = r / "root/.ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh / "authorized_keys").write_text((self.dir / "id_ed25519.pub").read_text())
        (ssh / "authorized_keys").chmod(0o600)
        _run("chroot", str(r), "ssh-keygen", "-A")
        pub = (r / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
        with open(self.known_hosts, "a") as f:
            f.write(f"{host.address} {pub[0]} {pub[1]}\n")
        # the network: a namespace with eth0 on the kit's bridge
        _run("ip", "netns", "add", host.netns)
        veth = f"blb{self.net}h{i}"
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        _run("ip", "link", "set", veth, "master", self.bridge, "up")
        _run("ip", "-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _run("ip", "-n", host.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", host.netns, "link", "set", "lo", "up")
        _run("ip", "-n", host.netns, "route", "add", "default", "via", self.gateway)
        # its own mounts, processes and hostname; tini first with sshd its one process, or systemd
        unshare = ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child"]
        if host.init == "systemd":
            host.cgroup = str(_cgroup_root() / f"benchlib-{host.netns}")
            self._save()
            Path(host.cgroup).mkdir(exist_ok=True)
            boot = _SYSTEMD_BOOT.format(r=r)
            # the unshare process enters the host's cgroup first: the cgroup namespace is rooted there
            argv = ["sh", "-c", f'echo $$ > {host.cgroup}/cgroup.procs && exec "$@"', "boot",
                    *unshare, "--cgroup", "sh", "-c", boot]
        else:
            boot = (f"set -e; hostname {name}; mount --make-rprivate /; mount -t proc proc {r}/proc; "
                    f"mount --rbind /sys {r}/sys; mount --rbind /dev {r}/dev; mount -t tmpfs -o mode=755 tmpfs {r}/run; "
                    f"mkdir -p {r}/run/sshd {r}/run/lock; exec chroot {r} /usr/bin/tini -- /usr/sbin/sshd -D -e")
            argv = [*unshare, "sh", "-c", boot]
        log = open(hdir / "host.log", "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        host.pid = proc.pid
        self._save()

    def _wait_ssh(self, timeout: float) -> None:
        import socket

        deadline = time.monotonic() + timeout
        for host in self.hosts.values():
            while True:
                try:
                    with socket.create_connection((host.address, 22), timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        log = (Path(host.dir) / "host.log").read_text(errors="replace")[-800:]
                        raise LabError(f"namespace host {host.name} ({host.address}): sshd did not answer within "
                                       f"{timeout:.0f} s", detail=log) from None
                    time.sleep(0.1)

    def _wait_booted(self, timeout: float) -> None:
        """Wait until each systemd host has finished starting up (its first-boot units, utmp update and the like done),
        so that what runs on it next, or a look at its processes, does not meet its boot half-way."""
        for host in self.hosts.values():
            if host.init != "systemd":
                continue
            init = _first_child(host.pid)
            res = subprocess.run(["nsenter", "-t", str(init), "-a", "-r", "-w", "timeout", f"{timeout:.0f}",
                                  "systemctl", "is-system-running", "--wait"], capture_output=True, text=True)
            state = res.stdout.strip()
            if state not in ("running", "degraded"):
                failed = subprocess.run(["nsenter", "-t", str(init), "-a", "-r", "-w", "systemctl", "--failed",
                                         "--no-legend"], capture_output=True, text=True).stdout.strip()
                raise LabError(f"namespace host {host.name}: systemd did not finish starting within {timeout:.0f} s "
                               f"(state {state or res.stderr.strip() or 'unknown'})", detail=failed or None)

    # -- down -----------------------------------------------------------------------------------------------------------
    def down(self) -> None:
        """Kill every host's processes, unmount, delete namespaces, interfaces and the kit's folder."""
        for host in self.hosts.values():
            _kill_tree(host.pid)
            if host.cgroup:
                _remove_cgroup(Path(host.cgroup))
        for host in self.hosts.values():
            if host.root.is_mount():
                if _run("umount", str(host.root), check=False).returncode != 0:
                    _run("umount", "-l", str(host.root), check=False)
            _run("ip", "netns", "del", host.netns, check=False)
        if self.net and self.bridge in _links():
            _run("ip", "link", "del", self.bridge, check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.dir)], capture_output=True)

    def _save(self) -> None:
        (self.dir / STATE).write_text(json.dumps(
            {"net": self.net, "names": self.names, "hosts": {n: asdict(h) for n, h in self.hosts.items()}}))

    @classmethod
    def load(cls, dir: Path) -> "NamespaceHosts":
        data = json.loads((Path(dir) / STATE).read_text())
        kit = cls(Path(dir), data["names"])
        kit.net = data["net"]
        kit.hosts = {n: Host(**h) for n, h in data["hosts"].items()}
        return kit


#: a host booting systemd: its own /dev of a few nodes (not this machine's consoles; the TUN device for a WAN
#: relay), /sys read-only, its cgroup
#: namespace's cgroup2 tree, and ``container`` set so systemd runs as in a container
_SYSTEMD_BOOT = """set -e; mount --make-rprivate /
mount -t proc proc {r}/proc
mount -t sysfs -o ro sysfs {r}/sys
mount -t cgroup2 cgroup2 {r}/sys/fs/cgroup
mount -t tmpfs -o mode=755,nosuid tmpfs {r}/dev
mkdir {r}/dev/pts {r}/dev/shm {r}/dev/net
for d in null zero full random urandom tty net/tun; do touch {r}/dev/$d; mount --bind /dev/$d {r}/dev/$d; done
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts {r}/dev/pts
ln -s pts/ptmx {r}/dev/ptmx; ln -s /proc/self/fd {r}/dev/fd
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs {r}/dev/shm
mount -t tmpfs -o mode=755 tmpfs {r}/run
export container=benchlib-namespace-host
exec chroot {r} /lib/systemd/systemd --system --log-target=console
"""


def _cgroup_root() -> Path:
    """Where this machine's cgroup2 tree is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid one)."""
    for p in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (p / "cgroup.procs").exists() and (p / "cgroup.subtree_control").exists():
            return p
    raise MissingDependencyError("a namespace host booting systemd needs the cgroup2 file system (none mounted)",
                                 hint="use tini hosts (systemd = []), or mount cgroup2 on /sys/fs/cgroup")


def _remove_cgroup(path: Path) -> None:
    """Kill what is left in a host's cgroup and remove it with the cgroups systemd made below it."""
    if not path.is_dir():
        return
    kill = path / "cgroup.kill"
    if kill.exists():
        kill.write_text("1")
    deadline = time.monotonic() + 10
    while path.is_dir():
        for d in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [path]:
            try:
                d.rmdir()
            except OSError:
                pass
        if path.is_dir():
            if time.monotonic() > deadline:
                raise LabError(f"cgroup {path} could not be removed (processes left in it?)")
            time.sleep(0.1)


def _first_child(pid: int) -> int:
    """The host's first process (what the unshare process ``pid`` forked), as this machine numbers it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise LabError(f"namespace host process {pid} has no first process")


def _kill_tree(pid: int) -> None:
    """Kill the unshare process ``pid`` (its child, the host's first process, dies with it, and with that the host's
    whole PID namespace); wait until the namespace's processes are gone."""
    if not pid:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:  # reap it if it is our child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)


def clean_all(parent: Path) -> list[str]:
    """Take down every kit whose state is under ``parent`` (what a killed test run left); names what it removed."""
    gone = []
    for state in sorted(Path(parent).glob(f"*/{STATE}")):
        NamespaceHosts.load(state.parent).down()
        gone.append(str(state.parent))
    return gone


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "clean":
        print("\n".join(clean_all(Path(sys.argv[2]))) or "nothing to clean")
    else:
        print("usage: python -m benchlib.provision.nshosts clean PARENT_DIR", file=sys.stderr)
        sys.exit(2)
