"""Isolation anomalies, an axis (``[history]``): list-append clients beside a campaign's load on a real MariaDB
server, under REPEATABLE READ and SERIALIZABLE; each run's history checked, the rates and their bounds per
isolation level in the findings and the report."""

from __future__ import annotations

import pytest

from benchlib.analysis.campaign import analyze
from benchlib.campaign.runner import run_campaign
from benchlib.errors import SpecError
from benchlib.report import findings
from benchlib.store import read_manifest
from tests.campaign.test_runner import write_campaign
from tests.conftest import example_spec


def test_repeatable_read_loses_updates_beside_the_load_and_serializable_does_not(labs, tmp_path):
    spec = write_campaign(tmp_path, "single.toml", "t-hist", clusters=["solo"], repetitions=1, time_s=8,
                          threads=[2], extra='[history]\nisolation = ["repeatable-read", "serializable"]\n'
                                           'clients = 4\nrate = 100\nkeys = 4\n')
    labs.up(example_spec("single.toml", "t-hist"))
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert result.counts == {"ok": 2}, result.table()[["run_id", "status", "reason"]]
    m = read_manifest(result.path / result.plan[0].run_id).as_dict()["axes"]["history"]
    assert m["isolation"] in ("repeatable-read", "serializable") and m["transactions"] > 500 and m["nodes"]
    a = analyze(result.path)
    s = a.axis("history").summary.set_index("isolation")
    assert s.loc["repeatable-read", "lost update"] > 0 and s.loc["serializable", "lost update"] == 0
    assert 0 < s.loc["serializable", "lost update upper"] < 1e5 * 3.7 / s.loc["serializable", "committed"]
    said = findings(a, result.path)["history"]
    rr = next(line for line in said if line.startswith("solo, repeatable-read:"))
    assert "lost updates (" in rr and "per 100,000, 95%" in rr and "For example: T" in rr, rr
    ser = next(line for line in said if line.startswith("solo, serializable:"))
    assert "no lost update, G-single" in ser and "one-sided 95%" in ser and "refused by the server, by error number: 1213: " in ser, ser


def test_a_level_no_cluster_has_is_refused_when_planned(tmp_path):
    from benchlib.campaign.plan import plan
    from benchlib.campaign.spec import load_campaign_spec

    spec = write_campaign(tmp_path, "single.toml", "t-x", clusters=["solo"], repetitions=1, time_s=10,
                          extra='[history]\nisolation = ["snapshot"]\n')
    with pytest.raises(SpecError, match="'snapshot' is not an isolation level here"):
        plan(*load_campaign_spec(spec))


def test_read_consistency_settings_are_configurations_where_a_system_has_them_and_causal_is_refused(tmp_path):
    from benchlib.campaign.plan import plan
    from benchlib.campaign.spec import load_campaign_spec

    spec = write_campaign(tmp_path, "galera-3.toml", "t-x", clusters=["galera"], repetitions=1, time_s=10,
                          extra='[history]\nisolation = ["repeatable-read", "snapshot-isolation"]\n'
                                'consistency = ["wsrep_sync_wait=0", "wsrep_sync_wait=1"]\non = "every"\n')
    runs = plan(*load_campaign_spec(spec))
    got = {(r.axes["history"].isolation, r.axes["history"].consistency): r.axes["history"].statements for r in runs}
    assert got[("snapshot-isolation", "wsrep_sync_wait=1")] == ("SET SESSION wsrep_sync_wait = 1",) and len(got) == 4
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-x", clusters=["async"], repetitions=1, time_s=10,
                          extra='[history]\nconsistency = ["causal"]\n')
    with pytest.raises(SpecError, match="'causal' waits for a writer's token"):
        plan(*load_campaign_spec(spec))
