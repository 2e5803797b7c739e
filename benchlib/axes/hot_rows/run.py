"""The hot-rows axis in a run: the write node's binary-log position when the load starts and after the catch-up, then
the row events between them decoded with the server's own tool (``mariadb-binlog``/``mysqlbinlog --base64-output=
decode-rows -v``) and counted by row id, on the sysbench tables only, the first ``max_rows`` of them. It never fails
a run: what it cannot count it records as ``why_not``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from benchlib.axes.hot_rows import HotRowsRecord
from benchlib.axis import AxisRun, RunContext
from benchlib.errors import BenchlibError
from benchlib.systems import dialect, sql

__all__ = ["HotRowsRun", "count_rows", "hot_windows"]

#: a row event's header as the binlog tools print it with -v, on a sysbench table
HEADER = re.compile(r"^### (?:UPDATE|INSERT INTO|DELETE FROM) `[^`]+`\.`sbtest\d+`")
FIRST_COLUMN = re.compile(r"^###\s+@1=(-?\d+)")
TOOLS = {"mariadb": ("mariadb-binlog", "mysqlbinlog"), "mysql": ("mysqlbinlog",)}


def hot_windows(options, fraction: float) -> list[tuple[int, int]]:
    """The ids (first, last) of the hottest ``fraction`` of the rows the run's keys draw: one window of the table, or,
    with several writer nodes each on its own keys (``writers.lua``: part k draws from its own
    equal range of the table by the distribution), one in each node's range, ``fraction`` of the table in all."""
    keys, size = options.keys, options.table_size
    parts = options.writers if getattr(options, "disjoint", False) and options.writers > 1 else 1
    width = max(1, size // parts)
    first, last = keys.hot_rows(width, fraction)
    return [(first + k * width, last + k * width) for k in range(parts)]


def count_rows(lines, windows: list[tuple[int, int]], most: int) -> tuple[int, int, bool]:
    """(rows, rows with an id in one of ``windows`` (first, last), stopped at ``most``) over a binlog tool's ``-v``
    output ``lines``: each row event on a sysbench table counted once, by its first column (the id)."""
    rows = hot = 0
    pending = False
    for line in lines:
        if HEADER.match(line):
            pending = True
            continue
        if pending:
            m = FIRST_COLUMN.match(line)
            if m:
                pending = False
                rows += 1
                row_id = int(m.group(1))
                hot += any(first <= row_id <= last for first, last in windows)
                if rows >= most:
                    return rows, hot, True
    return rows, hot, False


class HotRowsRun(AxisRun):
    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        plan = ctx.variant
        keys = ctx.options.keys
        self.node = ctx.nodes[0]
        self.max_rows = plan.max_rows
        self.windows = hot_windows(ctx.options, plan.fraction)
        self.record: dict[str, object] = {"node": self.node, "distribution": keys.name, "fraction": plan.fraction,
                                          "expected": keys.hot_share(plan.fraction)}  # HotRowsRecord's fields
        self.began: tuple[str, int, str] | None = None

    def _position(self) -> tuple[str, int, str] | None:
        """(file, position, the binary log's base name) on the write node now; None (and why) without one."""
        with self.ctx.lab.connect(self.node) as conn:
            on = sql.query(conn, "SELECT @@log_bin AS on_, @@log_bin_basename AS base, @@version AS version, "
                                 "@@version_comment AS version_comment")[0]
            if str(on["on_"]) not in ("1", "ON") or not on["base"]:
                self.record["why_not"] = f"{self.node} keeps no binary log"
                return None
            status = sql.query(conn, dialect.binary_log_status_sql(dialect.detect(on)))
        if not status:
            self.record["why_not"] = f"{self.node} reported no binary log position"
            return None
        return str(status[0]["File"]), int(status[0]["Position"]), str(on["base"])

    def start(self) -> None:
        try:
            self.began = self._position()
        except BenchlibError as e:
            self.record["why_not"] = f"{self.node}: {e.message}"

    def stop(self) -> str | None:
        if self.began is None:
            return None
        try:
            ended = self._position()
            if ended is not None:
                self._count(self.began, ended)
        except (BenchlibError, OSError, ValueError, subprocess.SubprocessError) as e:
            self.record["why_not"] = f"{self.node}'s binary log could not be read: {getattr(e, 'message', e)}"
        return None

    def _count(self, began: tuple[str, int, str], ended: tuple[str, int, str]) -> None:
        base = Path(began[2])
        index = base.with_name(base.name + ".index")
        if not index.exists():
            self.record["why_not"] = f"the binary log of {self.node} is not on this host"
            return
        listed = [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
        files = [str(base.parent / f) for f in listed[listed.index(began[0]):listed.index(ended[0]) + 1]]
        server = self.ctx.lab.server(self.ctx.cluster)
        tool = None
        for name in TOOLS.get(server.flavor, ("mysqlbinlog",)):
            try:
                tool = server.program(name)
                break
            except BenchlibError:
                continue
        if tool is None:
            self.record["why_not"] = f"no binlog tool of {server.label} found to decode {self.node}'s binary log"
            return
        argv = server.argv("--no-defaults", "--base64-output=decode-rows", "-v", f"--start-position={began[1]}",
                           f"--stop-position={ended[1]}", *files, program=Path(tool))
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              errors="replace") as p:
            assert p.stdout is not None
            rows, hot, sampled = count_rows(p.stdout, self.windows, self.max_rows)
            if sampled:
                p.kill()
        self.record.update(rows=rows, hot=hot, sampled=sampled, measured=hot / rows if rows else None)
        if not rows:
            self.record["why_not"] = f"no row of a sysbench table in {self.node}'s binary log over the run"

    def manifest(self) -> dict[str, object]:
        return HotRowsRecord.model_validate(self.record).model_dump()
