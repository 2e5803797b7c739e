"""Where the writes landed, an axis: in a campaign that chooses its key distribution (``load.distributions``), or
that asks with a ``[hot_rows]`` table, each run counts the rows its load wrote in the write node's binary log (the
row events between the load's start and the end of its catch-up, decoded with the server's own binlog tool, at most
``max_rows`` of them: a sample) and records the share that landed on the hottest ``fraction`` of the rows, beside
the share its distribution should put there (``benchlib.sysbench.keys``). A node without a binary log (a Galera node
here), or one whose binary log is not on this host (a remote lab), records why it was not measured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from benchlib.axis import AxisRecord
from benchlib.schema import Cell
from benchlib.specs import Strict

__all__ = ["FACTS", "HotRowsPlan", "HotRowsRecord", "HotRowsSpec"]


class HotRowsSpec(Strict):
    """[hot_rows]: count where each run's writes landed (on by itself in a campaign with ``load.distributions``)."""

    #: the hottest share of the rows counted
    fraction: float = Field(default=0.01, gt=0, lt=1)
    #: at most this many row events counted a run (the first ones after the load starts): a sample
    max_rows: int = Field(default=200_000, ge=1000)


@dataclass(frozen=True)
class HotRowsPlan:
    """A run's count: of what, at most how many; no part of a configuration (the same runs, counted)."""

    fraction: float
    max_rows: int

    def identity(self) -> list[Any]:
        return []

    def params(self) -> dict[str, Cell]:
        return {}


class HotRowsRecord(AxisRecord):
    """What a run's manifest records (``hot_rows``): the node whose binary log was read, the distribution, the
    share expected and the share measured on the hottest ``fraction`` of the rows, how many row writes were
    counted; ``why_not`` when nothing was."""

    node: str
    distribution: str
    fraction: float
    expected: float | None = None
    rows: int = 0
    hot: int = 0
    measured: float | None = None
    sampled: bool = False  # the count stopped at max_rows
    why_not: str = ""


FACTS = ("hot_share", "hot_share_expected", "hot_rows_counted", "hot_rows_why_not")


def _facts(r: HotRowsRecord | None) -> dict[str, Cell]:
    if r is None:
        return dict.fromkeys(FACTS)
    return {"hot_share": r.measured, "hot_share_expected": r.expected, "hot_rows_counted": r.rows,
            "hot_rows_why_not": r.why_not or None}
