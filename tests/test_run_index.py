"""The run index (benchlib.run_index) over the recorded campaigns: one call answers a question across campaigns, a
campaign is read again only when its runs changed, bad questions get one message."""

from __future__ import annotations

import re
import shutil

import pytest

from benchlib.errors import SpecError, StoreError
from benchlib.run_index import RunIndex, campaign_folders
from benchlib.store import list_runs, runs_table
from tests.recorded import RECORDED, as_folders


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return RunIndex([RECORDED], cache=tmp_path_factory.mktemp("index"))


@pytest.mark.long
def test_every_galera_run_at_16_threads_across_campaigns_in_one_call(index):
    every = sum(len(list_runs(c)) for c in campaign_folders([RECORDED]))
    assert len(index.sql("SELECT run_id FROM runs")) == every
    galera = index.runs(system="galera", threads=16)  # (how fast: bench/, not a timed test beside the lab tests)
    assert len(galera) and (galera.system == "galera").all() and (galera.threads == 16).all()
    assert galera.campaign.nunique() >= 2  # across campaigns
    # the same runs as each campaign's own runs table says
    expected = 0
    for folder in campaign_folders([RECORDED]):
        t = runs_table(folder)
        if {"system", "threads"} <= set(t.columns):
            expected += int(((t.system == "galera") & (t.threads == 16)).sum())
    assert len(galera) == expected
    assert {"summary_tps", "server_version", "campaign_created_utc", "host_cpus"} <= set(galera.columns)
    ok = index.runs("summary_tps > 0", system="galera", threads=16, status="ok")
    assert 0 < len(ok) <= len(galera)


def test_a_campaign_is_read_again_only_when_its_runs_changed(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    as_folders("wan", root / "wan")
    shutil.copytree(RECORDED / "quick", root / "quick")
    idx = RunIndex([root], cache=tmp_path / "cache")
    assert sorted(p.name for p in idx.indexed) == ["quick", "wan"]
    assert RunIndex([root], cache=tmp_path / "cache").indexed == []  # unchanged: from the cache
    gone = list_runs(root / "wan")[0]
    shutil.rmtree(gone)
    again = RunIndex([root], cache=tmp_path / "cache")
    assert [p.name for p in again.indexed] == ["wan"]
    assert gone.name not in set(again.runs(campaign="wan").run_id) and len(again.runs(campaign="wan")) == 11
    assert again.campaigns().set_index("campaign").runs.to_dict() == {"wan": 11, "quiet4": 18}


def test_bad_questions_get_one_message(index, tmp_path):
    with pytest.raises(SpecError, match="no column nodez"):
        index.runs(nodez=3)
    with pytest.raises(SpecError, match="could not answer"):
        index.sql("SELECT nothing FROM runs")
    with pytest.raises(StoreError, match="no folder"):
        RunIndex([tmp_path / "none"], cache=tmp_path / "c")


@pytest.mark.long
def test_the_runs_command_prints_the_matching_runs(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "runs", str(RECORDED), "-m", "system=galera",
                          "-m", "threads=16", "--columns", "campaign,run_id,threads"], capture_output=True, text=True,
                         env=env)
    assert res.returncode == 0, res.stderr
    *rows, last = res.stdout.splitlines()
    assert re.fullmatch(r"\d+ runs in [2-9]\d* campaigns \(of \d+ indexed\)", last), last
    assert rows[0].split() == ["campaign", "run_id", "threads"] and all(r.split()[-1] == "16" for r in rows[1:])
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "runs", str(RECORDED), "-m", "threads"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 2 and res.stderr.startswith("error: ") and "Traceback" not in res.stderr
