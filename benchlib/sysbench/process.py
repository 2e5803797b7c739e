"""One sysbench process here, parsed live and watched; the watchdog every load driver shares.

``run_sysbench`` starts sysbench with its connection options on standard input, parses
each line as it arrives, and kills it when the ``Watchdog`` says so:

- no per-second line for ``stall_s`` seconds, or ``stall_s`` seconds in a row with no
  transaction completed (a hung cluster: HUNG);
- ``abort_if()`` (asked twice a second) returns a reason, e.g. a node that went down or
  stopped answering (FAILED, with that reason).

sysbench is started so that it can never outlive the process that started it: it gets
SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so a campaign killed with SIGKILL
leaves no load behind; its pid is also recorded in ``pid_dir`` (if given) while it runs, so
the next start can find and stop a load that a crash of the whole machine's session left.
An interrupt (Ctrl-C) kills sysbench before it propagates.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchlib.sysbench.output import Interval, LineParser, SysbenchParseError, SysbenchResult

__all__ = ["LoadResult", "Watchdog", "die_with_parent", "fatal_reason", "record_pid", "run_sysbench", "stop_recorded"]

PR_SET_PDEATHSIG = 1


@dataclass
class LoadResult:
    status: str  # ok | failed | hung
    reason: str | None
    output: str
    returncode: int | None
    result: SysbenchResult | None = None  # what the live parser read (partial when the run failed)
    outputs: dict[str, str] = field(default_factory=dict)  # per client host (a load from several hosts)
    client_hosts: dict[str, dict[str, Any]] = field(default_factory=dict)  # their threads, clocks, versions


class Watchdog:
    """When a load must be stopped: silence, no transaction, or an outside reason (``abort_if``).

    ``line()`` marks output progress, ``interval(iv)`` a completed second; ``verdict()`` is asked
    about ten times a second and returns ``("hung" | "failed", reason)`` once, then keeps it."""

    def __init__(self, stall_s: float, abort_if: Callable[[], str | None] | None = None,
                 silence: str = "no per-second output"):
        self.stall_s, self.abort_if, self.silence = stall_s, abort_if, silence
        self.last_line = time.monotonic()
        self.zero_since: float | None = None
        self.armed = False  # silence counts only once the per-second lines have started
        self.outcome: tuple[str, str] | None = None
        self._next_check = time.monotonic()
        self._lock = threading.Lock()

    def line(self, *, arm: bool = False) -> None:
        with self._lock:
            self.last_line = time.monotonic()
            self.armed = self.armed or arm

    def interval(self, iv: Interval) -> None:
        with self._lock:
            self.last_line = time.monotonic()
            self.armed = True
            if iv.tps == 0 and iv.err_per_s == 0:
                self.zero_since = self.zero_since or time.monotonic() - 1
            else:
                self.zero_since = None

    def verdict(self) -> tuple[str, str] | None:
        if self.outcome is not None:
            return self.outcome
        now = time.monotonic()
        reason = None
        if self.abort_if is not None and now >= self._next_check:
            self._next_check = now + 0.5
            reason = self.abort_if()
        with self._lock:
            if reason:
                self.outcome = ("failed", reason)
            elif self.armed and now - self.last_line > self.stall_s:
                self.outcome = ("hung", f"{self.silence} for {self.stall_s:g} s")
            elif self.zero_since is not None and now - self.zero_since > self.stall_s:
                self.outcome = ("hung", f"no transaction completed for {self.stall_s:g} s")
        return self.outcome


def fatal_reason(result: SysbenchResult | None, returncode: int | None, most: int = 3) -> str:
    """What sysbench's FATAL lines say (repeats folded, the first ``most`` kept), or its exit status."""
    fatal = list(dict.fromkeys(result.fatal)) if result is not None else []
    more = f"; and {len(fatal) - most} more" if len(fatal) > most else ""
    return "; ".join(fatal[:most]) + more if fatal else f"sysbench exited with {returncode}"


def die_with_parent() -> None:  # runs in the child between fork and exec: SIGKILL when the parent dies
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux/glibc: the pid file still lets the next start stop it
        pass


def _start_time(pid: int) -> str | None:
    """The start time of a live process (None: no such process, or a zombie: dead already)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def record_pid(pid_dir: Path, pid: int) -> Path:
    """Note a running load in ``pid_dir`` (pid and start time: a later pid reuse is never mistaken for it)."""
    pid_dir.mkdir(parents=True, exist_ok=True)
    path = pid_dir / f"{pid}.pid"
    path.write_text(f"{pid} {_start_time(pid)}\n")
    return path


def stop_recorded(pid_dir: Path) -> list[int]:
    """Kill every sysbench recorded in ``pid_dir`` that still runs (the same process: start time checked);
    returns the pids killed."""
    killed = []
    if not pid_dir.is_dir():
        return killed
    for f in pid_dir.glob("*.pid"):
        try:
            pid, started = f.read_text().split()
            pid_i = int(pid)
        except ValueError:
            f.unlink(missing_ok=True)
            continue
        if _start_time(pid_i) == started:
            try:
                os.kill(pid_i, signal.SIGKILL)
                killed.append(pid_i)
            except ProcessLookupError:
                pass
        f.unlink(missing_ok=True)
    return killed


def run_sysbench(argv: list[str], config: str, *, on_interval: Callable[[Interval], None] | None = None,
                 stall_s: float = 10.0, source: str = "sysbench",
                 abort_if: Callable[[], str | None] | None = None, pid_dir: Path | None = None) -> LoadResult:
    """Run sysbench ``argv`` here with ``config`` (its connection options) on standard input."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1, preexec_fn=die_with_parent)
    pid_file = record_pid(pid_dir, proc.pid) if pid_dir is not None else None
    try:
        proc.stdin.write(config)
        proc.stdin.close()
    except BrokenPipeError:  # sysbench exited at once: its output says why
        pass
    parser = LineParser(source)
    lines: list[str] = []
    dog = Watchdog(stall_s, abort_if)

    def watch():
        while proc.poll() is None:
            time.sleep(0.1)
            if dog.verdict() is not None:
                proc.kill()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    parse_error = None
    try:
        for line in proc.stdout:
            lines.append(line)
            dog.line(arm=parser.section == "intervals")
            if parse_error:
                continue
            try:
                iv = parser.feed(line)
            except SysbenchParseError as exc:
                parse_error = exc
                continue
            if iv is not None:
                dog.interval(iv)
                if on_interval:
                    on_interval(iv)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stdout.close()
        rc = proc.wait()
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)
    watcher.join(timeout=1)
    output = "".join(lines)
    result = None if parse_error else parser.finish(ended_with_newline=output.endswith("\n") or not output)
    return _outcome(dog, parse_error, result, output, rc)


def _outcome(dog: Watchdog, parse_error: Exception | None, result: SysbenchResult | None, output: str,
             rc: int | None) -> LoadResult:
    if dog.outcome is not None:
        status, reason = dog.outcome
        return LoadResult(status, reason, output, rc, result)
    if parse_error:
        return LoadResult("failed", str(parse_error), output, rc, None)
    if rc != 0:
        return LoadResult("failed", fatal_reason(result, rc), output, rc, result)
    return LoadResult("ok", None, output, rc, result)
