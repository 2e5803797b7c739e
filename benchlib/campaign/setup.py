"""What every run does first, whatever it measures: the nodes it runs on, the check that they are up and serve, the
dataset (prepared once per shape), the servers' recorded variables and the lab facts of its manifest. A throughput run
(``benchlib.campaign.run``) and a fault run (``benchlib.axes.fault.run``) both start with ``RunSetup.begin``."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlib import systems
from benchlib.manifest import ClusterFacts, LabFacts
from benchlib.store import RunWriter
from benchlib.sysbench.options import SysbenchOptions
from benchlib.systems import sql

if TYPE_CHECKING:
    from benchlib.lab.base import Lab, NodeInfo

__all__ = ["RunSetup", "nodes_down", "prepare_dataset", "wait_serving"]


def prepare_dataset(lab: "Lab", writer: str, opts: SysbenchOptions) -> bool:
    """Prepare the dataset ``opts`` needs unless this lab already has it; True when it prepared."""
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
    lab.load_driver().prepare(writer, opts)
    with lab.connect(writer) as conn:
        with conn.cursor() as cur:
            cur.execute("DELETE FROM benchlib.datasets WHERE name LIKE %s", (family + ":%",))
            cur.execute("INSERT INTO benchlib.datasets VALUES (%s, %s)", (key, time.time()))
    return True


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
    down = [n for n in nodes if not lab.is_up(n)]
    return f"{', '.join(down)} went down during the run" if down else None


@dataclass
class RunSetup:
    """One run's lab side, checked and recorded: its nodes (the write node first), the cluster's facts, and what the
    manifest says of them (``extra``: the context given, the load's options, the lab record, the servers' variables
    once ``record_servers`` has run)."""

    lab: "Lab"
    cluster: str
    infos: list["NodeInfo"]
    facts: ClusterFacts
    opts: SysbenchOptions
    writer: RunWriter
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> list[str]:
        return [n.name for n in self.infos]

    @property
    def write_node(self) -> str:
        return self.infos[0].name

    def lab_record(self, settings: dict[str, Any] | None = None) -> dict[str, Any]:
        return LabFacts(name=self.lab.name, kind=self.lab.kind, cluster=self.cluster, topology=self.facts.topology,
                        system=self.facts.system, nodes=self.nodes, settings=settings or {},
                        facts=self.facts).model_dump(mode="json")

    @classmethod
    def begin(cls, lab: "Lab", cluster: str, opts: SysbenchOptions, writer: RunWriter, *,
              context: dict[str, Any] | None = None, serving_timeout: float = 30.0) -> "RunSetup | Path":
        """The setup of a run on ``cluster``, its dataset prepared; the failed run's folder instead when a node is
        down or does not serve queries within ``serving_timeout`` (the reason names it)."""
        setup = cls(lab, cluster, lab.cluster_nodes(cluster), lab.facts(cluster), opts, writer)
        refused = nodes_down(lab, setup.nodes) or wait_serving(lab, setup.nodes, timeout=serving_timeout)
        if refused:
            return writer.fail(f"FAILED: {refused}", lab=setup.lab_record())
        prepare_dataset(lab, setup.write_node, opts)
        setup.extra = {**(context or {}), "sysbench": asdict(opts), "lab": setup.lab_record(lab.settings(cluster))}
        return setup

    def record_servers(self) -> None:
        """Every node's recorded server variables into the manifest, and the write node's version into the facts."""
        variables = {}
        recorded = systems.get(self.facts.system).server_variables
        for n in self.nodes:
            with self.lab.connect(n) as conn:
                variables[n] = sql.global_variables(conn, recorded)
        self.extra["server_variables"] = variables
        self.facts = self.facts.model_copy(update={"version": variables.get(self.write_node, {}).get("version")})
        self.extra["lab"] = self.lab_record(self.lab.settings(self.cluster))
