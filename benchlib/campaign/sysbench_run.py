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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from benchlib.errors import BenchlibError
from benchlib.lab import sql
from benchlib.sampling.lab import for_lab
from benchlib.store import RunWriter
from benchlib.sysbench.output import Interval, LineParser, SysbenchParseError, SysbenchResult

if TYPE_CHECKING:
    from benchlib.lab.lab import Lab

WORKLOAD_DIR = Path(__file__).resolve().parents[1] / "workloads"


@dataclass(frozen=True)
class Workload:
    """A sysbench test: bundled with sysbench (``script`` is its name) or with benchlib (a Lua file)."""

    name: str
    script: str
    dataset: str  # "oltp": sbtest1..N with table_size rows; "wide": benchlib_wide1..N, created empty
    args: tuple[str, ...] = ()
    rows_per_trx: bool = False  # takes --rows-per-trx


def _sysbench_own(name: str) -> Workload:
    return Workload(name, name, "oltp")


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    *(_sysbench_own(n) for n in ("oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index",
                                 "oltp_insert", "oltp_point_select", "oltp_read_only", "oltp_delete")),
    # flow-control studies: one row per transaction, and N single-row INSERTs in one transaction (default 50)
    Workload("insert_single", str(WORKLOAD_DIR / "insert_rows.lua"), "wide"),
    Workload("insert_batch", str(WORKLOAD_DIR / "insert_rows.lua"), "wide", rows_per_trx=True),
]}


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
    rows_per_trx: int = 50  # insert_batch only
    extra: tuple[str, ...] = ()

    def __post_init__(self):
        if self.workload not in WORKLOADS:
            raise RunError(f"unknown workload {self.workload!r}", hint=f"workloads: {', '.join(sorted(WORKLOADS))}")
        for name in ("tables", "table_size", "threads", "time_s", "rows_per_trx"):
            if getattr(self, name) < 1:
                raise RunError(f"{name} must be at least 1 (got {getattr(self, name)})")

    @property
    def spec(self) -> Workload:
        return WORKLOADS[self.workload]

    @property
    def dataset_key(self) -> str:
        """Runs with equal keys share a prepared dataset."""
        if self.spec.dataset == "wide":
            return f"wide:{self.tables}"
        return f"oltp:{self.tables}x{self.table_size}"

    def dataset_args(self) -> list[str]:
        if self.spec.dataset == "wide":
            return [f"--tables={self.tables}"]
        return [f"--tables={self.tables}", f"--table-size={self.table_size}"]

    def argv(self, config: Path, command: str, *args: str) -> list[str]:
        return ["sysbench", f"--config-file={config}", self.spec.script, *args, command]

    def run_args(self) -> list[str]:
        args = [*self.dataset_args(), f"--threads={self.threads}", f"--time={self.time_s}", "--report-interval=1",
                f"--percentile={self.percentile}", *self.spec.args]
        if self.spec.rows_per_trx:
            args.append(f"--rows-per-trx={self.rows_per_trx}")
        elif self.workload == "insert_single":
            args.append("--rows-per-trx=1")
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
    """Prepare the dataset ``opts`` needs unless this lab build already has it; True when it prepared."""
    key = opts.dataset_key
    family = key.split(":")[0]
    with lab.connect(writer) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib", "CREATE DATABASE IF NOT EXISTS sbtest",
                    "CREATE TABLE IF NOT EXISTS benchlib.datasets (name VARCHAR(64) PRIMARY KEY, prepared_at DOUBLE)")
        if sql.query(conn, "SELECT 1 FROM benchlib.datasets WHERE name = %s", (key,)):
            return False
        if family == "oltp":  # another size may be there: start clean
            for i in range(1, opts.tables + 1):
                sql.execute(conn, f"DROP TABLE IF EXISTS sbtest.sbtest{i}")
    if getattr(lab, "remote", False):
        from benchlib.remote.load import prepare_remote

        prepare_remote(lab, writer, opts)
    else:
        argv = opts.argv(config_file(lab, writer), "prepare", *opts.dataset_args(), f"--threads={min(opts.tables, 4)}")
        res = subprocess.run(argv, capture_output=True, text=True)
        if res.returncode != 0:
            raise RunError(f"sysbench prepare of {key} failed on {writer} (exit {res.returncode})",
                           detail="\n".join("    " + line for line in (res.stdout + res.stderr).splitlines()[-8:]))
    with lab.connect(writer) as conn:
        with conn.cursor() as cur:
            cur.execute("DELETE FROM benchlib.datasets WHERE name LIKE %s", (family + ":%",))
            cur.execute("INSERT INTO benchlib.datasets VALUES (%s, %s)", (key, time.time()))
    return True


