"""The TPC-C-like workloads' records (``tpcc_like.lua``; not an audited TPC-C): the nine tables, the five transaction
types and their shares in each mix, what a run's sysbench output says by type and second (``frames``), latency
percentiles from its histogram (``percentiles``), and the specification's consistency conditions 1-4 (clause 3.3.2)
from one node's per-warehouse and per-district facts (``FACTS_SQL``, ``violations``): each failed condition names the
node, the warehouse, the district and both sides of its equation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchlib.schema import Column, Schema

__all__ = ["FACTS_SQL", "MIXES", "TABLES", "TPCC_ERRORS", "TPCC_LATENCY", "TPCC_ORDERS", "TPCC_TYPES", "TYPES",
           "Records", "frames", "percentiles", "violations"]

TABLES = ("warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock")
TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
#: each mix's expected share of each type
MIXES: dict[str, dict[str, float]] = {
    "tpcc_like": dict(zip(TYPES, (0.45, 0.43, 0.04, 0.04, 0.04))),
    "tpcc_like_23": dict(zip(TYPES, (10 / 23, 10 / 23, 1 / 23, 1 / 23, 1 / 23))),
}
TITLES = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status", "delivery": "Delivery",
          "stock_level": "Stock-Level"}

TPCC_TYPES = Schema("tpcc_types", {
    "t_s": Column("float64", "sampler clock at the start of the second the transactions ended in, s"),
    "type": Column("str", "the transaction type (new_order, payment, order_status, delivery, stock_level)"),
    "committed": Column("int64", "transactions of that type committed in that second, every client thread"),
    "rolled_back": Column("int64", "rolled back on purpose (a New-Order on an unused item, 1%): no error"),
    "errors": Column("int64", "ended in an error (rolled back; the event was drawn again)"),
    "latency_sum_ms": Column("float64", "summed latency of the committed and rolled-back ones, ms"),
})
TPCC_ERRORS = Schema("tpcc_errors", {
    "t_s": Column("float64", "sampler clock at the start of the second, s"),
    "type": Column("str", "the transaction type"),
    "code": Column("int64", "the server's error number (1213 deadlock or certification failure, 1205 lock wait "
                            "timeout, 3101 and 1180 rollbacks at commit, 2013 connection lost ...)"),
    "count": Column("int64", "transactions of that type that ended in that error in that second"),
})
TPCC_LATENCY = Schema("tpcc_latency", {
    "type": Column("str", "the transaction type"),
    "bucket": Column("int64", "floor(20 ln(latency in ms)): buckets 5% wide"),
    "count": Column("int64", "committed and rolled-back transactions in that bucket over the run"),
})
TPCC_ORDERS = Schema("tpcc_orders", {
    "t_s": Column("float64", "sampler clock, s"),
    "node": Column("str", "the write node, read"),
    "next_order_ids": Column("int64", "the sum over its districts of D_NEXT_O_ID: each committed New-Order adds 1"),
})


@dataclass
class Records:
    types: pd.DataFrame
    errors: pd.DataFrame
    latency: pd.DataFrame


def frames(lines: list[str], origin: float) -> Records:
    """The workload's lines (``benchlib-tpcc SECOND TYPE OK ROLLED_BACK LATENCY_SUM [ERRNO:N ...]`` per thread and
    second, ``benchlib-tpcc-hist TYPE BUCKET:N ...`` per thread) summed over the threads; seconds on the sampler's
    clock (CLOCK_MONOTONIC minus ``origin``)."""
    seconds: dict[tuple[float, str], list[float]] = {}
    errors: dict[tuple[float, str, int], int] = {}
    hist: dict[tuple[str, int], int] = {}
    for line in lines:
        parts = line.split()
        if parts[0] == "benchlib-tpcc" and len(parts) >= 6:
            key = (float(parts[1]) - origin, parts[2])
            row = seconds.setdefault(key, [0, 0, 0, 0.0])
            row[0] += int(parts[3])
            row[1] += int(parts[4])
            row[3] += float(parts[5])
            for e in parts[6:]:
                code, n = e.split(":")
                row[2] += int(n)
                errors[(key[0], key[1], int(code))] = errors.get((key[0], key[1], int(code)), 0) + int(n)
        elif parts[0] == "benchlib-tpcc-hist":
            for b in parts[2:]:
                bucket, n = b.split(":")
                hist[(parts[1], int(bucket))] = hist.get((parts[1], int(bucket)), 0) + int(n)
    ks = sorted(seconds)
    types = TPCC_TYPES.frame({"t_s": [k[0] for k in ks], "type": [k[1] for k in ks],
                              "committed": [seconds[k][0] for k in ks], "rolled_back": [seconds[k][1] for k in ks],
                              "errors": [seconds[k][2] for k in ks], "latency_sum_ms": [seconds[k][3] for k in ks]})
    es = sorted(errors)
    errs = TPCC_ERRORS.frame({"t_s": [k[0] for k in es], "type": [k[1] for k in es], "code": [k[2] for k in es],
                              "count": [errors[k] for k in es]})
    hs = sorted(hist)
    lat = TPCC_LATENCY.frame({"type": [k[0] for k in hs], "bucket": [k[1] for k in hs],
                              "count": [hist[k] for k in hs]})
    return Records(types, errs, lat)


def percentiles(latency: pd.DataFrame, qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> pd.DataFrame:
    """Per type, its latency percentiles (ms, each the upper edge of its bucket: at most 5% high) from the run's
    histogram frame (``tpcc_latency``, one run's or several runs' summed)."""
    rows = []
    for kind, g in latency.groupby("type"):
        g = g.groupby("bucket")["count"].sum().sort_index()
        cum = g.cumsum().to_numpy() / g.sum()
        edges = np.exp((g.index.to_numpy() + 1) / 20)
        rows.append({"type": kind, **{f"p{round(q * 100)}_ms": float(edges[np.searchsorted(cum, q)]) for q in qs}})
    return pd.DataFrame(rows)


#: one node's facts for conditions 1-4: per warehouse its W_YTD and the sum of its districts' D_YTD; per district
#: D_NEXT_O_ID, max(O_ID), max and min NO_O_ID and the count of NEW_ORDER rows, Σ O_OL_CNT and the ORDER_LINE rows
FACTS_SQL = (
    "SELECT w.w_id, w.w_ytd, SUM(d.d_ytd) AS d_ytd FROM sbtest.warehouse w JOIN sbtest.district d "
    "ON d.d_w_id = w.w_id GROUP BY w.w_id, w.w_ytd ORDER BY w.w_id",
    "SELECT d.d_w_id, d.d_id, d.d_next_o_id, o.max_o, o.ol_cnt, n.max_no, n.min_no, n.rows_no, l.rows_ol "
    "FROM sbtest.district d "
    "LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS max_o, SUM(o_ol_cnt) AS ol_cnt FROM sbtest.orders "
    "GROUP BY o_w_id, o_d_id) o ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id "
    "LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS max_no, MIN(no_o_id) AS min_no, COUNT(*) AS rows_no "
    "FROM sbtest.new_order GROUP BY no_w_id, no_d_id) n ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id "
    "LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS rows_ol FROM sbtest.order_line GROUP BY ol_w_id, ol_d_id) l "
    "ON l.ol_w_id = d.d_w_id AND l.ol_d_id = d.d_id ORDER BY d.d_w_id, d.d_id",
)


def _n(x) -> float:
    return float(x) if x is not None else math.nan


def violations(node: str, warehouses: list[dict], districts: list[dict]) -> list[str]:
    """The conditions 1-4 that fail on ``node``, in words, from its rows of ``FACTS_SQL``. A district with no
    NEW_ORDER row left checks condition 2 on D_NEXT_O_ID and max(O_ID) alone, and 3 holds."""
    out = []
    for w in warehouses:
        if _n(w["w_ytd"]) != _n(w["d_ytd"]):
            out.append(f"condition 1 fails on {node}, warehouse {w['w_id']}: W_YTD = {w['w_ytd']}, "
                       f"sum of D_YTD = {w['d_ytd']}")
    for d in districts:
        where = f"{node}, warehouse {d['d_w_id']}, district {d['d_id']}"
        nxt, max_o, max_no = int(d["d_next_o_id"]) - 1, _n(d["max_o"]), _n(d["max_no"])
        if nxt != max_o or (not math.isnan(max_no) and nxt != max_no):
            no = "" if math.isnan(max_no) else f", max(NO_O_ID) = {int(max_no)}"
            out.append(f"condition 2 fails on {where}: D_NEXT_O_ID - 1 = {nxt}, max(O_ID) = {max_o:.0f}{no}")
        rows_no = int(d["rows_no"] or 0)
        if rows_no and max_no - _n(d["min_no"]) + 1 != rows_no:
            out.append(f"condition 3 fails on {where}: max(NO_O_ID) - min(NO_O_ID) + 1 = "
                       f"{max_no - _n(d['min_no']) + 1:.0f}, NEW_ORDER rows = {rows_no}")
        if _n(d["ol_cnt"]) != _n(d["rows_ol"]):
            out.append(f"condition 4 fails on {where}: sum of O_OL_CNT = {_n(d['ol_cnt']):.0f}, "
                       f"ORDER_LINE rows = {_n(d['rows_ol']):.0f}")
    return out
