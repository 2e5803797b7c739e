"""Run sysbench against a lab cluster: dataset once, live parsing, watchdog, sampling, run folder.

``execute_run`` is one measured run: settings are the caller's; here the dataset is
prepared if this (workload family, tables, table size) was not prepared on this lab
build yet, sampling starts, sysbench runs with its password in a mode-600 config
file (never on the command line), every per-second line is parsed as it arrives,
a watchdog kills a run that stalls, sampling goes on after the load until every
node has caught up (catch-up time is a result), and the run is written to the store.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from benchlib.errors import BenchlibError
from benchlib.lab import sql
from benchlib.sampling.lab import for_lab
from benchlib.store import RunWriter
from benchlib.sysbench.output import Interval, LineParser, SysbenchParseError, SysbenchResult

if TYPE_CHECKING:
    from benchlib.lab.lab import Lab

BUNDLED = {"oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index", "oltp_insert",
           "oltp_point_select", "oltp_read_only", "oltp_delete"}


class RunError(BenchlibError):
    """A run that cannot start (bad options, dataset preparation failed)."""


@dataclass(frozen=True)
class SysbenchOptions:
    workload: str = "oltp_read_write"
    tables: int = 4
    table_size: int = 10_000
    threads: int = 8
    time_s: int = 10
    rate: int | None = None  # open loop: target transactions per second
    percentile: int = 95
    histogram: bool = True
    extra: tuple[str, ...] = ()

    def __post_init__(self):
        if self.workload not in BUNDLED:
            raise RunError(f"unknown workload {self.workload!r}", hint=f"workloads: {', '.join(sorted(BUNDLED))}")
        for name in ("tables", "table_size", "threads", "time_s"):
            if getattr(self, name) < 1:
                raise RunError(f"{name} must be at least 1 (got {getattr(self, name)})")

    def dataset_args(self) -> list[str]:
        return [f"--tables={self.tables}", f"--table-size={self.table_size}"]

    def run_args(self) -> list[str]:
        args = [*self.dataset_args(), f"--threads={self.threads}", f"--time={self.time_s}", "--report-interval=1",
                f"--percentile={self.percentile}"]
        if self.histogram:
            args.append("--histogram")
        if self.rate:
            args.append(f"--rate={self.rate}")
        return [*args, *self.extra]


def config_file(lab: "Lab", node: str) -> Path:
    """sysbench options with the bench password, mode 600, in the lab's private client folder."""
    n = lab.node(node)
    path = lab.client_option_file("bench").parent / f"sysbench-{node}.cfg"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"db-driver=mysql\nmysql-host={n.listen_host}\nmysql-port={n.port}\nmysql-user=bench\n"
                    f"mysql-password={lab.creds.password('bench')}\nmysql-db=sbtest\n")
    return path


