"""What every run does first and last on its cluster, whatever it measures.

First (``RunSetup.begin``): the nodes it runs on and its system, the check that they are up and serve, the dataset
(prepared once per shape), the servers' recorded variables and the lab facts of its manifest. Last
(``RunSetup.audit``): the consistency audit, does every node hold the same data as the write node? Once the run's
catch-up is done, the write node's position is read, every other node is waited for until it has applied it (the wait
is recorded: a node that does not get there is named), then every node's position is compared with the write node's
(its system's ``positions``: GTID sets, MariaDB GTID positions, Galera seqnos) and the run's tables are checksummed on
every node (``CHECKSUM TABLE``: the run's dataset and the heartbeat table; comparable between nodes of one server
version). A node found past the write node (a group's secondary may apply a transaction before its primary's own commit
returns) is looked at again once the write node has had up to 5 s to reach it: only a node holding what the write
node never reaches is said to hold transactions it lacks. A difference names the node and the table; the audit's
cost is recorded. A throughput run
(``benchlib.campaign.run``) and a fault run (``benchlib.axes.fault.run``) both begin and end here."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib.systems import base as systems
from benchlib.manifest import ClusterFacts, LabFacts
from benchlib.campaign.sampling import Target
from benchlib.store import RunWriter
from benchlib.sysbench.options import RunError, SysbenchOptions
from benchlib.systems import semisync, sql
from pydantic import JsonValue

if TYPE_CHECKING:
    from benchlib.lab.base import Lab, NodeInfo

__all__ = ["Audit", "RunSetup", "dataset_bytes", "dataset_tables", "nodes_down", "prepare_dataset", "wait_serving"]

HEARTBEAT = "benchlib.heartbeat"


def prepare_dataset(lab: "Lab", writer: str, opts: SysbenchOptions) -> bool:
    """Prepare the dataset ``opts`` needs unless this lab already has it; True when it prepared. sysbench's oltp
    tables are checked to hold the row ids 1..table_size their tests draw from (RunError naming the node if not)."""
    key = opts.dataset_key
    family = key.split(":")[0]
    # the oltp tables' marker names how they were made: ids 1..N (a lab an earlier benchlib prepared on a Galera
    # cluster or a multi-primary group has them spaced out, and is prepared again)
    marker = f"{key}/ids" if family == "oltp" else key
    with lab.connect(writer) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib", "CREATE DATABASE IF NOT EXISTS sbtest",
                    "CREATE TABLE IF NOT EXISTS benchlib.datasets (name VARCHAR(64) PRIMARY KEY, prepared_at DOUBLE)")
        if sql.query(conn, "SELECT 1 FROM benchlib.datasets WHERE name = %s", (marker,)):
            return False
        if family in ("oltp", "tpcc"):  # another size may be there: start clean
            for table in dataset_tables(opts)[:-1]:
                sql.execute(conn, f"DROP TABLE IF EXISTS {table}")
    lab.hooks.load_driver().prepare(writer, opts)
    with lab.connect(writer) as conn:
        if family == "oltp":
            _check_ids(conn, writer, opts)
        with conn.cursor() as cur:
            cur.execute("DELETE FROM benchlib.datasets WHERE name LIKE %s", (family + ":%",))
            cur.execute("INSERT INTO benchlib.datasets VALUES (%s, %s)", (marker, time.time()))
    return True


def _check_ids(conn, writer: str, opts: SysbenchOptions) -> None:
    """Each oltp table holds the ids 1..table_size (its tests draw from them): its greatest id is table_size."""
    for table in dataset_tables(opts)[:-1]:
        top = sql.scalar(conn, f"SELECT MAX(id) FROM {table}")
        if top is not None and int(top) != opts.table_size:
            step = sql.query(conn, "SELECT @@auto_increment_increment AS i, @@auto_increment_offset AS o")[0]
            raise RunError(f"{table} on {writer} was prepared with ids up to {top} for {opts.table_size} rows: its "
                           f"tests draw ids from 1..{opts.table_size}, most of which it lacks",
                           hint=f"the server spaces new ids out (auto_increment_increment = {step['i']}, offset "
                                f"{step['o']}) and the prepare did not set them to 1: prepare with benchlib's "
                                "oltp_tables.lua (benchlib.workloads)")


def wait_serving(lab: "Lab", nodes: list[str], timeout: float = 30.0) -> str | None:
    """Wait until every node of ``nodes`` answers a query; a reason naming the first node that still refuses after
    ``timeout`` seconds (a Galera node outside the primary component says "WSREP has not yet prepared node for
    application use" until its cluster re-forms), None when all answer."""
    import pymysql

    deadline = time.monotonic() + timeout
    for n in nodes:
        while True:
            try:
                with lab.connect(n) as conn:  # DO: a statement, not a table-less SELECT, which Galera lets through
                    sql.execute(conn, "DO 1")
                break
            except (pymysql.MySQLError, OSError) as exc:
                if time.monotonic() > deadline:
                    words = exc.args[1] if isinstance(exc, pymysql.MySQLError) and len(exc.args) > 1 else str(exc)
                    code = f" (error {exc.args[0]})" if isinstance(exc, pymysql.MySQLError) and exc.args else ""
                    return f"{n} refused queries for {timeout:g} s before the load: {words}{code}"
                time.sleep(0.5)
    return None


def nodes_down(lab: "Lab", nodes: list[str]) -> str | None:
    """A reason naming the nodes of ``nodes`` that are not running (None: all up)."""
    down = [n for n in nodes if not lab.health.is_up(n)]
    return f"{', '.join(down)} went down during the run" if down else None


@dataclass
class Audit:
    nodes: list[str]
    tables: list[str]
    wait_s: float = 0.0  # until every node had applied the write node's position
    check_s: float = 0.0  # positions read and tables checksummed on every node
    positions: dict[str, str] = field(default_factory=dict)
    checksums: dict[str, dict[str, int | None]] = field(default_factory=dict)  # node -> table -> CHECKSUM TABLE
    mismatches: list[str] = field(default_factory=list)  # each names the node, and the table or the position
    skipped: str = ""  # why nothing was compared (a system with one storage, no position to compare)

    @property
    def identical(self) -> bool:
        return not self.mismatches and not self.skipped

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def dataset_tables(opts: SysbenchOptions) -> list[str]:
    """The tables a run's load writes or reads, plus the heartbeat table."""
    if opts.spec.dataset == "tpcc":
        from benchlib.workloads.tpcc import TABLES

        return [f"sbtest.{t}" for t in TABLES] + [HEARTBEAT]
    stem = "benchlib_wide" if opts.spec.dataset == "wide" else "sbtest"
    return [f"sbtest.{stem}{i}" for i in range(1, opts.tables + 1)] + [HEARTBEAT]


def dataset_bytes(lab: "Lab", node: str, opts: SysbenchOptions) -> int | None:
    """What the run's dataset takes on ``node`` (data and indexes, InnoDB's statistics); None when not known."""
    names = [t.split(".", 1)[1] for t in dataset_tables(opts)[:-1]]
    with lab.connect(node) as conn:
        try:
            sql.execute(conn, "SET SESSION information_schema_stats_expiry = 0")  # MySQL caches the sizes a day
        except Exception:
            pass  # MariaDB has no such cache
        marks = ", ".join(["%s"] * len(names))
        got = sql.query(conn, f"SELECT SUM(data_length + index_length) AS n FROM information_schema.tables "
                              f"WHERE table_schema = 'sbtest' AND table_name IN ({marks})", names)
    return int(got[0]["n"]) if got and got[0]["n"] is not None else None


def _checksums(conn, tables: list[str]) -> dict[str, int | None]:
    rows = sql.query(conn, f"CHECKSUM TABLE {', '.join(tables)}")
    return {r["Table"]: (int(r["Checksum"]) if r["Checksum"] is not None else None) for r in rows}


@dataclass
class RunSetup:
    """One run's lab side, checked and recorded: its nodes (the write node first), the cluster's facts, and what the
    manifest says of them (``extra``: the context given, the load's options, the lab record, the servers' variables
    once ``record_servers`` has run)."""

    lab: "Lab"
    cluster: str
    infos: list["NodeInfo"]
    facts: ClusterFacts
    system: systems.System
    opts: SysbenchOptions
    writer: RunWriter
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> list[str]:
        return [n.name for n in self.infos]

    @property
    def write_node(self) -> str:
        return self.infos[0].name

    @property
    def target(self) -> Target:
        """What the run's sampling watches: this cluster, its nodes and its system."""
        return Target(self.cluster, self.nodes, self.system)

    def semisync_back_on(self, timeout: float = 30.0) -> str | None:
        """A semi-sync primary that fell back to async before the load (a large transaction of the setup waited past
        its timeout for an acknowledgement) switches back on once a replica has caught up: wait until it has; a
        reason when it has not after ``timeout`` seconds (the run would measure async). None for other systems."""
        deadline = time.monotonic() + timeout
        with self.lab.connect(self.write_node) as conn:
            while semisync.fallen_back(conn):
                if time.monotonic() > deadline:
                    return (f"{self.write_node}'s semi-sync fell back to async before the load and was not back on "
                            f"{timeout:g} s later")
                time.sleep(0.05)
        return None

    def lab_record(self, settings: dict[str, Any] | None = None) -> dict[str, Any]:
        return LabFacts(name=self.lab.name, kind=self.lab.spec.kind, cluster=self.cluster, topology=self.facts.topology,
                        system=self.facts.system, nodes=self.nodes, settings=settings or {},
                        facts=self.facts).model_dump(mode="json")

    @classmethod
    def begin(cls, lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *,
              context: dict[str, JsonValue] | None = None, serving_timeout: float = 30.0) -> "RunSetup | Path":
        """The setup of a run on ``cluster``, its dataset prepared; the failed run's folder instead when a node is
        down or does not serve queries within ``serving_timeout`` (the reason names it)."""
        facts = lab.hooks.facts(cluster)
        setup = cls(lab, cluster, lab.cluster_nodes(cluster), facts, systems.get(str(facts.system)), opts, writer)
        refused = nodes_down(lab, setup.nodes) or wait_serving(lab, setup.nodes, timeout=serving_timeout)
        if refused:
            return writer.fail(f"FAILED: {refused}", lab=setup.lab_record())
        prepare_dataset(lab, setup.write_node, opts)
        load = {**asdict(opts), "keys": opts.keys.name}  # the key distribution in effect, chosen or sysbench's default
        if opts.spec.dataset == "oltp":  # the ids its tests draw from are all there (prepare_dataset saw to it)
            load["row_ids"] = f"1..{opts.table_size}"
        if opts.data_vs_buffer_pool is not None:  # sized against the buffer pool: what it came to, measured
            load["data_bytes"] = dataset_bytes(lab, setup.write_node, opts)
        setup.extra = {**(context or {}), "sysbench": load, "lab": setup.lab_record(lab.tuning.settings(cluster))}
        return setup

    def record_servers(self) -> None:
        """Every node's recorded server variables into the manifest, and the write node's version into the facts."""
        variables = {}
        recorded = self.system.server_variables
        for n in self.nodes:
            with self.lab.connect(n) as conn:
                variables[n] = sql.global_variables(conn, recorded)
        self.extra["server_variables"] = variables
        self.facts = self.facts.model_copy(update={"version": variables.get(self.write_node, {}).get("version")})
        self.extra["lab"] = self.lab_record(self.lab.tuning.settings(self.cluster))

    def audit(self, tables: list[str], timeout: float = 30.0) -> Audit:
        """Compare every node of the run (the write node first) with the write node: see the module docstring."""
        lab, nodes = self.lab, self.nodes
        result = Audit(list(nodes), list(tables))
        pos = self.system.positions
        if pos is None or len(nodes) < 2:
            result.skipped = "one node, or one shared storage: nothing to compare" if len(nodes) < 2 else \
                f"{self.system.name} shares one storage between its nodes: nothing to compare"
            return result
        first, others = nodes[0], nodes[1:]
        deadline = time.monotonic() + timeout
        behind = self._compare(result, pos, deadline)
        ahead = [n for n in others if n not in behind and result.positions[n] != result.positions[first]]
        lacking = []
        if ahead:  # a node past the write node: a write in flight when its position was read (a group's secondary
            # may apply a transaction before its primary's own commit returns), or a node holding what it lacks
            with lab.connect(first) as conn:
                lacking = [n for n in ahead if not pos.wait(conn, result.positions[n],
                                                            max(0.1, min(5.0, deadline - time.monotonic())))]
            result.positions.clear()
            result.checksums.clear()
            behind = self._compare(result, pos, deadline)  # once more, from the write node's position now
        result.mismatches += [f"{n} did not reach {first}'s {pos.what} {result.positions[first]} within {timeout:g} s"
                              for n in behind]
        mine = result.checksums[first]
        for node in others:
            if node not in behind and result.positions[node] != result.positions[first]:
                extra = f": {node} holds transactions {first} lacks (it did not reach them)" if node in lacking else ""
                result.mismatches.append(f"{node}'s {pos.what} {result.positions[node] or '(none)'} differs from "
                                         f"{first}'s {result.positions[first]}{extra}")
            for table in tables:
                theirs = result.checksums[node].get(table)
                if theirs != mine.get(table):
                    result.mismatches.append(f"{node} differs from {first} in {table} (CHECKSUM TABLE {theirs} "
                                             f"against {mine.get(table)})")
        return result

    def _compare(self, result: Audit, pos: Any, deadline: float) -> list[str]:
        """One pass of the audit: the write node's position read, every other node waited for until it has applied
        it, then each node's position and checksums read into ``result``; returns the nodes that did not get there."""
        behind = []
        first = self.nodes[0]
        target = ""
        for node in self.nodes:  # one connection a node, the write node first (nothing writes now: the run is over)
            with self.lab.connect(node) as conn:
                t0 = time.monotonic()
                if node == first:
                    target = pos.read(conn, True)
                elif not _wait(pos, conn, target, deadline):
                    behind.append(node)
                t1 = time.monotonic()
                result.positions[node] = target if node == first else pos.read(conn, False)
                result.checksums[node] = _checksums(conn, result.tables)
                result.wait_s += t1 - t0
                result.check_s += time.monotonic() - t1
        return behind


#: a server-side wait is asked for at most this long at a time: a connection gives up reading after 60 s, and the
#: audit after a heal may wait up to two minutes for a node
WAIT_STEP_S = 45.0


def _wait(pos: Any, conn: Any, target: str, deadline: float) -> bool:
    """Whether the node of ``conn`` applied ``target`` before ``deadline`` (time.monotonic), asked in steps."""
    while True:
        left = deadline - time.monotonic()
        if pos.wait(conn, target, max(0.1, min(left, WAIT_STEP_S))):
            return True
        if deadline - time.monotonic() <= 0:
            return False
