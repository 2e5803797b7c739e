"""What every lab promises, whatever its server flavour: one suite parametrized over the flavours (MariaDB: the demo
lab's async, semi-sync and Galera clusters; MySQL: an async cluster): accounts and passwords, loopback only, secrets
out of files and argv, replication, heal, and a lab reopened from its saved spec."""

from __future__ import annotations

import subprocess
import time

import pymysql
import pytest

from benchlib import servers
from benchlib.lab import secrets, sql
from tests.conftest import example_spec, kill9

HAS_MYSQL = any(s.flavor == "mysql" for s in servers.found())
#: flavour -> (example lab, its name here)
LABS = {"mariadb": ("demo.toml", "t-sec"), "mysql": ("mysql-async-1p2r.toml", "t-secmy")}


@pytest.fixture(scope="module", params=[
    pytest.param("mariadb", id="mariadb"),
    pytest.param("mysql", id="mysql", marks=pytest.mark.skipif(not HAS_MYSQL, reason="no MySQL server"))])
def lab(request, labs):
    file, name = LABS[request.param]
    return labs.up(example_spec(file, name))


def _accounts(conn) -> list[dict]:
    """(User, Host, auth, locked) of every account: MariaDB keeps them in mysql.global_priv, MySQL in mysql.user."""
    try:
        return sql.query(conn, "SELECT User, Host, JSON_VALUE(Priv, '$.authentication_string') AS auth, "
                               "JSON_VALUE(Priv, '$.account_locked') AS locked FROM mysql.global_priv")
    except pymysql.err.ProgrammingError:
        return sql.query(conn, "SELECT User, Host, authentication_string AS auth, account_locked AS locked "
                               "FROM mysql.user")


def test_no_anonymous_or_passwordless_account(lab):
    for node in lab.layout.nodes.values():
        with lab.connect(node) as conn:
            rows = _accounts(conn)
        assert not any(r["User"] == "" for r in rows), node.name
        server = [r for r in rows if r["User"].startswith(("mysql.", "mariadb."))]  # the server's own: no login
        own = [r for r in rows if r not in server]
        assert all(r["Host"] == "localhost" for r in server), node.name
        for r in own:
            assert r["auth"], f"{node.name}: {r['User']}@{r['Host']} has no password"
        assert {r["User"] for r in own} == {"root", "bench", "repl"}, node.name
        assert {r["Host"] for r in own if r["User"] == "root"} == {"localhost"}, node.name


def test_secrets_are_private_and_stay_out_of_argv_files_and_logs(lab):
    path = secrets.secrets_path(lab.dir)
    assert path.stat().st_mode & 0o777 == 0o600
    passwords = list(secrets.load(lab.dir).passwords.values())
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not any(p in ps for p in passwords)
    for node in lab.layout.nodes.values():
        assert not node.init_file.exists()  # a first start's init file (the passwords) is gone
        text = node.cnf.read_text() + node.error_log.read_text()
        assert not any(p in text for p in passwords), node.name
    assert "***" in repr(secrets.load(lab.dir))


def test_servers_listen_on_loopback_only(lab):
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    pids = {str(p) for p in lab.record.pids.values()}
    mine = [line for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]
    assert len(mine) >= len(pids)
    for line in mine:
        assert line.split()[3].startswith("127.0.0.1:"), line


def test_a_wrong_or_empty_password_is_refused(lab):
    node = next(iter(lab.layout.nodes.values()))
    for user, password in (("bench", "wrong"), ("root", "")):
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host="127.0.0.1", port=node.port, user=user, password=password, connect_timeout=3)


def _replicates(lab, cluster: str, value: int) -> None:
    nodes = [n.name for n in lab.cluster_nodes(cluster)]
    with lab.connect(nodes[0]) as conn:
        sql.execute(conn, "CREATE DATABASE IF NOT EXISTS benchlib",
                    "CREATE TABLE IF NOT EXISTS benchlib.conformance (id INT PRIMARY KEY)",
                    f"INSERT INTO benchlib.conformance VALUES ({value})")
    deadline = time.monotonic() + 30
    for n in nodes[1:]:
        while True:
            with lab.connect(n) as conn:
                try:
                    if sql.query(conn, "SELECT id FROM benchlib.conformance WHERE id = %s", (value,)):
                        break
                except pymysql.err.ProgrammingError as exc:  # the replica has not applied the CREATE TABLE yet
                    if exc.args[0] != 1146:
                        raise
            assert time.monotonic() < deadline, f"{n} has not applied the write of {nodes[0]}"
            time.sleep(0.2)


def test_every_cluster_replicates_a_write_to_every_node(lab):
    for cluster in list(lab.spec.clusters):
        _replicates(lab, cluster, 1)


def test_a_killed_node_is_healed_back_into_its_cluster(lab):
    cluster = list(lab.spec.clusters)[0]
    victim = lab.cluster_nodes(cluster)[-1].name
    kill9(lab, victim)
    assert lab.health.broken() == [victim]
    assert lab.health.heal(timeout=120) == [victim]
    assert lab.health.broken() == [] and lab.health.check().ok, lab.health.check().problems
    _replicates(lab, cluster, 2)  # and it replicates again


def test_a_reopened_lab_reaches_the_same_nodes(lab):
    """LocalLab.open rebuilds the layout from the saved spec: the spec's cluster order (not alphabetical) sets the
    ports."""
    from benchlib.lab.lab import LocalLab

    again = LocalLab.open(lab.name)
    assert list(again.spec.clusters) == list(lab.spec.clusters)
    assert {n: p.port for n, p in again.layout.nodes.items()} == {n: p.port for n, p in lab.layout.nodes.items()}
    for name in lab.layout.nodes:
        with again.connect(name) as conn:
            assert sql.query(conn, "SELECT @@port AS p")[0]["p"] == lab.node(name).port