@dataclass
class LoadResult:
    status: str  # ok | failed | hung
    reason: str | None
    output: str
    returncode: int | None
    result: SysbenchResult | None = None  # what the live parser read (partial when the run failed)
    extra: dict[str, Any] = field(default_factory=dict)  # remote loads: client hosts, their clocks and outputs


def run_sysbench(argv: list[str], *, on_interval: Callable[[Interval], None] | None = None,
                 stall_s: float = 10.0, source: str = "sysbench",
                 abort_if: Callable[[], str | None] | None = None) -> LoadResult:
    """Run sysbench, parse each line as it arrives, and kill it when it stalls: no per-second line for
    ``stall_s`` seconds, or ``stall_s`` seconds in a row with no transaction (a hung cluster: HUNG),
    or when ``abort_if()`` (checked twice a second) returns a reason, e.g. a node that went down (FAILED).
    An interrupt (Ctrl-C) kills sysbench before it propagates: no load is left running."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    parser = LineParser(source)
    lines: list[str] = []
    state: dict[str, Any] = {"last_line": time.monotonic(), "zero_since": None, "hung": None, "aborted": None}
    lock = threading.Lock()

    def watchdog():
        next_check = time.monotonic()
        while proc.poll() is None:
            time.sleep(0.1)
            now = time.monotonic()
            reason = None
            if abort_if is not None and now >= next_check:
                next_check = now + 0.5
                reason = abort_if()
            with lock:
                silent = now - state["last_line"] > stall_s and parser.section == "intervals"
                stuck = state["zero_since"] is not None and now - state["zero_since"] > stall_s
                if state["hung"] or state["aborted"]:
                    continue
                if reason:
                    state["aborted"] = reason
                    proc.kill()
                elif silent or stuck:
                    state["hung"] = (f"no per-second output for {stall_s:g} s" if silent
                                     else f"no transaction completed for {stall_s:g} s")
                    proc.kill()

    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    parse_error = None
    try:
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
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stdout.close()
    rc = proc.wait()
    dog.join(timeout=1)
    output = "".join(lines)
    result = None if parse_error else parser.finish(ended_with_newline=output.endswith("\n") or not output)
    if state["hung"]:
        return LoadResult("hung", state["hung"], output, rc, result)
    if state["aborted"]:
        return LoadResult("failed", state["aborted"], output, rc, result)
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


def load(lab: "Lab", writer: str, opts: SysbenchOptions, **kwargs: Any) -> LoadResult:
    """sysbench ``opts`` against ``writer``: here (a local lab), or from the client hosts of a remote lab."""
    if getattr(lab, "remote", False):
        from benchlib.remote.load import run_remote

        return run_remote(lab, writer, opts, **kwargs)
    return run_sysbench(opts.argv(config_file(lab, writer), "run", *opts.run_args()), **kwargs)


def nodes_down(lab: "Lab", nodes: list[str]) -> str | None:
    """A reason naming the nodes of ``nodes`` that are not running (None: all up)."""
    down = [n for n in nodes if not lab.is_up(lab.node(n))]
    return f"{', '.join(down)} went down during the run" if down else None


def execute_run(lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *, catch_up_timeout: float = 120,
                sync_timeout: float = 120, warmup_s: int = 0, stall_s: float = 10.0,
                on_interval: Callable[[Interval], None] | None = None,
                on_second: Callable[[Interval, float | None], None] | None = None,
                context: dict[str, Any] | None = None) -> Path:
    """One measured run of ``opts`` on ``cluster``, written through ``writer``; returns the run folder.

    Before the measured window: the dataset (once per shape), an optional warm-up of ``warmup_s``
    seconds (its output kept as raw/warmup.txt, not measured), then sampling starts and the load
    waits until every node has seen a heartbeat (in sync; the wait is recorded). During the load a
    node going down kills the run (FAILED, the reason names the node). ``on_second(interval, lag_ms)``
    gets each per-second line with the cluster's current replica lag, for progress displays.
    ``context`` (campaign, host facts, revision) is recorded in the manifest as given.
    """
    nodes = [n.name for n in lab.layout.cluster_nodes(cluster)]
    write_node = nodes[0]
    prepare_dataset(lab, write_node, opts)
    extra: dict[str, Any] = {
        **(context or {}),
        "sysbench": asdict(opts),
        "lab": {"name": lab.name, "cluster": cluster, "topology": lab.spec.clusters[cluster].topology,
                "nodes": nodes, "settings": lab.settings(cluster)},
        "warmup_s": warmup_s,
    }
    if warmup_s > 0:
        warm = load(lab, write_node, replace(opts, time_s=warmup_s, histogram=False), stall_s=stall_s,
                    source=f"{writer.run_id}/raw/warmup.txt", abort_if=lambda: nodes_down(lab, nodes))
        writer.raw("warmup.txt", warm.output)
        if warm.status != "ok":
            return writer.fail(f"{warm.status.upper()} during warm-up: {warm.reason}", **extra)
    variables = {}
    for n in nodes:
        with lab.connect(n) as conn:
            variables[n] = sql.global_variables(conn, SERVER_VARIABLES)
    extra["server_variables"] = variables
    sampling = for_lab(lab, [cluster])
    sampling.start()

    def each_second(iv: Interval) -> None:
        if on_interval:
            on_interval(iv)
        if on_second:
            on_second(iv, sampling.current_lag_ms())

    try:
        in_sync = sampling.wait_caught_up(sync_timeout)
        load_t0 = sampling.sampler.now()
        if in_sync is None:
            loaded = LoadResult("failed", f"nodes not in sync {sync_timeout:g} s before the load", "", None)
        else:
            loaded = load(lab, write_node, opts, on_interval=each_second, stall_s=stall_s,
                          source=f"{writer.run_id}/raw/sysbench.txt", abort_if=lambda: nodes_down(lab, nodes))
        load_end = sampling.sampler.now()
        bounds = sampling.wait_catch_up(sampling.sampler.t0 + load_end, catch_up_timeout) if loaded.status == "ok" else None
        catch_up = bounds[1] if bounds else None
    finally:
        sampling.stop()
    writer.raw("sysbench.txt", loaded.output)
    for host, text in loaded.extra.get("outputs", {}).items():
        writer.raw(f"sysbench-{host}.txt", text)
    result = loaded.result  # parsed live as the lines arrived; partial frames are kept for failed runs
    if result is not None:
        writer.frame("intervals", result.intervals)
        writer.frame("histogram", result.histogram)
    lag = sampling.lag_frame()
    if not lag.empty:
        writer.frame("lag", lag)
    writer.frame("cluster", sampling.cluster_frame())
    extra.update({
        "in_sync_wait_s": in_sync,
        "load_window_s": [load_t0, load_end],
        "catch_up_s": catch_up,  # upper bound: every node saw the first heartbeat after the load
        "catch_up_low_s": bounds[0] if bounds else None,  # lower bound (the last heartbeat before the end)
        "sampler": {"errors": [f"{n}: {e}" for n, _, e in sampling.sampler.errors],
                    "skipped_ticks": sampling.sampler.skipped, "warnings": sampling.warnings},
    })
    if result is not None and result.summary:
        extra["summary"] = result.summary
    if loaded.extra.get("client_hosts"):
        extra["client_hosts"] = loaded.extra["client_hosts"]
    if sampling.offsets():
        extra["clock_offsets"] = sampling.offsets()
    if loaded.status != "ok":
        return writer.fail(f"{loaded.status.upper()}: {loaded.reason}", **extra)
    if catch_up is None:
        return writer.fail(f"replicas did not catch up within {catch_up_timeout:g} s after the load", **extra)
    return writer.finish(**extra)
