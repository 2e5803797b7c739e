"""sysbench's command line for a run: the read side of a read split carries its session statements."""

from __future__ import annotations

import pytest

from benchlib.sysbench.options import READ_SPLIT, RunError, SysbenchOptions


def test_the_read_split_workload_runs_its_session_statements_first():
    opts = SysbenchOptions(workload=READ_SPLIT.name, threads=2,
                           session_sql=("SET SESSION wsrep_sync_wait = 1", "SET SESSION sql_log_bin = 0"))
    argv = opts.argv("run", *opts.run_args())
    assert argv[2].endswith("benchlib/workloads/replica_reads.lua") and opts.dataset_key == "oltp:4x10000"
    assert "--session-sql=SET SESSION wsrep_sync_wait = 1;SET SESSION sql_log_bin = 0" in argv
    assert not any("session" in a for a in SysbenchOptions(workload=READ_SPLIT.name).run_args())


@pytest.mark.parametrize("kw, match", [
    ({"workload": "oltp_read_only", "session_sql": ("SET SESSION x = 1",)}, "need the replica_reads workload"),
    ({"workload": READ_SPLIT.name, "session_sql": ("SET a = 1; SET b = 2",)}, "holds a ';'"),
])
def test_bad_session_statements_are_refused(kw, match):
    with pytest.raises(RunError, match=match):
        SysbenchOptions(**kw)
