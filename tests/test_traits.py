"""A cluster's traits as a run recorded them: the row ids of sysbench's tables, recorded or inferred for a run an
older benchlib recorded, and the likeness check that names them as a confound."""

from __future__ import annotations

import pandas as pd

from benchlib.analysis.likeness import unlike, words
from benchlib.manifest import Manifest
from benchlib.traits import traits


def _manifest(system: str, topology: str, nodes: int, load: dict,
              single_primary: str | None = None) -> Manifest:
    names = [f"n-{i}" for i in range(1, nodes + 1)]
    variables = {names[0]: {"group_replication_single_primary_mode": single_primary}} if single_primary else {}
    return Manifest.model_validate({
        "format_version": 1, "run_id": "r", "status": "ok", "started_utc": "", "ended_utc": "",
        "lab": {"nodes": names, "system": system, "topology": topology,
                "facts": {"system": system, "topology": topology}},
        "sysbench": load, "server_variables": variables})


def test_the_row_ids_are_recorded_or_inferred_from_what_the_system_did_to_auto_increment():
    oltp = {"workload": "oltp_read_write", "table_size": 10000}
    now = {**oltp, "row_ids": "1..10000"}
    every = "all of 1 to the table size"
    assert traits(_manifest("galera", "galera", 3, now))["cluster_row_ids"] == every  # prepared ids 1..N
    # an older benchlib let sysbench's AUTO_INCREMENT prepare take the server's increments
    assert traits(_manifest("galera", "galera", 3, oltp))["cluster_row_ids"] == "every 3rd id (1, 4, 7, ...)"
    assert traits(_manifest("galera", "galera", 5, oltp))["cluster_row_ids"] == "every 5th id (1, 6, 11, ...)"
    assert traits(_manifest("mariadb", "async", 3, oltp))["cluster_row_ids"] == every
    multi = _manifest("group_replication", "group_replication", 3, oltp, single_primary="OFF")
    assert traits(multi)["cluster_row_ids"] == "every 7th id (1, 8, 15, ...)"
    single = _manifest("group_replication", "group_replication", 3, oltp, single_primary="ON")
    assert traits(single)["cluster_row_ids"] == every
    tpcc = {"workload": "tpcc_like", "warehouses": 2}  # its own tables, its own explicit keys
    assert traits(_manifest("galera", "galera", 3, tpcc))["cluster_row_ids"] is None


def test_other_row_ids_confound_a_ratio_and_say_how_to_compare_like_with_like():
    def runs(m: Manifest) -> pd.DataFrame:
        return pd.DataFrame([{"topology": m.lab.topology, **traits(m)}])

    oltp = {"workload": "oltp_read_write", "table_size": 10000}
    old = unlike(runs(_manifest("galera", "galera", 3, oltp)), runs(_manifest("mariadb", "async", 3, oltp)))
    (d,) = [d for d in old if d.trait == "row_ids"]
    assert d.kind == "confound" and d.this == "every 3rd id (1, 4, 7, ...)"
    said = words(old, "galera", "async")
    assert "row ids of the oltp tables, every 3rd id (1, 4, 7, ...) in galera against all of 1 to the table size" \
           in said and "run the campaign again" in said
    new = {**oltp, "row_ids": "1..10000"}
    assert not [d for d in unlike(runs(_manifest("galera", "galera", 3, new)),
                                  runs(_manifest("mariadb", "async", 3, new))) if d.trait == "row_ids"]
