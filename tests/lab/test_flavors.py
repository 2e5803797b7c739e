"""Server flavours are data: a flavour registered from outside ``benchlib.lab`` runs a real lab, and nothing in
``benchlib/lab/`` asks which flavour it has."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from benchlib.errors import SpecError
from benchlib.lab import flavors, sql
from benchlib.lab.spec import parse_spec

LAB = Path(__file__).resolve().parents[2] / "benchlib" / "lab"


def test_no_flavour_name_is_tested_in_the_lab_package():
    """MariaDB against MySQL is the flavour's data, never an ``== "mysql"`` (or ``in ("mariadb", ...)``) in lab/."""
    names = "|".join(["mariadb", "mysql", "pxc", "percona"])  # flavours (topology names are the topology registry's)
    test = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)|\bin\s*\(\s*["']({names})["']""")
    found = [f"{p.name}:{i}: {line.strip()}" for p in sorted(LAB.glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if test.search(line)]
    assert not found, found


def test_an_unknown_system_is_refused_naming_the_flavours():
    with pytest.raises(SpecError) as err:
        parse_spec('name = "t-x"\n[clusters.a]\ntopology = "async"\nsystem = "postgres"\n')
    assert "unknown system 'postgres': a local cluster runs one of mariadb, mysql" in err.value.render()


def test_a_flavour_says_what_it_does_not_run():
    with pytest.raises(SpecError, match="system 'mariadb' has no topology 'group_replication': Group Replication is "
                                        "MySQL's"):
        parse_spec('name = "t-x"\n[clusters.g]\ntopology = "group_replication"\nsystem = "mariadb"\n')


@pytest.fixture
def copied_flavor():
    """A throwaway flavour registered the way a user's plugin would: MariaDB's server under another name, with
    its options in the ``[server]`` section (which mariadbd also reads) and replicas that run no triggers."""
    flavor = dataclasses.replace(flavors.get("mariadb"), name="mariadbx", title="MariaDB (test flavour)",
                                 section="server", replica_triggers=False)
    flavors.FLAVORS.register(flavor)
    yield flavor
    flavors.FLAVORS.unregister(flavor.name)


def test_a_registered_flavour_runs_a_real_lab_without_editing_the_lab_package(copied_flavor, fresh_labs):
    spec = parse_spec('name = "t-flavor"\n[clusters.a]\ntopology = "async"\nsystem = "mariadbx"\nreplicas = 1\n')
    assert spec.system_of("a") == "mariadb"  # its topologies map onto the systems benchlib knows
    lab = fresh_labs.up(spec)
    assert lab.flavor("a") is copied_flavor
    assert all(n.cnf.read_text().splitlines()[1] == "[server]" for n in lab.layout.nodes.values())
    assert not lab.hooks.heartbeat_triggers("a")
    with lab.connect("a-1") as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib", "CREATE TABLE benchlib.f (id INT PRIMARY KEY)",
                    "INSERT INTO benchlib.f VALUES (7)")
        position = sql.scalar(conn, copied_flavor.replication.position)
    with lab.connect("a-2") as conn:
        assert sql.scalar(conn, copied_flavor.replication.wait, (position, 10)) == 0
        assert sql.scalar(conn, "SELECT id FROM benchlib.f") == 7
    assert lab.health.check().ok
    assert lab.hooks.facts("a").system == "mariadb" and lab.hooks.facts("a").server.startswith("MariaDB ")
