"""What load a campaign's runs ran, in one sentence every report says first: the workloads, the dataset, and the key
distribution the rows were drawn from (``benchlib.sysbench.keys``), chosen or sysbench's default; a reader of a ratio
needs it to know what kind of load the ratio is about."""

from __future__ import annotations

from typing import Any

from benchlib.sysbench.keys import KeyDistribution
from benchlib.sysbench.options import WORKLOADS
from benchlib.workloads.tpcc import MIXES

__all__ = ["load_sentence"]


def load_sentence(a: Any) -> str:
    """``The load: oltp_read_write on 4 tables of 10,000 rows; keys: sysbench special, 75% of accesses on 1% of rows
    (...)`` for campaign analysis ``a`` ('' when its runs recorded no load)."""
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    if runs.empty or "keys" not in runs or runs["keys"].isna().all():
        return ""
    load = a.record.campaign.get("load") if isinstance(a.record.campaign.get("load"), dict) else {}
    names = sorted(runs.workload.dropna().astype(str).unique()) if "workload" in runs else []
    keyed_loads = [w for w in names if _dataset(w) == "oltp"]  # the others: benchlib's insert_* and TPC-C-like
    tables, size = load.get("tables"), load.get("table_size")
    plural = "s" if tables != 1 else ""
    parts = []
    sized = _sized(runs)
    if keyed_loads or not names:
        data = f" on {tables} table{plural} of {size:,} rows" if isinstance(tables, int) and isinstance(size, int) else ""
        data = f" on {tables} table{plural} {sized}" if sized else data
        parts.append(f"{', '.join(keyed_loads) or 'sysbench'}{data}; keys: {_keys(runs)}")
    tpcc = [w for w in names if w in MIXES]
    if tpcc:
        warehouses, scale = load.get("warehouses", 1), load.get("warehouse_scale", 1.0)
        rows = "" if scale == 1 else f" at {scale:.0%} of their rows"
        deck = {w: 23 if w.endswith("23") else 100 for w in tpcc}
        mixes = " and ".join("/".join(f"{MIXES[w][k] * deck[w]:.0f}" for k in MIXES[w]) +
                             (" out of 23" if deck[w] == 23 else "%") for w in tpcc)
        mixes = f"mix{'es' if len(tpcc) > 1 else ''} {mixes} (New-Order/Payment/Order-Status/Delivery/Stock-Level)"
        scale = f"{warehouses} warehouse{'s' if warehouses != 1 else ''}" if not sized else f"warehouses {sized}"
        parts.append(f"TPC-C-like ({', '.join(tpcc)}; not an audited TPC-C) on {scale}{rows}, a closed loop without "
                     f"keying or think times; {mixes}; keys NURand as the specification sets them")
    inserts = [w for w in names if _dataset(w) == "wide"]
    if inserts:
        parts.append(f"{', '.join(inserts)}, new rows into {tables} wide table{plural} created empty"
                     if isinstance(tables, int) else ", ".join(inserts))
    return f"The load: {'; '.join(parts)}."


def _dataset(workload: str) -> str:
    """The dataset a workload runs on (``benchlib.sysbench.options.WORKLOADS``; a workload no longer installed: by
    its name, sysbench's ``oltp_*`` on the oltp tables)."""
    if workload in WORKLOADS:
        return WORKLOADS[workload].dataset
    return "oltp" if workload.startswith("oltp_") else "tpcc" if workload in MIXES else "wide"


def _sized(runs: Any) -> str:
    """``sized against the buffer pool: 0.2× (26 MB) and 5.1× (650 MB)``, measured, for runs whose campaign sized
    the data so (``data_vs_buffer_pool``); '' for the others."""
    if "data_vs_buffer_pool_measured" not in runs or runs["data_vs_buffer_pool_measured"].isna().all():
        return ""
    sized = runs.dropna(subset=["data_vs_buffer_pool_measured"])
    key = sized["data_vs_buffer_pool"] if "data_vs_buffer_pool" in sized else sized["data_vs_buffer_pool_measured"]
    said = [f"{g.data_vs_buffer_pool_measured.median():.1f}× ({g.data_mb.median():,.0f} MB)"
            for _, g in sized.groupby(key, sort=True)]
    return "sized against the buffer pool: " + " and ".join(said)


def _keys(runs: Any) -> str:
    keyed = runs.dropna(subset=["keys"])
    counts = keyed.groupby(keyed["keys"].astype(str)).size()
    if len(counts) == 1:
        said = KeyDistribution.parse(counts.index[0]).words()
    else:
        said = "; ".join(f"{KeyDistribution.parse(k).words()} ({n} run{'s' if n != 1 else ''})"
                         for k, n in counts.items())
    chosen = keyed["keys_chosen"].astype(bool) if "keys_chosen" in keyed else None
    if chosen is not None and chosen.all():
        return said
    if chosen is None or not chosen.any():
        return f"{said} (sysbench 1.0.20's default: these runs chose none)"
    return f"{said} (sysbench 1.0.20's default where the campaign chose none)"
