"""The TPC-C-like workload's loader against LOAD DATA, and its new orders a minute measured twice.

Part 1, in interleaved rounds on one lab (an async primary and two replicas: both ways replicate alike): the loader
(`sysbench tpcc_like.lua prepare`, 4 threads) builds W warehouses from nothing; then the same rows, exported once to
tab-separated files, go into empty copies of the nine tables with LOAD DATA LOCAL INFILE (4 connections, a file a
statement). Prints each round's rows a second both ways, the medians and their ratio (goal: the loader within 2x of
LOAD DATA, which generates nothing).

Part 2: a W=2 dataset, the TPC-C-like mix at 4 threads for --seconds, twice (two runs through the run engine, with
the tpcc axis): the new orders a minute the server counted in each, and the second's ratio to the first
(repeatability). Figures, not assertions.

    python bench/tpcc_load.py [--rounds 3] [--warehouses 1] [--scale 1.0] [--seconds 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import pymysql  # noqa: E402

from benchlib.axes.tpcc import TpccPlan  # noqa: E402
from benchlib.campaign.run import execute_run  # noqa: E402
from benchlib.campaign.setup import prepare_dataset  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.lab.spec import LabSpec  # noqa: E402
from benchlib.store import RunWriter, read_run  # noqa: E402
from benchlib.sysbench.options import SysbenchOptions  # noqa: E402
from benchlib.systems import sql  # noqa: E402
from benchlib.workloads.tpcc import TABLES  # noqa: E402

SPEC = {"name": "bench-tpcc", "clusters": {"async": {"topology": "async", "replicas": 2}}}


def rows(lab, node: str, schema: str) -> int:
    with lab.connect(node) as conn:
        return sum(int(sql.scalar(conn, f"SELECT COUNT(*) FROM {schema}.{t}")) for t in TABLES)


def loader(lab, opts: SysbenchOptions) -> float:
    """Seconds the loader took to build ``opts``'s dataset from nothing on the write node (the old tables dropped
    first, untimed; like LOAD DATA's, its replication to the replicas goes on after)."""
    with lab.connect("async-1") as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib", "CREATE TABLE IF NOT EXISTS benchlib.datasets "
                          "(name VARCHAR(64) PRIMARY KEY, prepared_at DOUBLE)",
                    "DELETE FROM benchlib.datasets WHERE name LIKE 'tpcc:%'",
                    *(f"DROP TABLE IF EXISTS sbtest.{t}" for t in TABLES))  # (the drop is no part of the load)
    t0 = time.perf_counter()
    prepare_dataset(lab, "async-1", opts)
    took = time.perf_counter() - t0
    return took


def export(lab, folder: Path) -> None:
    """Every row of the nine tables, a tab-separated file a table (NULL as \\N), as LOAD DATA reads them."""
    with lab.connect("async-1") as conn:
        for t in TABLES:
            with conn.cursor(pymysql.cursors.SSCursor) as cur, open(folder / f"{t}.tsv", "w") as out:
                cur.execute(f"SELECT * FROM sbtest.{t}")
                for row in cur:
                    out.write("\t".join("\\N" if v is None else str(v) for v in row) + "\n")


def load_data(lab, folder: Path) -> float:
    """Seconds LOAD DATA LOCAL INFILE took to put the files into empty copies of the tables (4 connections)."""
    with lab.connect("async-1") as conn:
        sql.execute(conn, "DROP DATABASE IF EXISTS tpccld", "CREATE DATABASE tpccld",
                    *(f"CREATE TABLE tpccld.{t} LIKE sbtest.{t}" for t in TABLES))
    node = lab.node("async-1")

    def one(table: str) -> None:
        conn = pymysql.connect(unix_socket=str(node.socket), user="root", password=lab.creds.password("root"),
                               local_infile=True, autocommit=True, ssl_disabled=True, read_timeout=3600)
        try:
            with conn.cursor() as cur:
                cur.execute(f"LOAD DATA LOCAL INFILE '{folder / (table + '.tsv')}' INTO TABLE tpccld.{table}")
        finally:
            conn.close()

    order = sorted(TABLES, key=lambda t: -(folder / f"{t}.tsv").stat().st_size)  # the largest first
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, order))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seconds", type=int, default=30)
    args = ap.parse_args()
    lab = LocalLab.up(LabSpec.model_validate(SPEC))
    work = Path(tempfile.mkdtemp(prefix="bench-tpcc-"))
    try:
        opts = SysbenchOptions(workload="tpcc_like", warehouses=args.warehouses, scale=args.scale, threads=4)
        print(f"part 1: {args.warehouses} warehouse(s) at {args.scale:g} of their rows, {args.rounds} rounds "
              f"(loader, then LOAD DATA, each round)")
        ours, theirs = [], []
        for r in range(1, args.rounds + 1):
            took = loader(lab, opts)
            n = rows(lab, "async-1", "sbtest")
            if r == 1:
                export(lab, work)
            took_ld = load_data(lab, work)
            n_ld = rows(lab, "async-1", "tpccld")
            ours.append(n / took)
            theirs.append(n_ld / took_ld)
            print(f"  round {r}: loader {n:,} rows in {took:.1f} s ({n / took:,.0f} rows/s); LOAD DATA {n_ld:,} "
                  f"rows in {took_ld:.1f} s ({n_ld / took_ld:,.0f} rows/s)")
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"  median: loader {a:,.0f} rows/s, LOAD DATA {b:,.0f} rows/s; LOAD DATA / loader = {b / a:.2f}x "
              f"(goal: at most 2x)")
        with lab.connect("async-1") as conn:
            sql.execute(conn, "DROP DATABASE IF EXISTS tpccld")

        two = SysbenchOptions(workload="tpcc_like", warehouses=2, scale=args.scale, threads=4, time_s=args.seconds)
        prepare_dataset(lab, "async-1", two)
        print(f"part 2: 2 warehouses at {args.scale:g}, tpcc_like at 4 threads for {args.seconds} s, twice")
        nopm = []
        for i in (1, 2):
            secrets = list(lab.creds.passwords.values())
            run = read_run(execute_run(lab, "async", two, RunWriter(work / "runs", f"r{i}", {}, secrets=secrets),
                                       axes={"tpcc": TpccPlan()}))
            rec = run.manifest.axis("tpcc")
            nopm.append(rec["new_orders_server"] / rec["load_s"] * 60)
            print(f"  run {i} ({run.manifest.status}): {rec['new_orders_server']:,} new orders in {rec['load_s']:.1f} s "
                  f"= {nopm[-1]:,.0f} a minute (client: {rec['new_orders_client']:,})")
        print(f"  second / first = {nopm[1] / nopm[0]:.3f}")
    finally:
        lab.close(down=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
