"""The TPC-C-like workloads' own records, an axis: on by itself in a campaign that runs ``tpcc_like`` or
``tpcc_like_23`` (``benchlib.workloads.tpcc``). Each such run records what its client threads did by transaction type
and second (committed, rolled back on purpose, errors by the server's error number) and their latency histograms;
the write node's districts' next order ids every second, so the new orders per minute come from the server (as
HammerDB's NOPM), checked against the client's committed New-Orders; and after the run the specification's
consistency conditions 1-4 on every node: a failed one names the node, warehouse and district, and makes the run
invalid like a checksum that differs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchlib.axis import AxisRecord
from benchlib.schema import Cell

__all__ = ["FACTS", "TpccPlan", "TpccRecord"]


@dataclass(frozen=True)
class TpccPlan:
    """Nothing of a configuration: the workload's name already says the mix."""

    def identity(self) -> list[Any]:
        return []

    def params(self) -> dict[str, Cell]:
        return {}


class TpccRecord(AxisRecord):
    """What a run's manifest records (``tpcc``): the mix and scale, the load's length, the new orders the server
    counted and those the client saw commit, the transactions by type and outcome, errors by number, and the
    consistency conditions checked after the run (on which nodes, what failed)."""

    mix: str
    warehouses: int
    scale: float
    node: str
    load_s: float | None = None
    new_orders_server: int | None = None
    new_orders_client: int | None = None
    committed: dict[str, int] = {}
    rolled_back: int = 0
    errors: dict[str, int] = {}  # error number -> transactions
    checked_on: list[str] = []
    violations: list[str] = []
    why_not: str = ""


FACTS = ("tpcc_nopm", "tpcc_new_orders_server", "tpcc_new_orders_client", "tpcc_rollback_share",
         "tpcc_error_share", "tpcc_violations")


def _facts(r: TpccRecord | None) -> dict[str, Cell]:
    if r is None:
        return dict.fromkeys(FACTS)
    total = sum(r.committed.values()) + r.rolled_back + sum(r.errors.values())
    new_orders = r.committed.get("new_order", 0) + r.rolled_back
    return {"tpcc_nopm": r.new_orders_server / r.load_s * 60 if r.new_orders_server is not None and r.load_s
            else None,
            "tpcc_new_orders_server": r.new_orders_server, "tpcc_new_orders_client": r.new_orders_client,
            "tpcc_rollback_share": r.rolled_back / new_orders if new_orders else None,
            "tpcc_error_share": sum(r.errors.values()) / total if total else None,
            "tpcc_violations": len(r.violations) if r.checked_on else None}
