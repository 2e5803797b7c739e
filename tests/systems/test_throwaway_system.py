"""A system of one's own is one package (``tests/systems/tiny``) with one entry point, as an axis is
(``tests/axes/uptime``): both installed the way a third party's package is, a campaign runs with them on a lab that
names the throwaway system (a remote lab spec over a local MariaDB server), and everything from the lab check to the
report knows the system by its own facts; nothing else in benchlib names either."""

from __future__ import annotations

import secrets

import pytest

from benchlib import catalogue
from benchlib.axis import AXES
from benchlib.campaign.runner import run_campaign
from benchlib.analysis.campaign import analyze
from benchlib.charts.theme import topology_color
from benchlib.report import findings, publish
from benchlib.store import read_manifest
from benchlib.systems import base as systems
from tests.campaigns import campaign_toml
from tests.plugins import installed
from tests.remote.hosts import create_account


@pytest.fixture
def tiny(tmp_path_factory):
    with installed(tmp_path_factory.mktemp("site"), catalogue.SYSTEMS, "tiny", "tests.systems.tiny.facts:FACTS") as facts:
        try:
            yield facts
        finally:
            catalogue.TOPOLOGIES.unregister("tiny")
    assert "tiny" not in systems.SYSTEMS  # what acts on its servers went with its facts


@pytest.fixture
def uptime(tmp_path_factory):
    with installed(tmp_path_factory.mktemp("site"), AXES, "uptime", "tests.axes.uptime:AXIS") as axis:
        yield axis


def test_the_registry_finds_what_acts_beside_its_facts(tiny):
    assert catalogue.of("tiny").title == "Tiny replication" and catalogue.topology("tiny").color == "#AA3377"
    assert systems.get("tiny").kinds == {"mariadb"} and catalogue.SYSTEMS.origin["tiny"].startswith("tests.systems")
    assert topology_color("tiny") == "#AA3377" and "tiny" in catalogue.TOPOLOGIES


def test_a_campaign_runs_on_a_throwaway_system_with_a_throwaway_axis(labs, tmp_path, tiny, uptime, monkeypatch):
    from benchlib.labs import open_lab
    from benchlib.remote.spec import load_remote_spec
    from tests.conftest import example_spec

    lab = labs.up(example_spec("single.toml", "t-tiny"))
    node = lab.layout.cluster_nodes("solo")[0]
    password = secrets.token_urlsafe(16)
    create_account(lab, node.name, "tbench", password)
    monkeypatch.setenv("BENCHLIB_TEST_TINY_PASSWORD", password)
    (tmp_path / "tiny.toml").write_text(
        'kind = "remote"\nname = "tiny-lab"\n[credentials]\nuser = "tbench"\npassword_env = "BENCHLIB_TEST_TINY_PASSWORD"\n'
        f'[clusters.solo]\nsystem = "tiny"\nnodes = [{{ name = "{node.name}", host = "127.0.0.1", port = {node.port}, '
        'role = "leader" }]\n')
    remote, _ = open_lab(load_remote_spec(tmp_path / "tiny.toml"))
    try:
        checked = remote.health.check(clients=False)
        assert checked.ok, checked
    finally:
        remote.close()

    (tmp_path / "c.toml").write_text(campaign_toml("t-tiny", "tiny.toml", clusters=["solo"], repetitions=1, time_s=2,
                                                   tail='[uptime]\nlabel = ["a", "b"]\n'))
    result = run_campaign(tmp_path / "c.toml", runs_dir=tmp_path / "runs", progress="none")
    assert result.counts == {"ok": 2}, result.table()
    m = read_manifest(result.path / result.plan[0].run_id)
    assert m.lab.facts.system == "tiny" and m.lab.facts.topology == "tiny" and m.as_dict()["axes"]["uptime"]["reads"] == 2
    a = analyze(result.path)
    assert set(a.runs.system) == {"tiny"} and set(a.runs.uptime_label) == {"a", "b"}
    assert (a.measures("uptime").grew_s >= 1).all()
    assert findings(a, result.path)["uptime"]
    page = publish(result.path, notebooks=False, static=False).page.read_text()
    assert "#aa3377" in page.lower()  # its charts in the colour its facts declare
