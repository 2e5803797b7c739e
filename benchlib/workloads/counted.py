"""What a counted oltp_* load says (``writers.lua`` around sysbench's test, one part a writer node): per thread and
second ``benchlib-writer NODE SECOND COMMITTED GIVEN_UP [ERRNO:N ...]``, summed here over the threads into tidy frames:
the transactions each writer node committed and gave up each second, and the errors the server asked it to retry, by
number (1213 a deadlock or a Galera certification failure, 1180 a rollback at commit, 3101 a Group Replication
certification failure at commit, 1205 a lock wait timeout, 1020 a record changed since it was read)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchlib.schema import Column, Schema

__all__ = ["WRITER_ERRORS", "WRITER_SECONDS", "Counted", "frames", "totals"]

WRITER_SECONDS = Schema("writer_seconds", {
    "t_s": Column("float64", "sampler clock at the start of the second, s"),
    "node": Column("str", "the writer node the transactions went to"),
    "committed": Column("int64", "transactions committed in that second, every client thread of that node"),
    "given_up": Column("int64", "transactions given up after their retries (load.retry): not committed"),
    "errors": Column("int64", "transactions the server rolled back and asked to retry (each tried again)"),
})
WRITER_ERRORS = Schema("writer_errors", {
    "t_s": Column("float64", "sampler clock at the start of the second, s"),
    "node": Column("str", "the writer node"),
    "code": Column("int64", "the server's error number"),
    "count": Column("int64", "transactions that ended in that error in that second"),
})


@dataclass
class Counted:
    seconds: pd.DataFrame
    errors: pd.DataFrame


def frames(lines: list[str], origin: float) -> Counted:
    """The lines summed over the threads; seconds on the sampler's clock (CLOCK_MONOTONIC minus ``origin``)."""
    seconds: dict[tuple[float, str], list[int]] = {}
    errors: dict[tuple[float, str, int], int] = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[0] != "benchlib-writer":
            continue
        key = (float(parts[2]) - origin, parts[1])
        row = seconds.setdefault(key, [0, 0, 0])
        row[0] += int(parts[3])
        row[1] += int(parts[4])
        for e in parts[5:]:
            code, n = e.split(":")
            row[2] += int(n)
            errors[(key[0], key[1], int(code))] = errors.get((key[0], key[1], int(code)), 0) + int(n)
    ks = sorted(seconds)
    s = WRITER_SECONDS.frame({"t_s": [k[0] for k in ks], "node": [k[1] for k in ks],
                              "committed": [seconds[k][0] for k in ks], "given_up": [seconds[k][1] for k in ks],
                              "errors": [seconds[k][2] for k in ks]})
    es = sorted(errors)
    e = WRITER_ERRORS.frame({"t_s": [k[0] for k in es], "node": [k[1] for k in es], "code": [k[2] for k in es],
                             "count": [errors[k] for k in es]})
    return Counted(s, e)


def totals(c: Counted) -> dict[str, dict[str, int]]:
    """Per node: committed, given_up and errors over the load, and each error number's count (``e1213`` ...)."""
    out: dict[str, dict[str, int]] = {}
    for node, g in c.seconds.groupby("node"):
        out[str(node)] = {k: int(g[k].sum()) for k in ("committed", "given_up", "errors")}
    for (node, code), g in c.errors.groupby(["node", "code"]):
        out.setdefault(str(node), {})[f"e{int(code)}"] = int(g["count"].sum())
    return out
