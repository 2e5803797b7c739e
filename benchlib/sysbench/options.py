"""What sysbench is asked to run: the workloads, the options of one run, and the connection config.

A workload is sysbench's own test (``oltp_read_write`` ...) or a Lua file bundled with
benchlib (``insert_single``/``insert_batch`` write into a wide table; ``replica_reads`` is
``oltp_read_only`` whose sessions first run ``session_sql``: the read side of a read-split load). ``SysbenchOptions``
is one run's options; ``argv``/``run_args`` turn them into sysbench's command line. The
password never appears there: sysbench reads its connection options from its standard
input (``--config-file=/dev/stdin``, see ``connection_config``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchlib.errors import BenchlibError, SpecError
from benchlib.plugin import Registry
from benchlib.sysbench.keys import DEFAULT, KeyDistribution

__all__ = ["OLTP_ROW_BYTES", "READ_SPLIT", "TPCC_WAREHOUSE_BYTES", "WORKLOADS", "RunError", "SysbenchOptions",
           "Workload", "connection_config", "sized"]

WORKLOAD_DIR = Path(__file__).resolve().parents[1] / "workloads"


@dataclass(frozen=True)
class Workload:
    """A sysbench test: bundled with sysbench (``script`` is its name) or with benchlib (a Lua file)."""

    name: str
    script: str
    dataset: str  # "oltp": sbtest1..N with table_size rows; "wide": benchlib_wide1..N, created empty; "tpcc": the
    # TPC-C-like schema's nine tables, W warehouses (benchlib.workloads.tpcc)
    args: tuple[str, ...] = ()
    rows_per_trx: bool = False  # takes --rows-per-trx


#: every workload a campaign may name, by name: benchlib's own (``benchlib.workloads.builtin``) and a user's, each
#: declared as an entry point of the group ``benchlib.workloads`` (a ``Workload``: its name, its Lua script, its
#: dataset), loaded when first read
WORKLOADS: Registry[Workload] = Registry("workload", group="benchlib.workloads", error=SpecError,
                                        hint=lambda names: f"workloads: {', '.join(sorted(names))}")
#: the read side of a read-split load (``[load] read_threads``): oltp_read_only on the other nodes, each session
#: under the run's read consistency; not a campaign workload of its own
READ_SPLIT = Workload("replica_reads", str(WORKLOAD_DIR / "replica_reads.lua"), "oltp")


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
    session_sql: tuple[str, ...] = ()  # replica_reads only: statements each session runs first
    #: the key distribution the campaign chose (``benchlib.sysbench.keys``, canonical name); None: none was chosen,
    #: sysbench's default (special:1:75) without an option passed, as every run before the choice existed
    distribution: str | None = None
    warehouses: int = 1  # the TPC-C-like workloads' scale
    scale: float = 1.0  # the TPC-C-like workloads: the share of a warehouse's rows (1: the specification's)
    #: the dataset was sized to about this many times the buffer pool (``sized``); None: as the campaign gave it
    data_vs_buffer_pool: float | None = None
    #: writes on several nodes (``benchlib.sysbench.writers``): the threads split over the cluster's first
    #: ``writers`` nodes, the same total; ``disjoint``: each node on its own range of the keys (its own home
    #: warehouses in the TPC-C-like mix)
    writers: int = 1
    disjoint: bool = False
    #: retries of a transaction the server rolled back (a conflict, a deadlock) before the client gives it up, as an
    #: application with a bounded retry loop would; None: for ever (sysbench's own way)
    retry: int | None = None
    #: the load goes through ``benchlib.sysbench.writers`` even on one node: its commits and errors counted by node
    count_writes: bool = False
    #: one node's part of such a load: this node's range of the keys (1..key_parts), and the node's name in the
    #: workload's lines (set: an oltp_* test runs inside ``writers.lua``, which counts them)
    key_part: int = 1
    key_parts: int = 1
    node: str = ""

    def __post_init__(self):
        if self.workload not in WORKLOADS and self.workload != READ_SPLIT.name:
            raise RunError(f"unknown workload {self.workload!r}", hint=f"workloads: {', '.join(sorted(WORKLOADS))}")
        for name in ("tables", "table_size", "threads", "time_s", "rows_per_trx", "warehouses"):
            if getattr(self, name) < 1:
                raise RunError(f"{name} must be at least 1 (got {getattr(self, name)})")

        if self.distribution is not None:
            try:
                KeyDistribution.parse(self.distribution)
            except SpecError as e:
                raise RunError(e.message, hint=e.hint) from None
        if self.session_sql and self.workload != READ_SPLIT.name:
            raise RunError(f"session statements need the {READ_SPLIT.name} workload, not {self.workload!r}")
        if any(";" in s for s in self.session_sql):
            raise RunError("a session statement holds a ';'", hint="give each statement on its own")
        if not 0 < self.scale <= 1:
            raise RunError(f"scale must be in (0, 1] (got {self.scale})")
        if self.retry is not None and self.retry < 0:
            raise RunError(f"retry must be 0 or more (got {self.retry}); leave it out to retry for ever")
        if self.writers > 1 and self.spec.dataset not in ("oltp", "tpcc"):
            raise RunError(f"{self.workload} cannot write on several nodes",
                           hint="the oltp_* and TPC-C-like workloads can")

    @property
    def spec(self) -> Workload:
        return READ_SPLIT if self.workload == READ_SPLIT.name else WORKLOADS[self.workload]

    @property
    def keys(self) -> KeyDistribution:
        """The key distribution the run's rows are drawn from (sysbench's default when none was chosen)."""
        return KeyDistribution.parse(self.distribution) if self.distribution is not None else DEFAULT

    @property
    def dataset_key(self) -> str:
        """Runs with equal keys share a prepared dataset."""
        if self.spec.dataset == "wide":
            return f"wide:{self.tables}"
        if self.spec.dataset == "tpcc":
            return f"tpcc:{self.warehouses}x{self.scale:g}"
        return f"oltp:{self.tables}x{self.table_size}"

    def dataset_args(self) -> list[str]:
        if self.spec.dataset == "wide":
            return [f"--tables={self.tables}"]
        if self.spec.dataset == "tpcc":
            return [f"--warehouses={self.warehouses}", f"--scale={self.scale:g}"]
        return [f"--tables={self.tables}", f"--table-size={self.table_size}"]

    def prepare_args(self) -> list[str]:
        parallel = 4 if self.spec.dataset == "tpcc" else min(self.tables, 4)  # tpcc: 10 + 21 W units of work
        return [*self.dataset_args(), f"--threads={parallel}"]

    @property
    def prepare_script(self) -> str:
        """The script that prepares the dataset: sysbench's own oltp tables for every workload on them (a user's
        workload on the oltp dataset need not prepare it), with row ids 1..table_size on every system
        (``oltp_tables.lua``: a Galera node or a multi-primary group would space them out), the workload's own for
        the others."""
        return str(WORKLOAD_DIR / "oltp_tables.lua") if self.spec.dataset == "oltp" else self.spec.script

    @property
    def counted(self) -> bool:
        """Its errors by number and commits per second are counted: the oltp_* tests run inside ``writers.lua``
        (the TPC-C-like mix counts them itself)."""
        return self.spec.dataset == "oltp" and bool(self.node)

    @property
    def script(self) -> str:
        """The script a run of it gives sysbench (``writers.lua`` around an oltp_* test it counts)."""
        return str(WORKLOAD_DIR / "writers.lua") if self.counted else self.spec.script

    def argv(self, command: str, *args: str, sysbench: str = "sysbench", script: str | None = None) -> list[str]:
        """sysbench's command line; its connection options come on standard input (a counted oltp_* test: the test
        ``writers.lua`` runs, in the environment)."""
        if command == "prepare":
            return [sysbench, "--config-file=/dev/stdin", script or self.prepare_script, *args, command]
        inner = ["env", f"BENCHLIB_INNER={self.spec.script}"] if self.counted else []
        return [*inner, sysbench, "--config-file=/dev/stdin", script or self.script, *args, command]

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
        if self.session_sql:
            args.append("--session-sql=" + ";".join(self.session_sql))
        if self.counted:
            args += [f"--key-part={self.key_part}", f"--key-parts={self.key_parts}", f"--writer={self.node or '-'}",
                     f"--retry={-1 if self.retry is None else self.retry}"]
        elif self.spec.dataset == "tpcc" and self.node:  # a writer node's part: counted by node, on its own
            # warehouses when they are split
            args.append(f"--writer={self.node}")
            if self.key_parts > 1:
                args += [f"--warehouse-part={self.key_part}", f"--warehouse-parts={self.key_parts}"]
        if self.distribution is not None and self.spec.dataset != "tpcc":  # (prepared under the default: shared;
            # the TPC-C-like workloads draw their keys as the specification says, NURand)
            args += self.keys.args()
        return [*args, *self.extra]


#: about what a row of a sysbench oltp table takes in InnoDB (its 188 bytes, the row's overhead, the k index), and what
#: a TPC-C-like warehouse takes at the full scale (its share of the items included): to size a dataset
OLTP_ROW_BYTES = 240
TPCC_WAREHOUSE_BYTES = 85 << 20


def sized(opts: SysbenchOptions, ratio: float, buffer_pool: int) -> SysbenchOptions:
    """``opts`` with its dataset sized to about ``ratio`` times ``buffer_pool`` bytes: its table_size (oltp), or its
    warehouses (TPC-C-like); RunError for a workload whose tables start empty."""
    from dataclasses import replace

    want = ratio * buffer_pool
    if opts.spec.dataset == "tpcc":
        return replace(opts, warehouses=max(1, round(want / (TPCC_WAREHOUSE_BYTES * opts.scale))),
                       data_vs_buffer_pool=ratio)
    if opts.spec.dataset == "oltp":
        return replace(opts, table_size=max(100, round(want / (opts.tables * OLTP_ROW_BYTES))),
                       data_vs_buffer_pool=ratio)
    raise RunError(f"{opts.workload} starts from empty tables: data_vs_buffer_pool cannot size it",
                   hint="size the oltp_* and TPC-C-like workloads only, in a campaign of their own")


def connection_config(host: str, port: int, user: str, password: str, database: str = "sbtest") -> str:
    """sysbench's connection options (password included): passed on standard input, never on disk or argv."""
    return (f"db-driver=mysql\nmysql-host={host}\nmysql-port={port}\nmysql-user={user}\n"
            f"mysql-password={password}\nmysql-db={database}\n")
