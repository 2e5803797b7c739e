"""benchlib.lab.node: what a failed start or a crash shows of a server's error log."""

from __future__ import annotations

from benchlib.lab.node import log_tail


def test_a_crash_s_cause_is_kept_before_its_stack_trace(tmp_path):
    """A crashed mysqld ends its log with a stack trace longer than the lines a message shows: the assertion and the
    signal that say why it crashed come first, the trace's last lines after them, in the log's order."""
    log = tmp_path / "error.log"
    stack = [f"#{i} 0x55d1 <unknown>" for i in range(20)]
    log.write_text("\n".join(["[System] [MY-010931] ready for connections",
                              "[ERROR] [MY-013183] [InnoDB] Assertion failure: trx0purge.cc:180",
                              "13:00:01 UTC - mysqld got signal 6 ;", *stack]))
    shown = [line.strip() for line in log_tail(log, 8).splitlines()]
    assert shown == ["[ERROR] [MY-013183] [InnoDB] Assertion failure: trx0purge.cc:180",
                     "13:00:01 UTC - mysqld got signal 6 ;", *stack[-6:]]


def test_a_quiet_log_shows_its_last_lines_and_a_missing_one_says_so(tmp_path):
    log = tmp_path / "error.log"
    log.write_text("\n".join(f"line {i}" for i in range(30)))
    assert [line.strip() for line in log_tail(log, 3).splitlines()] == ["line 27", "line 28", "line 29"]
    assert "no log at" in log_tail(tmp_path / "absent.log")
