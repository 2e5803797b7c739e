"""benchlib's own workloads, registered when the ``benchlib.workloads`` entry point ``builtin`` names this module
(benchlib's ``pyproject.toml``): sysbench 1.0.20's ``oltp_*`` tests, the insert workloads of flow-control studies
(``insert_rows.lua``) and the TPC-C-like mix (``tpcc_like.lua``, ``benchlib.workloads.tpcc``). A workload of one's
own is a ``Workload`` declared the same way, in a package of its own: its name, its Lua script's path, its dataset."""

from __future__ import annotations

from benchlib.sysbench.options import WORKLOAD_DIR, WORKLOADS, Workload

__all__ = ["BUILTIN"]



def _sysbench_own(name: str) -> Workload:
    return Workload(name, name, "oltp")


BUILTIN = [
    *(_sysbench_own(n) for n in ("oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index",
                                 "oltp_insert", "oltp_point_select", "oltp_read_only", "oltp_delete")),
    # flow-control studies: one row per transaction, and N single-row INSERTs in one transaction (default 50)
    Workload("insert_single", str(WORKLOAD_DIR / "insert_rows.lua"), "wide"),
    Workload("insert_batch", str(WORKLOAD_DIR / "insert_rows.lua"), "wide", rows_per_trx=True),
    # the TPC-C-like mix (not an audited TPC-C): the specification's 45/43/4/4/4, and the 10/10/1/1/1 draw out of 23
    # HammerDB and sysbench-tpcc use
    Workload("tpcc_like", str(WORKLOAD_DIR / "tpcc_like.lua"), "tpcc", ("--mix=standard",)),
    Workload("tpcc_like_23", str(WORKLOAD_DIR / "tpcc_like.lua"), "tpcc", ("--mix=23",)),
]
for _w in BUILTIN:
    WORKLOADS.register(_w)
