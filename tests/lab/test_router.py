"""MySQL Router's InnoDB Cluster metadata as benchlib writes it, and finding Router (no server started: a group
fronted by Router is tests/lab/test_mysql.py's)."""

from __future__ import annotations

import pytest

from benchlib.errors import MissingDependencyError
from benchlib.lab.router import METADATA_VERSION, Member, metadata_statements
from benchlib.lab.spec import parse_spec
from benchlib.servers import router as router_finder

MEMBERS = [Member(f"gr-{i}", "127.0.0.1", 3300 + 10 * i, f"00000000-0000-0000-0000-00000000000{i}", i,
                  f"127.0.0.1:{3300 + 10 * i}") for i in (1, 2, 3)]


def test_the_metadata_lists_the_group_and_each_member_by_its_own_uuid():
    stmts = metadata_statements("gr", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", MEMBERS)
    text = [s for s, _ in stmts]
    assert text[0].startswith("DROP DATABASE IF EXISTS mysql_innodb_cluster_metadata")  # written again whole
    version = next(s for s in text if "schema_version" in s)
    assert version.endswith("SELECT " + ", ".join(map(str, METADATA_VERSION))) and METADATA_VERSION[0] == 2
    # every view Router reads at metadata 2.0, and the routers table it registers itself in
    for name in ("v2_clusters", "v2_gr_clusters", "v2_instances", "v2_this_instance", "v2_routers", ".routers ("):
        assert any(name in s for s in text), name
    this = next(s for s in text if "v2_this_instance" in s)
    assert "@@" not in this and "variable_name = 'server_uuid'" in this  # a view may not read a system variable
    inserts = [(s, a) for s, a in stmts if s.startswith("INSERT")]
    cluster, instances = inserts[0], inserts[1:]
    assert "clusters" in cluster[0] and cluster[1] == ("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "gr", "pm",
                                                       "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee")
    assert [a[2] for _, a in instances] == [m.server_uuid for m in MEMBERS]
    assert [a[4] for _, a in instances] == ["127.0.0.1:3310", "127.0.0.1:3320", "127.0.0.1:3330"]  # mysqlClassic
    assert "not by MySQL Shell" in cluster[0]  # labelled honestly in the metadata itself
    multi = metadata_statements("gr", "g", MEMBERS, multi_primary=True)
    assert next(a for s, a in multi if "INTO mysql_innodb_cluster_metadata.clusters" in s)[2] == "mm"


def test_router_is_a_group_option_only():
    spec = parse_spec('name = "r"\n[clusters.gr]\ntopology = "group_replication"\nrouter = true\n')
    assert spec.clusters["gr"].router
    with pytest.raises(Exception, match="router"):
        parse_spec('name = "r"\n[clusters.a]\ntopology = "async"\nrouter = true\n')


def test_no_router_anywhere_gets_one_message(monkeypatch):
    monkeypatch.setattr(router_finder, "_in_prefix", lambda server: None)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingDependencyError) as err:
        router_finder.find_router()
    assert "MySQL Router (mysqlrouter) not found" in err.value.message and "bootstrap" in err.value.hint
