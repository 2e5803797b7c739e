"""The SSH load driver: sysbench on every client host of a remote lab at once, merged on one clock.

A run's threads (and open-loop rate) are split over the client hosts as the remote lab spec
says. Every host's sysbench is spawned first, then all are released together; each reports
its own wall-clock start, which the host's clock offset (estimated over SSH, lowest round
trip) puts on the sampler's clock. Per-second lines are parsed live on every host and merged
(``benchlib.sysbench.merge``); the merged seconds feed the same watchdog a local sysbench
has (``benchlib.sysbench.process.Watchdog``). Every remote sysbench carries the environment
variable ``BENCHLIB_LOAD=<lab>``, so ``stop_strays`` finds a previous start's load on a host.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from benchlib.sysbench.driver import prepare_failure
from benchlib.sysbench.merge import LiveMerge, merge_results
from benchlib.sysbench.options import RunError, SysbenchOptions
from benchlib.sysbench.output import Interval, LineParser, SysbenchParseError
from benchlib.sysbench.process import LoadResult, Watchdog, fatal_reason

if TYPE_CHECKING:
    from benchlib.lab.base import Lab as RemoteLab  # a benchlib.remote.lab.RemoteLab, typed by the protocol

REMOTE_DIR = ".cache/benchlib"  # relative to the SSH user's home on the client hosts


class SSHDriver:
    """sysbench on the client hosts of ``lab`` (a ``LoadDriver``)."""

    def __init__(self, lab: "RemoteLab"):
        self.lab = lab
        self.marker = f"BENCHLIB_LOAD={lab.name}"

    def _config(self, node: str) -> str:
        return self.lab.endpoint(node).config()

    def _script(self, opts: SysbenchOptions, hosts: list[str], script: str | None = None) -> str:
        """The test script's name on the client hosts (``script``, default the workload's): sysbench's own, or a Lua
        file uploaded."""
        script = script or opts.script
        if "/" not in script:
            return script
        local = Path(script)
        target = f"{REMOTE_DIR}/{local.name}"
        for h in hosts:
            self.lab.ssh.put_text(h, target, local.read_text())
        return target

    def prepare(self, node: str, opts: SysbenchOptions) -> None:
        """``sysbench prepare`` from the first client host."""
        host = next(iter(self.lab.spec.clients))
        client = self.lab.spec.clients[host]
        argv = opts.argv("prepare", *opts.prepare_args(), sysbench=client.sysbench,
                         script=self._script(opts, [host], opts.prepare_script))
        rc, out, err = self.lab.ssh.run(host, " ".join(shlex.quote(x) for x in argv), input=self._config(node),
                                        timeout=3600)
        if why := prepare_failure(rc, out + err):
            raise RunError(f"sysbench prepare of {opts.dataset_key} failed on client host {host} ({why})",
                           detail="\n".join("    " + line for line in (out + err).splitlines()[-8:]))

    def stop_strays(self) -> list[str]:
        scan = (f"for f in /proc/[0-9]*/environ; do if tr '\\0' '\\n' < \"$f\" 2>/dev/null | grep -qx "
                f"{shlex.quote(self.marker)}; then p=${{f#/proc/}}; p=${{p%/environ}}; kill -9 \"$p\" 2>/dev/null "
                f"&& echo \"$p\"; fi; done; true")
        stopped = []
        for host in self.lab.spec.clients:
            _, out, _ = self.lab.ssh.run(host, scan, timeout=30)
            stopped += [f"sysbench pid {p} on {host}" for p in out.split()]
        return stopped

    def run(self, node: str, opts: SysbenchOptions, *, on_interval: Callable[[Interval], None] | None = None,
            stall_s: float = 10.0, source: str = "sysbench",
            abort_if: Callable[[], str | None] | None = None) -> LoadResult:
        """One load from every client host together (threads and rate split by the spec's shares)."""
        lab = self.lab
        ssh = lab.ssh
        hosts = list(lab.spec.clients)
        threads = lab.spec.split_threads(opts.threads)
        rates = ({h: max(1, round(opts.rate * threads[h] / opts.threads)) for h in hosts} if opts.rate else {})
        script = self._script(opts, hosts)
        offsets = {h: ssh.clock_offset(h) for h in hosts}
        dog = Watchdog(stall_s, abort_if, silence="no per-second output from every client host")

        def merged_second(iv: Interval) -> None:
            dog.interval(iv)
            if on_interval:
                on_interval(iv)

        live = LiveMerge(hosts, merged_second)
        parsers = {h: LineParser(f"{source}:{h}") for h in hosts}
        lines: dict[str, list[str]] = {h: [] for h in hosts}
        errors: dict[str, str] = {}

        def on_line(host: str):
            def feed(line: str) -> None:
                lines[host].append(line)
                if host in errors:
                    return
                try:
                    iv = parsers[host].feed(line)
                except SysbenchParseError as exc:
                    errors[host] = str(exc)
                    return
                if iv is not None:
                    live.feed(host, iv)
            return feed

        procs = []
        config = self._config(node)
        t_go = time.time()
        try:
            for h in hosts:
                part = replace(opts, threads=threads[h], rate=rates.get(h))
                argv = ["env", self.marker, *part.argv("run", *part.run_args(), sysbench=lab.spec.clients[h].sysbench,
                                                       script=script)]
                procs.append(ssh.spawn(h, " ".join(shlex.quote(a) for a in argv), on_line(h)))
            t_go = ssh.go(procs, {p.host: config for p in procs})
            startup = time.monotonic()
            while not all(p.done.is_set() for p in procs):
                time.sleep(0.1)
                if dog.verdict() is not None:
                    break
                if not live.emitted and time.monotonic() - startup > stall_s + 30 + opts.time_s:
                    dog.outcome = ("hung", "no per-second output from the client hosts")
                    break
                if any(p.done.is_set() and p.exit_status not in (0, None) for p in procs):
                    break  # one host's sysbench died: stop the others, the run fails below
        finally:
            for p in procs:
                ssh.kill(p)
        parts = {}
        for p in procs:
            res = parsers[p.host].finish(ended_with_newline=bool(lines[p.host]) and lines[p.host][-1].endswith("\n"))
            start = (p.start_wall if p.start_wall is not None else t_go + offsets[p.host].offset_s)
            parts[p.host] = (offsets[p.host].to_local(start), res)
        merged = merge_results(parts, source)
        output = "".join(f"### client host {h} ({threads[h]} threads)\n" + "".join(lines[h]) for h in hosts)
        facts = lab.client_facts()
        clients = {h: {"threads": threads[h], "rate": rates.get(h), "exit_status": p.exit_status,
                       "start_s": parts[h][0], "clock_offset": offsets[h].as_dict(), **facts.get(h, {})}
                   for h, p in zip(hosts, procs)}
        outputs = {h: "".join(lines[h]) for h in hosts}

        def result(status: str, reason: str | None, rc: int | None, res=merged) -> LoadResult:
            return LoadResult(status, reason, output, rc, res, outputs=outputs, client_hosts=clients)

        bad = [p for p in procs if p.exit_status not in (0, None)]
        if dog.outcome is not None:
            return result(*dog.outcome, None)
        if errors:
            return result("failed", "; ".join(errors.values()), None, None)
        if bad:
            why = "; ".join(f"{p.host}: {fatal_reason(parsers[p.host].result, p.exit_status)}" for p in bad)
            return result("failed", why, bad[0].exit_status)
        return result("ok", None, 0)
