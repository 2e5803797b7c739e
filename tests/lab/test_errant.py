"""Counting errant transactions from GTID words (no server: the live count is tests/axes/test_fault_run.py's)."""

from __future__ import annotations

from benchlib.lab.faults import _binlog_state, gtid_set_count


def test_a_mysql_gtid_set_is_counted_interval_by_interval():
    assert gtid_set_count("") == 0
    assert gtid_set_count("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:3") == 7


def test_mariadb_binlog_state_is_read_per_domain_and_server():
    assert _binlog_state("0-1-500,0-2-520, 1-1-3") == {(0, 1): 500, (0, 2): 520, (1, 1): 3}
    assert _binlog_state("") == {}
