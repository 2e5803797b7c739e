"""Accounts, passwords and listening addresses of a lab."""

from __future__ import annotations

import subprocess

import pytest

from benchlib.lab import secrets, sql
from tests.conftest import lab_of


lab = lab_of("demo.toml", "t-sec")


def test_no_anonymous_or_passwordless_account(lab):
    for node in lab.layout.nodes.values():
        with lab.connect(node) as conn:
            rows = sql.query(conn, "SELECT User, Host, JSON_VALUE(Priv, '$.authentication_string') AS auth "
                                   "FROM mysql.global_priv")
        accounts = {(r["User"], r["Host"]) for r in rows}
        assert ("", "localhost") not in accounts and not any(u == "" for u, _ in accounts)
        for r in rows:
            if r["User"] == "mariadb.sys":
                continue  # locked, no login
            assert r["auth"], f"{node.name}: {r['User']}@{r['Host']} has no password"
        assert {u for u, _ in accounts} == {"root", "bench", "repl", "mariadb.sys"}
        assert {h for u, h in accounts if u == "root"} == {"localhost"}


def test_secret_file_is_private_and_passwords_stay_out_of_argv_and_configs(lab):
    path = secrets.secrets_path(lab.dir)
    assert path.stat().st_mode & 0o777 == 0o600
    passwords = list(secrets.load(lab.dir).passwords.values())
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    for node in lab.layout.nodes.values():
        text = node.cnf.read_text() + node.error_log.read_text()
        assert not any(p in text for p in passwords)
    assert not any(p in ps for p in passwords)
    assert "***" in repr(secrets.load(lab.dir))


def test_servers_listen_on_loopback_only(lab):
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    pids = {str(p) for p in lab.record.pids.values()}
    mine = [line for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]
    assert mine
    for line in mine:
        local = line.split()[3]
        assert local.startswith("127.0.0.1:"), line


def test_wrong_password_is_refused(lab):
    import pymysql

    node = lab.node("async-1")
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host="127.0.0.1", port=node.port, user="bench", password="wrong", connect_timeout=3)
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host="127.0.0.1", port=node.port, user="root", password="", connect_timeout=3)


def test_a_reopened_lab_reaches_the_same_nodes(lab):
    """LocalLab.open rebuilds the layout from the saved spec: the spec's cluster order (not alphabetical) sets the ports."""
    from benchlib.lab.lab import LocalLab

    assert list(lab.spec.clusters) == ["async", "semisync", "galera"]
    again = LocalLab.open("t-sec")
    assert {n: p.port for n, p in again.layout.nodes.items()} == {n: p.port for n, p in lab.layout.nodes.items()}
    for name in ("semisync-1", "galera-2"):
        with again.connect(name) as conn:
            assert sql.query(conn, "SELECT @@port AS p")[0]["p"] == lab.node(name).port
