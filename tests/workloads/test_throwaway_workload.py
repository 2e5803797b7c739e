"""A workload of one's own is one package (``tests/workloads/point``: a ``Workload`` and its Lua script) with one
entry point of ``benchlib.workloads``: installed the way a third party's is, a campaign names it, its runs prepare
the oltp tables with sysbench's own script and run its own, and the report's first line says it; nothing else in
benchlib names it."""

from __future__ import annotations

import pytest

from benchlib.analysis.campaign import analyze
from benchlib.campaign.runner import run_campaign
from benchlib.report import findings
from benchlib.sysbench.options import WORKLOADS, SysbenchOptions
from tests.campaign.test_runner import write_campaign
from tests.conftest import ROOT, example_spec
from tests.plugins import installed


@pytest.fixture
def point_reads(tmp_path_factory):
    with installed(tmp_path_factory.mktemp("site"), WORKLOADS, "point_reads", "tests.workloads.point:WORKLOAD") as w:
        yield w


def test_a_workload_of_one_s_own_is_one_entry_point(point_reads):
    assert point_reads.dataset == "oltp" and "point_reads" in WORKLOADS
    opts = SysbenchOptions(workload="point_reads", tables=2, table_size=100)
    # the oltp tables as sysbench's own tests make them, with the ids 1..table_size on every system
    assert opts.argv("prepare")[2].endswith("benchlib/workloads/oltp_tables.lua")
    assert opts.argv("run")[2].endswith("tests/workloads/point/point_reads.lua")
    named = [p for p in (ROOT / "benchlib").rglob("*.py") if "point_reads" in p.read_text()]
    assert named == []


def test_a_throwaway_workload_runs_in_a_campaign_on_a_real_lab(labs, tmp_path, point_reads):
    spec = write_campaign(tmp_path, "single.toml", "t-work", clusters=["solo"], repetitions=1, time_s=2)
    spec.write_text(spec.read_text().replace('workloads = ["oltp_write_only"]', 'workloads = ["point_reads"]'))
    labs.up(example_spec("single.toml", "t-work"))
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert result.counts == {"ok": 1}, result.table()[["run_id", "status", "reason"]]
    a = analyze(result.path)
    assert a.runs.summary_tps.iloc[0] > 10
    said = findings(a, result.path)["load"]
    assert said[0].startswith("The load: point_reads on 2 tables of 1,000 rows; keys: "), said
