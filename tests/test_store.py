"""The run store: write-once atomic run folders, validated frames, secrets refused, load_campaign."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchlib import store
from benchlib.schema import SchemaError
from benchlib.sampling.status import StatusLog
from benchlib.store import RunWriter, StoreError, list_runs, load_campaign, read_run
from benchlib.sysbench.output import parse_file
from tests.sysbench.test_output import FIX


def write_run(campaign, run_id, params, fixture="read_write_t8_closed.txt", status="ok"):
    r = parse_file(FIX / fixture)
    w = RunWriter(campaign, run_id, params, secrets=["s3cr3t-pw"])
    w.raw("sysbench.txt", (FIX / fixture).read_text())
    w.frame("intervals", r.intervals)
    w.frame("histogram", r.histogram)
    log = StatusLog()
    log.add(1.0, "async-2", "trx_behind", 3)
    log.add(1.0, "async-2", "cpu_s", 1.5, counter=True)
    w.frame("cluster", log.frame())
    return w.finish(summary=r.summary) if status == "ok" else w.fail("replica async-2 killed mid-run")


def test_run_round_trip(tmp_path):
    path = write_run(tmp_path, "r001", {"topology": "async", "threads": 8, "lab": {"durability": "durable"}})
    run = read_run(path)
    assert run.ok and run.run_id == "r001"
    assert run.manifest.format_version == store.FORMAT_VERSION
    assert run.manifest.params["threads"] == 8 and run.manifest.summary["tps"] > 0
    assert set(run.frames) == {"intervals", "histogram", "cluster"}
    pd.testing.assert_frame_equal(run.frames["intervals"], parse_file(FIX / "read_write_t8_closed.txt").intervals)
    assert (path / "raw" / "sysbench.txt").read_text() == (FIX / "read_write_t8_closed.txt").read_text()
    assert run.manifest.started_utc.endswith("Z")


def test_runs_are_never_overwritten(tmp_path):
    write_run(tmp_path, "r001", {})
    with pytest.raises(StoreError, match="already exists: runs are never overwritten"):
        RunWriter(tmp_path, "r001", {})


def test_interrupted_run_leaves_no_half_written_folder(tmp_path):
    write_run(tmp_path, "r001", {})
    w = RunWriter(tmp_path, "r002", {})
    w.raw("sysbench.txt", "partial")  # ... and the process dies here: no finish()
    assert [p.name for p in list_runs(tmp_path)] == ["r001"]
    assert any(p.name.startswith(".tmp-r002") for p in tmp_path.iterdir())
    assert list(load_campaign(tmp_path)["runs"].run_id) == ["r001"]


def test_failed_runs_are_kept_and_marked(tmp_path):
    write_run(tmp_path, "r001", {"threads": 8})
    write_run(tmp_path, "r002", {"threads": 16}, fixture="read_write_killed.txt", status="failed")
    failed = read_run(tmp_path / "r002")
    assert failed.manifest.status == "failed" and "killed" in failed.manifest.reason
    assert len(failed.frames["intervals"]) == 3  # the partial frames are kept
    c = load_campaign(tmp_path)
    assert c["runs"].set_index("run_id").status.to_dict() == {"r001": "ok", "r002": "failed"}
    assert set(c["intervals"].run_id) == {"r001"}
    assert set(load_campaign(tmp_path, failed=True)["intervals"].run_id) == {"r001", "r002"}


def test_secrets_are_refused_everywhere(tmp_path):
    w = RunWriter(tmp_path, "r001", {}, secrets=["s3cr3t-pw"])
    with pytest.raises(StoreError, match="refusing to save a secret into raw/x.txt"):
        w.raw("x.txt", "mysql-password=s3cr3t-pw")
    w2 = RunWriter(tmp_path, "r002", {"dsn": "user:s3cr3t-pw@host"}, secrets=["s3cr3t-pw"])
    with pytest.raises(StoreError, match="manifest.json"):
        w2.finish()
    assert list_runs(tmp_path) == []


def test_frames_are_validated_on_write_and_on_read(tmp_path):
    w = RunWriter(tmp_path, "r001", {})
    with pytest.raises(SchemaError, match="missing columns"):
        w.frame("intervals", pd.DataFrame({"t_s": [1.0]}))
    path = write_run(tmp_path, "r002", {})
    parse_file(FIX / "read_write_t8_closed.txt").intervals.drop(columns="tps").to_parquet(
        path / "intervals.parquet", index=False)  # damaged after the fact
    with pytest.raises(SchemaError, match="missing columns \\['tps'\\]"):
        read_run(path)


def test_old_formats_are_upgraded_or_refused(tmp_path, monkeypatch):
    path = write_run(tmp_path, "r001", {})
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format_version"] = 0
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="run format 0 cannot be read"):
        read_run(path)
    monkeypatch.setitem(store.UPGRADERS, 0, lambda m: {**m, "format_version": 1})
    assert read_run(path).ok


def test_load_campaign_tags_rows_with_run_and_parameters(tmp_path):
    write_run(tmp_path, "r001", {"topology": "async", "threads": 8, "lab": {"durability": "durable"}})
    write_run(tmp_path, "r002", {"topology": "galera", "threads": 4, "lab": {"durability": "relaxed"}},
              fixture="galera_write_only_conflicts.txt")
    c = load_campaign(tmp_path)
    iv = c["intervals"]
    assert set(iv.groupby("run_id").topology.first().items()) == {("r001", "async"), ("r002", "galera")}
    assert "lab.durability" in iv.columns
    # 'threads' is also a column of the intervals frame: the parameter is added as param_threads
    assert iv.groupby("run_id").param_threads.first().to_dict() == {"r001": 8, "r002": 4}
    assert (iv.threads <= iv.param_threads).all()
    assert set(c) == {"intervals", "lag", "cluster", "histogram", "probe_writes", "probe_reads", "read_intervals", "ledger",
                      "ledger_reads", "fault_events", "tpcc_types", "tpcc_errors", "tpcc_latency", "tpcc_orders", "writer_seconds",
                      "writer_errors", "history", "runs"}
    assert c["lag"].empty and c["probe_reads"].empty  # no stale-read probe in these runs
    assert list(c["runs"].columns[:3]) == ["run_id", "status", "reason"]


def test_missing_campaign_folder(tmp_path):
    with pytest.raises(StoreError, match="no campaign folder"):
        load_campaign(tmp_path / "nope")


def test_a_format_2_manifest_reads_with_each_axis_s_entry_typed_and_absent_where_it_had_none():
    from benchlib.axis import AXES
    from benchlib.manifest import FORMAT_VERSION, Manifest

    v2 = {"format_version": 2, "run_id": "r1", "status": "ok", "started_utc": "x", "ended_utc": "y",
          "audit": {"nodes": ["a-1", "a-2"], "mismatches": [], "check_s": 0.01, "positions": {"a-1": "0-1-5"}},
          "probe": {}, "read_split": {}, "fault": {"kind": "kill", "nodes": ["a-1"], "at_s": 5.0, "new_field": 1},
          "ledger": {"acked": 10, "lost": 0, "lost_seqs": []}, "fault_at_s": 7.5, "survivor": "a-2"}
    m = Manifest.of(v2)
    assert m.format_version == FORMAT_VERSION == 4
    assert set(m.axes) == {"fault"} and m.axis("probe") is None  # format 2's empty tables: the run had none
    assert m.audit.identical and m.audit.nodes == ["a-1", "a-2"] and m.audit["check_s"] == 0.01
    fault = AXES.lookup("fault").recorded(m)  # typed by the fault axis's own record
    assert type(fault).__name__ == "FaultRecord" and fault.kind == "kill" and fault["nodes"] == ["a-1"]
    assert fault.get("new_field") == 1 and m.axis("fault")["new_field"] == 1  # unknown: kept
    assert (fault.at_s, fault.happened_s, fault.survivor) == (5.0, 7.5, "a-2")  # format 3's fault_at_s, beside it
    assert fault.ledger.lost == 0 and fault.ledger.get("reads_of_lost") is None and "acked" in fault.ledger
    with pytest.raises(KeyError):
        fault.ledger["nope"]
    assert "fault_at_s" not in m.as_dict() and "ledger" not in m.as_dict()  # the core names no axis
    assert Manifest.of(m.as_dict()) == m  # written as it reads


def test_a_manifest_is_typed_before_it_is_written_and_records_no_object_as_its_str(tmp_path):
    import numpy as np
    from pathlib import Path

    w = RunWriter(tmp_path, "r001", {"threads": 8})
    done = w.finish(where=Path("/x/y"), n=np.int64(3), share=np.float64(0.5), flags={"b", "a"})
    m = json.loads((done / "manifest.json").read_text())
    assert (m["where"], m["n"], m["share"], m["flags"]) == ("/x/y", 3, 0.5, ["a", "b"])

    class Opaque:
        pass

    w = RunWriter(tmp_path, "r002", {})
    with pytest.raises(StoreError, match=r"cannot record a .*Opaque"):
        w.finish(odd=Opaque())
    w.abandon()
    w = RunWriter(tmp_path, "r003", {})
    with pytest.raises(StoreError, match="r003: its manifest does not validate: lab: "):
        w.finish(lab="not a table")  # the Manifest's lab is a table: a reader would refuse this record
    w.abandon()
    assert [p.name for p in list_runs(tmp_path)] == ["r001"]
