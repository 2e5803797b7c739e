"""The stall axis beside a run's load: ``at_s`` into the load the cluster's last node stops applying (its system's
``stall`` statements on one connection), ``duration_s`` later it starts again. The stall's real start and end are
recorded; the stopped applier it causes on that node within them is excused from the run's invariants (it is the
measurement, not a change of the cluster's mode)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pymysql

from benchlib.systems import base as systems
from benchlib.axes.stall import StallRecord
from benchlib.axis import AxisRun, RunContext
from benchlib.errors import BenchlibError
from benchlib.systems import sql

__all__ = ["StallRun", "hook"]


class StallRun(AxisRun):
    def __init__(self, ctx: RunContext):
        self.ctx, self.plan, self.node = ctx, ctx.variant, ctx.nodes[-1]
        stall = systems.get(ctx.system).stall
        assert stall is not None, "the planner refuses a system without a stall"
        self.stall = stall
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.conn: Any = None
        self.t_on: float | None = None
        self.t_off: float | None = None
        self.origin: float | None = None
        self.error: str | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=f"stall:{self.node}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.done.wait(self.plan.at_s):
            return
        try:
            self.conn = self.ctx.lab.connect(self.node)
            sql.execute(self.conn, *self.stall.begin)
        except (BenchlibError, pymysql.MySQLError, OSError) as exc:
            self.error = f"{self.node}'s applier could not be stopped: {_words(exc)}"
            return
        self.t_on = time.monotonic()
        self.done.wait(self.plan.duration_s)
        self._end()

    def _end(self) -> None:
        with self.lock:
            if self.t_on is None or self.t_off is not None:
                return
            try:
                sql.execute(self.conn, *self.stall.end)
            except (pymysql.MySQLError, OSError) as exc:
                self.error = f"{self.node}'s applier could not be started again: {_words(exc)}"
            self.t_off = time.monotonic()

    def failed(self) -> str | None:
        return self.error

    def join(self, loaded: Any) -> Any:
        """The load is over: a stall still on ends now (a run cut short)."""
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        self._end()
        return loaded

    def stop(self) -> str | None:
        return self.error

    def excused(self) -> list[tuple[str, float, float]]:
        return [(self.node, self.t_on, self.t_off)] if self.t_on is not None and self.t_off is not None else []

    def frames(self, origin: float) -> dict[str, Any]:
        self.origin = origin
        return {}

    def manifest(self) -> dict[str, object]:
        t_on, t_off, origin = self.t_on, self.t_off, self.origin
        record = StallRecord(node=self.node, at_s=self.plan.at_s, duration_s=self.plan.duration_s, how=self.stall.how)
        if t_on is not None and origin is not None:  # it began: when, and how long it held (None: still on)
            record = record.model_copy(update={
                "started_s": t_on - origin, "ended_s": t_off - origin if t_off is not None else None,
                "held_s": t_off - t_on if t_off is not None else None})
        return record.model_dump(mode="json")

    def close(self) -> None:
        self.done.set()
        self._end()
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass


def _words(exc: BaseException) -> str:
    if isinstance(exc, BenchlibError):
        return exc.message
    return str(exc.args[-1]) if getattr(exc, "args", None) else str(exc)


def hook(ctx: RunContext) -> StallRun:
    return StallRun(ctx)
