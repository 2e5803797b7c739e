"""Where the writes landed (``benchlib.axes.hot_rows``): a campaign that chooses its key distributions counts each
run's row writes in the write node's binary log. Here the counting of a binlog tool's output; on real servers, in the
module labs of tests/lab/test_async.py (uniform keys put about 1% of the writes on the hottest 1% of rows, sysbench's
special about 76%: each within 20% of what the distribution puts there) and tests/lab/test_galera.py (a Galera node,
which keeps no binary log here, says so), through ``measured_where_the_writes_landed``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from benchlib.analysis.campaign import analyze
from benchlib.axes.hot_rows.run import count_rows, hot_windows
from benchlib.campaign.runner import run_campaign
from benchlib.report import findings
from benchlib.store import read_manifest
from tests.campaigns import campaign_toml
from tests.conftest import EXAMPLES


def test_row_events_are_counted_by_their_id_on_the_sysbench_tables_only():
    lines = ["### UPDATE `sbtest`.`sbtest1`", "### WHERE", "###   @1=5", "###   @2=7", "### SET", "###   @1=5",
             "### INSERT INTO `benchlib`.`heartbeat`", "### SET", "###   @1=5",
             "### DELETE FROM `sbtest`.`sbtest2`", "### WHERE", "###   @1=900",
             "### INSERT INTO `sbtest`.`sbtest2`", "### SET", "###   @1=6"]
    assert count_rows(lines, [(5, 6)], 100) == (3, 2, False)
    assert count_rows(lines, [(5, 6)], 2) == (2, 1, True)  # a sample: stopped at the most asked
    assert count_rows(lines, [(1, 5), (900, 900)], 100) == (3, 2, False)


def test_each_writer_node_on_its_own_keys_has_its_own_hot_rows():
    """Three writer nodes on disjoint keys each draw from their third of the table by the distribution: the hottest
    1% of what they draw is 1% of each third (found by a recorded campaign: counted against the table's one window,
    their hot rows looked cold, 24% against 76%)."""
    from benchlib.sysbench.options import SysbenchOptions

    opts = SysbenchOptions(workload="oltp_read_write", table_size=9000, distribution="special:1:75")
    one = hot_windows(opts, 0.01)
    three = hot_windows(replace(opts, writers=3, disjoint=True), 0.01)
    assert len(one) == 1 and one[0][1] - one[0][0] + 1 == 90
    assert [b - a + 1 for a, b in three] == [30, 30, 30] and three[1][0] - three[0][0] == 3000
    assert hot_windows(replace(opts, writers=3), 0.01) == one  # shared keys: the table's


def hot_rows_campaign(tmp_path: Path, lab_file: str, lab_name: str, cluster: str, distributions: list[str],
                      time_s: int) -> Path:
    """A campaign on the module lab ``lab_name`` (up already: the campaign uses it) choosing ``distributions``."""
    lab_toml = (EXAMPLES / lab_file).read_text().splitlines()
    (tmp_path / "lab.toml").write_text("\n".join(f'name = "{lab_name}"' if line.startswith("name =") else line
                                                  for line in lab_toml))
    spec = tmp_path / "campaign.toml"
    spec.write_text(campaign_toml("t", "lab.toml", clusters=[cluster], threads=[4], time_s=time_s, repetitions=1,
                                  table_size=2000, load=f"distributions = {json.dumps(distributions)}\n"))
    return spec


def measured_where_the_writes_landed(lab, tmp_path: Path, lab_file: str, cluster: str,
                                     distributions: list[str], time_s: int) -> tuple[dict, dict[str, list[str]]]:
    """Runs the campaign on ``lab`` (a module's lab, on a real server: tests/lab/test_async.py and test_galera.py
    call it, so that no lab comes up for it alone); each run's ``hot_rows`` record by distribution, and the findings."""
    spec = hot_rows_campaign(tmp_path, lab_file, lab.name, cluster, distributions, time_s)
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert set(result.counts) == {"ok"}, result.table()[["run_id", "status", "reason"]]
    records = {r.options.distribution: read_manifest(result.path / r.run_id).as_dict()["axes"]["hot_rows"]
               for r in result.plan}
    return records, findings(analyze(result.path), result.path)