def prepare_dataset(lab: "Lab", writer: str, opts: SysbenchOptions) -> bool:
    """Prepare sbtest for ``opts`` unless this lab build already has it; True when it prepared."""
    key = f"{opts.tables}x{opts.table_size}"
    with lab.connect(writer) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib", "CREATE DATABASE IF NOT EXISTS sbtest",
                    "CREATE TABLE IF NOT EXISTS benchlib.datasets (name VARCHAR(64) PRIMARY KEY, prepared_at DOUBLE)")
        if sql.query(conn, "SELECT 1 FROM benchlib.datasets WHERE name = %s", (key,)):
            return False
        for i in range(1, opts.tables + 1):  # another size may be there: start clean
            sql.execute(conn, f"DROP TABLE IF EXISTS sbtest.sbtest{i}")
    res = subprocess.run(["sysbench", f"--config-file={config_file(lab, writer)}", "oltp_common",
                          *opts.dataset_args(), f"--threads={min(opts.tables, 4)}", "prepare"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RunError(f"sysbench prepare failed on {writer} (exit {res.returncode})",
                       detail="\n".join("    " + line for line in (res.stdout + res.stderr).splitlines()[-8:]))
    with lab.connect(writer) as conn:
        sql.execute(conn, "DELETE FROM benchlib.datasets")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO benchlib.datasets VALUES (%s, %s)", (key, time.time()))
    return True


@dataclass
class LoadResult:
    status: str  # ok | failed | hung
    reason: str | None
    output: str
    returncode: int | None
    result: SysbenchResult | None = None  # what the live parser read (partial when the run failed)


def run_sysbench(argv: list[str], *, on_interval: Callable[[Interval], None] | None = None,
                 stall_s: float = 10.0, source: str = "sysbench") -> LoadResult:
    """Run sysbench, parse each line as it arrives, and kill it when it stalls: no per-second line for
    ``stall_s`` seconds, or ``stall_s`` seconds in a row with no transaction (a hung cluster)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    parser = LineParser(source)
    lines: list[str] = []
    state = {"last_line": time.monotonic(), "zero_since": None, "hung": None}
    lock = threading.Lock()

    def watchdog():
        while proc.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            with lock:
                silent = now - state["last_line"] > stall_s and parser.section == "intervals"
                stuck = state["zero_since"] is not None and now - state["zero_since"] > stall_s
                if (silent or stuck) and state["hung"] is None:
                    state["hung"] = (f"no per-second output for {stall_s:g} s" if silent
                                     else f"no transaction completed for {stall_s:g} s")
                    proc.kill()

    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    parse_error = None
    for line in proc.stdout:
        lines.append(line)
        with lock:
            state["last_line"] = time.monotonic()
        if parse_error:
            continue
        try:
            iv = parser.feed(line)
        except SysbenchParseError as exc:
            parse_error = exc
            continue
        if iv is not None:
            with lock:
                if iv.tps == 0 and iv.err_per_s == 0:
                    state["zero_since"] = state["zero_since"] or time.monotonic() - 1
                else:
                    state["zero_since"] = None
            if on_interval:
                on_interval(iv)
    rc = proc.wait()
    dog.join(timeout=1)
    output = "".join(lines)
    result = None if parse_error else parser.finish(ended_with_newline=output.endswith("\n") or not output)
    if state["hung"]:
        return LoadResult("hung", state["hung"], output, rc, result)
    if parse_error:
        return LoadResult("failed", str(parse_error), output, rc, None)
    if rc != 0:
        fatal = "; ".join(result.fatal) or f"sysbench exited with {rc}"
        return LoadResult("failed", fatal, output, rc, result)
    return LoadResult("ok", None, output, rc, result)


SERVER_VARIABLES = ["version", "sync_binlog", "innodb_flush_log_at_trx_commit", "innodb_buffer_pool_size",
                    "log_bin", "binlog_format", "slave_parallel_threads", "slave_parallel_mode",
                    "rpl_semi_sync_master_enabled", "rpl_semi_sync_master_wait_point", "wsrep_on",
                    "wsrep_provider_options", "wsrep_slave_threads", "performance_schema"]


def execute_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *, catch_up_timeout: float = 120,
                stall_s: float = 10.0, on_interval: Callable[[Interval], None] | None = None) -> Path:
    """One measured run of ``opts`` on ``cluster``, written through ``writer``; returns the run folder."""
    nodes = [n.name for n in lab.layout.cluster_nodes(cluster)]
    write_node = nodes[0]
    prepare_dataset(lab, write_node, opts)
    variables = {}
    for n in nodes:
        with lab.connect(n) as conn:
            variables[n] = sql.global_variables(conn, SERVER_VARIABLES)
    sampling = for_lab(lab, [cluster])
    sampling.start()
    load_t0 = sampling.sampler.now()
    try:
        argv = ["sysbench", f"--config-file={config_file(lab, write_node)}", opts.workload, *opts.run_args(), "run"]
        load = run_sysbench(argv, on_interval=on_interval, stall_s=stall_s, source=f"{writer.run_id}/raw/sysbench.txt")
        load_end = sampling.sampler.now()
        catch_up = sampling.wait_caught_up(catch_up_timeout) if load.status == "ok" else None
    finally:
        sampling.stop()
    writer.raw("sysbench.txt", load.output)
    result = load.result  # parsed live as the lines arrived; partial frames are kept for failed runs
    if result is not None:
        writer.frame("intervals", result.intervals)
        writer.frame("histogram", result.histogram)
    lag = sampling.lag_frame()
    if not lag.empty:
        writer.frame("lag", lag)
    writer.frame("cluster", sampling.cluster_frame())
    extra: dict[str, Any] = {
        "sysbench": asdict(opts),
        "lab": {"name": lab.name, "cluster": cluster, "topology": lab.spec.clusters[cluster].topology,
                "nodes": nodes, "settings": lab.settings(cluster)},
        "server_variables": variables,
        "load_window_s": [load_t0, load_end],
        "catch_up_s": catch_up,
        "sampler": {"errors": [f"{n}: {e}" for n, _, e in sampling.sampler.errors],
                    "skipped_ticks": sampling.sampler.skipped, "warnings": sampling.warnings},
    }
    if result is not None and result.summary:
        extra["summary"] = result.summary
    if load.status != "ok":
        return writer.fail(f"{load.status.upper()}: {load.reason}", **extra)
    if catch_up is None:
        return writer.fail(f"replicas did not catch up within {catch_up_timeout:g} s after the load", **extra)
    return writer.finish(**extra)
