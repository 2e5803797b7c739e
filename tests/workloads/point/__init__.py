"""A throwaway workload (tests/workloads/test_throwaway_workload.py): point reads by primary key on the oltp
dataset, one package with one Lua script, declared as an entry point of ``benchlib.workloads``."""

from __future__ import annotations

from pathlib import Path

from benchlib.sysbench.options import Workload

__all__ = ["WORKLOAD"]

WORKLOAD = Workload("point_reads", str(Path(__file__).with_name("point_reads.lua")), "oltp")
