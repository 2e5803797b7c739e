"""One server process of a lab (its flavour's server, run as ``benchlib.servers.Server`` says): its directory,
start, readiness and stop."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pymysql

from benchlib.errors import NodeStartError
from benchlib.lab import procs, sql
from benchlib.lab.layout import NodePlan
from benchlib.lab.secrets import Credentials
from benchlib.servers import Server

NOISE = ("Could not increase number of max_open_files",)
KEY = ("[ERROR]", "Assertion failure", "got signal")  # what a failure or a crash says of its cause


def log_tail(path: Path, lines: int = 12) -> str:
    """The last meaningful lines of an error log, indented for a message: its last error lines and how a crash
    began (an assertion, the signal) kept whole before the last lines, which after a crash are a stack trace."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"    (no log at {path})"
    keep = [line for line in text if line.strip() and not any(n in line for n in NOISE)]
    key = [i for i, line in enumerate(keep) if any(k in line for k in KEY)][-max(1, lines // 2):]
    rest = [i for i in range(len(keep)) if i not in key][-(lines - len(key)):] if lines > len(key) else []
    # an error line whole (up to 1000 characters: Group Replication's GTID sets are the cause), others cut at 300
    return "\n".join(f"    {keep[i][:1000 if '[ERROR]' in keep[i] else 300]}" for i in sorted(key + rest)) \
        or f"    (empty log {path})"


def chown_tree(path: Path, user: str | None) -> None:
    if user is None:
        return
    shutil.chown(path, user, user)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            shutil.chown(os.path.join(root, name), user, user)


def copy_datadir(src: Path, dst: Path) -> None:
    """Copy a prepared datadir (owner, modes and sparse files kept)."""
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)


def write_private(path: Path, text: str, owner: str | None) -> None:
    """A mode-600 file only ``owner`` (the servers' user) and root can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    if owner:
        shutil.chown(path, owner, owner)


def prepare_dir(node: NodePlan, cnf_text: str, run_as: str | None) -> None:
    node.dir.mkdir(parents=True, exist_ok=True)
    node.tmpdir.mkdir(exist_ok=True)
    node.cnf.write_text(cnf_text)
    if run_as:
        shutil.chown(node.dir, run_as, run_as)
        shutil.chown(node.tmpdir, run_as, run_as)


def argv(node: NodePlan, server: Server, run_as: str | None, *extra: str) -> list[str]:
    cmd = server.argv(node.marker, *([f"--user={run_as}"] if run_as else []), *extra)
    if node.cpus:  # its cluster's own CPU set (benchlib.lab.placement)
        cmd = ["taskset", "-c", node.cpus, *cmd]
    if node.netns:
        cmd = ["ip", "netns", "exec", node.netns, *cmd]
    return cmd


def start(node: NodePlan, server: Server, run_as: str | None, *extra: str) -> int:
    """Start the server of ``node`` in the background (its own session); return its pid."""
    for stale in (node.socket, node.socket.with_name(node.socket.name + ".lock")):  # left by a killed server
        stale.unlink(missing_ok=True)  # (MySQL's .lock names a pid that may be someone else's by now)
    with open(node.dir / "stdout.log", "ab") as out:
        proc = subprocess.Popen(
            argv(node, server, run_as, *extra),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid


def is_up(node: NodePlan, pid: int | None) -> bool:
    return procs.is_running(pid, node.marker)


def wait_listening(node: NodePlan, pid: int, host: str, port: int, timeout: float = 30.0) -> None:
    """Wait until ``host:port`` accepts TCP connections (the process must stay alive meanwhile)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not procs.is_running(pid):
            raise NodeStartError(
                f"node {node.name} exited during start (port {node.port})",
                hint="common causes: a port in use, a server option in the spec that the server rejects",
                detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log)}",
            )
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.005)
    raise NodeStartError(f"node {node.name} did not listen on {host}:{port} within {timeout:.0f} s",
                         detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log)}")


def wait_connectable(node: NodePlan, pid: int, creds: Credentials, timeout: float = 60.0, *, what: str = "start",
                     abort: threading.Event | None = None):
    """Wait until ``node`` accepts a root connection on its socket; return that connection.

    Raises ``NodeStartError`` with the error-log tail when the process exits or
    the timeout passes.
    """
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if abort is not None and abort.is_set():
            raise NodeStartError(f"stopped waiting for {node.name}: another node failed")
        # No marker check here: /proc/PID/cmdline is briefly empty while the process execs,
        # and a child we just started cannot have its pid reused before we reap it.
        if not procs.is_running(pid):
            raise NodeStartError(
                f"node {node.name} exited during {what} (port {node.port})",
                hint="common causes: a port in use, a server option in the spec that the server rejects",
                detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log)}",
            )
        if node.socket.exists():
            try:
                return sql.connect(node, creds, timeout=2)
            except pymysql.err.OperationalError as exc:
                last_error = str(exc.args[-1]) if exc.args else str(exc)
        time.sleep(0.02)
    raise NodeStartError(
        f"node {node.name} did not accept connections within {timeout:.0f} s ({last_error or 'no socket'})",
        hint=f"read {node.error_log}",
        detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log)}",
    )
