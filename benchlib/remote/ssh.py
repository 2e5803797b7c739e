"""SSH to the client hosts of a remote lab (asyncssh), from synchronous code.

One background event loop holds one connection per client host. Keys come from the
environment variable the spec names (the private key's text) or from the SSH agent;
host keys are checked against ``known_hosts`` (the spec's file, or ~/.ssh/known_hosts).
Nothing secret is put on a remote command line: sysbench's options, password
included, go through the process's standard input (``--config-file=/dev/stdin``).

Remote processes are started in two steps so that several hosts start together:
``spawn`` opens the session and the remote shell reports its pid and waits;
``go`` releases every spawned process at once (each writes its own wall-clock start
time first, which ``clock_offset`` turns into the sampler's time). A process is
killed by pid over the same connection, so nothing is left running on a client
host when a run is interrupted.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from benchlib.errors import BenchlibError
from benchlib.sampling.clock import Offset, OffsetEstimator

if TYPE_CHECKING:
    from benchlib.remote.spec import ClientHost


class SSHError(BenchlibError):
    """A client host that cannot be reached or used over SSH."""


def _import_asyncssh():
    try:
        import asyncssh
    except ImportError:  # pragma: no cover - a dependency of benchlib
        raise SSHError("the Python package asyncssh is missing", hint="bash scripts/bootstrap installs it") from None
    return asyncssh


def _explain(name: str, client: "ClientHost", exc: BaseException, kind: str = "client host") -> SSHError:
    asyncssh = _import_asyncssh()
    where = f"{kind} {name} ({client.user}@{client.host}:{client.port})"
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return SSHError(f"{where}: its host key is not in {client.known_hosts or '~/.ssh/known_hosts'}",
                        hint=f"check the key, then: ssh-keyscan -p {client.port} {client.host} >> "
                             f"{client.known_hosts or '~/.ssh/known_hosts'}")
    if isinstance(exc, asyncssh.PermissionDenied):
        how = f"the key in ${client.key_env}" if client.key_env else "the SSH agent's keys"
        return SSHError(f"{where}: permission denied for {how}",
                        hint=f"add the public key to ~{client.user}/.ssh/authorized_keys on {client.host}")
    if isinstance(exc, (OSError, asyncio.TimeoutError)):
        return SSHError(f"{where}: cannot connect ({exc.__class__.__name__}: {exc})",
                        hint="check the address, the port and that sshd runs there")
    return SSHError(f"{where}: {exc.__class__.__name__}: {exc}")


def client_key(client: "ClientHost"):
    """The private key named by ``key_env`` (None: use the agent)."""
    if client.key_env is None:
        return None
    asyncssh = _import_asyncssh()
    text = os.environ.get(client.key_env)
    if not text:
        raise SSHError(f"environment variable {client.key_env} is not set (the private key for {client.host})",
                       hint=f"export {client.key_env}=\"$(cat ~/.ssh/id_ed25519)\" before running benchlib")
    try:
        return asyncssh.import_private_key(text)
    except (asyncssh.KeyImportError, ValueError) as exc:
        raise SSHError(f"{client.key_env} does not hold a usable private key ({exc})",
                       hint="it must hold the key's text (OpenSSH or PEM), not a path; encrypted keys: use the "
                            "agent (agent = true)") from None


@dataclass
class RemoteProcess:
    """A command started on a client host: its lines arrive through ``on_line`` (from the loop's thread)."""

    host: str
    pid: int
    process: object
    start_wall: float | None = None  # the client host's clock when the command was released
    exit_status: int | None = None
    done: threading.Event = field(default_factory=threading.Event)
    reader: object = None


class SSHClients:
    """Connections to every client host of a remote lab; use as a context manager."""

    def __init__(self, clients: dict[str, "ClientHost"], *, connect_timeout: float = 10.0, kind: str = "client host"):
        self.clients = clients
        self.kind = kind  # what the hosts are, in messages: "client host", "server host"
        self.connect_timeout = connect_timeout
        self.conns: dict[str, object] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="benchlib-ssh", daemon=True)
        self.thread.start()
        self.procs: list[RemoteProcess] = []

    # -- plumbing --------------------------------------------------------------------
    def _call(self, coro, timeout: float | None = None):
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except BaseException:
            fut.cancel()
            raise

    def __enter__(self) -> "SSHClients":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self, names: list[str] | None = None, *, keep: bool = False) -> "SSHClients":
        """Connect to every client host (or ``names``); one SSHError naming the first that fails (all connections
        closed then, unless ``keep``: the others stay usable)."""
        asyncssh = _import_asyncssh()

        async def one(name: str):
            c = self.clients[name]
            key = client_key(c)
            kwargs = {"client_keys": [key]} if key is not None else {}
            if c.known_hosts:
                kwargs["known_hosts"] = os.path.expanduser(c.known_hosts)
            try:
                return await asyncio.wait_for(
                    asyncssh.connect(c.host, port=c.port, username=c.user, **kwargs), self.connect_timeout)
            except (asyncssh.Error, OSError, asyncio.TimeoutError) as exc:
                raise _explain(name, c, exc, self.kind) from None

        async def all_of(names):
            return await asyncio.gather(*(one(n) for n in names), return_exceptions=True)

        names = [n for n in (names or list(self.clients)) if n not in self.conns]
        results = self._call(all_of(names), self.connect_timeout + 5)
        errors = [r for r in results if isinstance(r, BaseException)]
        for name, r in zip(names, results):
            if not isinstance(r, BaseException):
                self.conns[name] = r
        if errors:
            if not keep:
                self.close()
            raise errors[0] if isinstance(errors[0], BenchlibError) else SSHError(str(errors[0]))
        return self

    def close(self) -> None:
        """Kill what is still running, close every connection, stop the loop."""
        if not self.loop.is_running():
            return
        for p in list(self.procs):
            if not p.done.is_set():
                self.kill(p)

        async def shut():
            for conn in self.conns.values():
                conn.close()
            for conn in self.conns.values():
                try:
                    await asyncio.wait_for(conn.wait_closed(), 5)
                except (asyncio.TimeoutError, OSError):
                    pass

        try:
            self._call(shut(), 10)
        finally:
            self.conns.clear()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)

    # -- commands --------------------------------------------------------------------
    def run(self, host: str, command: str, *, input: str | None = None, timeout: float = 60.0) -> tuple[int, str, str]:
        """Run ``command`` on ``host``; (exit status, stdout, stderr)."""
        async def go():
            res = await self.conns[host].run(command, input=input, check=False)
            return res.exit_status if res.exit_status is not None else 255, res.stdout or "", res.stderr or ""

        try:
            return self._call(go(), timeout)
        except TimeoutError:
            raise SSHError(f"{self.kind} {host}: {command.split()[0]} did not finish within {timeout:g} s") from None

    def put_text(self, host: str, path: str, text: str, mode: int = 0o644) -> None:
        """Write ``text`` to ``path`` on ``host`` (over the SSH session's stdin: no SFTP subsystem needed)."""
        q = shlex.quote(path)
        rc, _, err = self.run(host, f"umask 077; mkdir -p $(dirname {q}) && cat > {q}.tmp && chmod {mode:o} {q}.tmp "
                                    f"&& mv {q}.tmp {q}", input=text)
        if rc != 0:
            raise SSHError(f"client host {host}: cannot write {path}: {err.strip()}")

    def forward_socket(self, host: str, path: str) -> int:
        """A port on this machine's loopback that reaches the Unix socket ``path`` on ``host`` through the SSH
        connection (a server's socket: its ``root@localhost`` account, without opening one to the network); kept
        until the connections close. Returns the port."""
        async def listen():
            return await self.conns[host].forward_local_port_to_path("127.0.0.1", 0, path)

        try:
            listener = self._call(listen(), self.connect_timeout)
        except Exception as exc:  # noqa: BLE001 - asyncssh's own errors: the server refused the forwarding
            raise SSHError(f"{self.kind} {host}: cannot reach {path} through SSH ({exc})",
                           hint="the host's sshd must allow AllowStreamLocalForwarding (its default)") from None
        return listener.get_port()

    def pipe(self, source: str, read: str, target: str, write: str, *, timeout: float = 600.0) -> None:
        """Run ``read`` on host ``source`` and ``write`` on host ``target`` with the first's output as the second's
        input, streamed through this machine (the hosts need no way to each other); an SSHError naming the side
        that failed."""
        async def go():
            dst = await self.conns[target].create_process(write, encoding=None)
            src = await self.conns[source].create_process(read, stdout=dst.stdin, encoding=None)
            done_src = await src.wait(check=False)
            done_dst = await dst.wait(check=False)
            return done_src, done_dst

        try:
            src, dst = self._call(go(), timeout)
        except TimeoutError:
            raise SSHError(f"copying from {source} to {target} did not finish within {timeout:g} s") from None
        for host, cmd, res in ((source, read, src), (target, write, dst)):
            if res.exit_status != 0:
                err = (res.stderr or b"").decode(errors="replace").strip()[-300:]
                raise SSHError(f"{self.kind} {host}: `{cmd.split()[0]}` failed in a copy from {source} to {target} "
                               f"(exit {res.exit_status}): {err}")

    def clock_offset(self, host: str, samples: int = 9) -> Offset:
        """The host's wall clock minus ours, from the lowest-round-trip of ``samples`` readings taken through
        one open session (no session set-up inside the bracket: the error is half a channel round trip)."""
        async def measure():
            proc = await self.conns[host].create_process("while read x; do date +%s.%N; done")
            est = OffsetEstimator(window=samples)
            try:
                for _ in range(samples):
                    t_send = time.time()
                    proc.stdin.write("x\n")
                    line = await asyncio.wait_for(proc.stdout.readline(), 10)
                    t_recv = time.time()
                    if line.strip():
                        est.add(t_send, float(line.strip()), t_recv)
            finally:
                proc.stdin.write_eof()
                proc.close()
            return est.estimate()

        try:
            best = self._call(measure(), 30)
        except (asyncio.TimeoutError, TimeoutError, ValueError):
            best = None
        if best is None:
            raise SSHError(f"client host {host}: could not read its clock (date +%s.%N)")
        return best

    # -- processes started together ---------------------------------------------------
    def spawn(self, host: str, command: str, on_line: Callable[[str], None]) -> RemoteProcess:
        """Start a shell on ``host`` that reports its pid and waits for ``go`` before exec'ing ``command``;
        ``command`` reads standard input after the go line."""
        asyncssh = _import_asyncssh()
        wrapper = f"sh -c {shlex.quote('echo PID $$; IFS= read -r go; date +START%s.%N; exec ' + command)}"

        async def start():
            proc = await self.conns[host].create_process(wrapper, stderr=asyncssh.STDOUT)
            first = await asyncio.wait_for(proc.stdout.readline(), 30)
            if not first.startswith("PID "):
                proc.close()
                raise SSHError(f"client host {host}: the remote shell did not start ({first.strip()!r})")
            return proc, int(first.split()[1])

        proc, pid = self._call(start(), 40)
        rp = RemoteProcess(host, pid, proc)

        async def pump():
            try:
                async for line in proc.stdout:
                    if rp.start_wall is None and line.startswith("START"):
                        rp.start_wall = float(line[5:].strip())
                        continue
                    on_line(line)
                await proc.wait_closed()
            finally:
                rp.exit_status = proc.exit_status if proc.exit_status is not None else 255
                rp.done.set()

        rp.reader = asyncio.run_coroutine_threadsafe(pump(), self.loop)
        self.procs.append(rp)
        return rp

    def go(self, procs: list[RemoteProcess], stdin: dict[str, str]) -> float:
        """Release spawned processes together, each with its standard input; returns our wall time."""
        async def release():
            t = time.time()
            for p in procs:
                p.process.stdin.write("go\n" + stdin.get(p.host, ""))
            for p in procs:
                p.process.stdin.write_eof()
            return t

        return self._call(release(), 10)

    def kill(self, proc: RemoteProcess) -> None:
        """Kill a started process (and its children) on its host; wait for its stream to end."""
        if proc.done.is_set():
            return
        try:
            # sshd gives every session its own session id: kill all of it (the command and its children)
            self.run(proc.host, f"sid=$(ps -o sid= -p {proc.pid} | tr -d ' '); "
                                f"if [ -n \"$sid\" ]; then pkill -9 -s \"$sid\"; fi; kill -9 {proc.pid} 2>/dev/null; true",
                     timeout=10)
        except (SSHError, OSError):
            pass
        proc.done.wait(10)
