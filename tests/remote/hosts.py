"""A "remote" lab for the tests and bench/remote_clients.py: a local MariaDB lab reached only through a network address, and client
hosts that are network namespaces running their own sshd.

- Each client host is a namespace ``blc<pid>-<k>`` with a veth pair: 198.18.251.(10+k) inside, the
  shared address 198.18.251.1 on the root end (the same address on each root end, as the WAN labs'
  hub). An sshd started in the namespace listens on its address only, with a host key, an
  authorized key and a known_hosts file generated for the test (nothing of the machine's own SSH
  configuration is read or changed).
- The lab's servers listen on loopback; a socat per server in the root namespace forwards
  198.18.251.1:<port> to it, so sampler and client hosts reach the "remote" nodes by host:port.

Everything is removed at the end, also when a test fails; the teardown asserts that nothing is left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SHARED = "198.18.251.1"
TAG = f"blc{os.getpid() % 100000}"


def _ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    assert res.returncode == 0, f"ip {' '.join(args)}: {res.stderr}"


def _wait_port(host: str, port: int, netns: str | None = None, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if netns is None:
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex((host, port)) == 0:
                    return
        else:
            res = subprocess.run(["ip", "netns", "exec", netns, "ss", "-Htln", f"sport = :{port}"],
                                 capture_output=True, text=True)
            if res.stdout.strip():
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {host}:{port} after {timeout} s")


@dataclass
class ClientHosts:
    dir: Path
    hosts: dict[str, str] = field(default_factory=dict)  # name -> address
    namespaces: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)
    key_text: str = ""
    known_hosts: Path | None = None

    def add(self, k: int) -> str:
        ns, root_end, ns_end = f"{TAG}-{k}", f"{TAG}r{k}", f"{TAG}n{k}"
        address = f"198.18.251.{10 + k}"
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("link", "add", root_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", ns_end, "netns", ns)
        _ip("addr", "add", SHARED, "peer", address, "dev", root_end)
        _ip("link", "set", root_end, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", address, "peer", SHARED, "dev", ns_end)
        _ip("-n", ns, "link", "set", ns_end, "up")
        self._sshd(str(k), address, 22, ns)
        self.hosts[f"c{k}"] = address
        return address

    def server_sshd(self, port: int = 2222) -> int:
        """An sshd in the root namespace on SHARED:``port``: the "server host" of the forwarded lab servers
        (same key as the client hosts)."""
        self._sshd("server", SHARED, port, None)
        public = (self.dir / "host_key.pub").read_text().strip()
        with open(self.known_hosts, "a") as f:
            f.write(f"[{SHARED}]:{port} {public}\n")
        return port

    def _sshd(self, tag: str, address: str, port: int, ns: str | None) -> None:
        pid_file = self.dir / f"sshd-{tag}.pid"
        config = self.dir / f"sshd-{tag}.conf"
        config.write_text("\n".join([
            f"ListenAddress {address}:{port}", f"HostKey {self.dir / 'host_key'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}", f"PidFile {pid_file}",
            "StrictModes no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password", "UsePAM no", "MaxSessions 50", "MaxStartups 50",
            "LogLevel ERROR", ""]))
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        prefix = ["ip", "netns", "exec", ns] if ns else []
        proc = subprocess.Popen([*prefix, "/usr/sbin/sshd", "-D", "-e", "-f", str(config)],
                                stdout=subprocess.DEVNULL, stderr=open(self.dir / f"sshd-{tag}.log", "w"),
                                start_new_session=True)
        self.procs.append(proc)
        _wait_port(address, port, netns=ns)

    def forward(self, port: int) -> None:
        """socat in the root namespace: SHARED:port -> 127.0.0.1:port (a lab server), TCP_NODELAY on both sides
        (without it, Nagle on the relay cut a forwarded oltp_read_write to about a fifth of its rate)."""
        proc = subprocess.Popen(["socat", f"TCP-LISTEN:{port},bind={SHARED},reuseaddr,fork,nodelay",
                                 f"TCP:127.0.0.1:{port},nodelay"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.procs.append(proc)
        _wait_port(SHARED, port)

    def _namespace_pids(self) -> list[int]:
        pids = []
        for ns in self.namespaces:
            out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
            pids += [int(x) for x in out.split()]
        return pids

    def teardown(self) -> list[str]:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        # sshd's per-connection processes start their own sessions: whatever still runs in a namespace
        # (a connection a failed test left open) is killed by namespace, not by process group
        in_namespaces = self._namespace_pids()
        for pid in in_namespaces:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self._namespace_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        for k, ns in enumerate(self.namespaces, start=1):
            subprocess.run(["ip", "link", "del", f"{TAG}r{k}"], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        left = []
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        left += [f"namespace {ns}" for ns in self.namespaces if ns in listed]
        deadline = time.monotonic() + 5  # a veth goes away with its namespace, a moment later
        while True:
            links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
            devices = [f"device {TAG}r{k}" for k in range(1, 10) if f" {TAG}r{k}@" in links]
            if not devices or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        left += devices
        stray = subprocess.run(["pgrep", "-af", str(self.dir)], capture_output=True, text=True).stdout.strip()
        if stray:
            left.append(f"processes: {stray}")
        shutil.rmtree(self.dir, ignore_errors=True)
        return left




@contextlib.contextmanager
def namespace_client_hosts(count: int = 2):
    """``count`` SSH client hosts in their own namespaces (root, openssh-server); the private key is in
    BENCHLIB_TEST_SSH_KEY while they exist. Everything is removed on exit; leftovers raise AssertionError."""
    import asyncssh

    d = Path(f"/tmp/{TAG}")
    d.mkdir(mode=0o700, exist_ok=True)
    hosts = ClientHosts(d)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    (d / "host_key").write_bytes(host_key.export_private_key())
    os.chmod(d / "host_key", 0o600)
    user_key = asyncssh.generate_private_key("ssh-ed25519")
    (d / "authorized_keys").write_bytes(user_key.export_public_key())
    hosts.key_text = user_key.export_private_key().decode()
    os.environ["BENCHLIB_TEST_SSH_KEY"] = hosts.key_text
    try:
        for k in range(1, count + 1):
            hosts.add(k)
        public = host_key.export_public_key().decode().strip()
        (d / "host_key.pub").write_text(public + "\n")
        hosts.known_hosts = d / "known_hosts"
        hosts.known_hosts.write_text("".join(f"{a} {public}\n" for a in hosts.hosts.values()))
        yield hosts
    finally:
        os.environ.pop("BENCHLIB_TEST_SSH_KEY", None)
        left = hosts.teardown()
        assert not left, f"left behind: {left}"


def create_account(lab, writer: str, user: str, password: str, global_privileges: str | None = None) -> None:
    """A benchmark account on ``writer`` (it replicates to the other nodes) for connections through the
    forwarders (they arrive from 127.0.0.1): ALL on sbtest and benchlib, plus ``global_privileges`` ON *.*."""
    from benchlib.lab import sql

    with lab.connect(writer) as conn:
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY %s", (password,))
        grants = [f"GRANT ALL PRIVILEGES ON {db}.* TO '{user}'@'127.0.0.1'" for db in ("sbtest", "benchlib")]
        if global_privileges:
            grants.append(f"GRANT {global_privileges} ON *.* TO '{user}'@'127.0.0.1'")
        sql.execute(conn, *grants)


def remote_lab_toml(lab, hosts: ClientHosts | None, *, name: str, systems: dict[str, str], roles: dict[str, str],
                    user: str, password_env: str, node_extra: dict[str, str] | None = None) -> str:
    """A remote lab spec for ``lab``'s clusters (``systems``: cluster -> system) reached through the
    forwarders on SHARED, with ``hosts`` as its client hosts (the key in BENCHLIB_TEST_SSH_KEY; None: no
    [clients], sysbench runs on this host)."""
    out = ['kind = "remote"', f'name = "{name}"', "[credentials]", f'user = "{user}"', f'password_env = "{password_env}"']
    for cluster, system in systems.items():
        out += [f"[clusters.{cluster}]", f'system = "{system}"', "nodes = ["]
        for n in lab.layout.cluster_nodes(cluster):
            extra = (node_extra or {}).get(n.name, "")
            out.append(f'  {{ name = "{n.name}", host = "{SHARED}", port = {n.port}, role = "{roles[n.name]}"{extra} }},')
        out.append("]")
    for client, address in (hosts.hosts.items() if hosts else []):
        out += [f"[clients.{client}]", f'host = "{address}"', 'user = "root"', 'key_env = "BENCHLIB_TEST_SSH_KEY"',
                f'known_hosts = "{hosts.known_hosts}"']
    return "\n".join(out) + "\n"
