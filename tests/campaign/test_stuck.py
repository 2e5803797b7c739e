"""What a hung run names (benchlib.campaign.stuck): on a real server, a statement waiting on a row another
transaction holds is found with its node, its wait and its text; a short one is not; a node that does not answer is
skipped."""

from __future__ import annotations

import threading
import time

import pymysql

from benchlib.campaign.stuck import longest_statements
from tests.conftest import lab_of

solo_lab = lab_of("single.toml", "t-stuck")


def test_a_statement_waiting_on_a_lock_is_named_with_its_node_and_wait(solo_lab):
    holder, waiter = solo_lab.connect("solo-1"), solo_lab.connect("solo-1")
    try:
        with holder.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS benchlib")
            cur.execute("CREATE TABLE IF NOT EXISTS benchlib.stuck (k INT PRIMARY KEY, v INT) ENGINE=InnoDB")
            cur.execute("REPLACE INTO benchlib.stuck VALUES (1, 0)")
            holder.commit()
            cur.execute("START TRANSACTION")
            cur.execute("UPDATE benchlib.stuck SET v = 1 WHERE k = 1")

        def wait() -> None:
            try:
                with waiter.cursor() as c:
                    c.execute("SET SESSION innodb_lock_wait_timeout = 10")
                    c.execute("UPDATE benchlib.stuck SET v = 2 WHERE k = 1")
            except pymysql.MySQLError:
                pass

        t = threading.Thread(target=wait, daemon=True)
        t.start()
        assert longest_statements(solo_lab.connect, ["solo-1"], 5) == ""  # not waiting that long yet
        time.sleep(2.5)
        said = longest_statements(solo_lab.connect, ["solo-1", "nowhere-1"], 2)
        assert said.startswith("solo-1: 1 UPDATE benchlib.stuck SET v = 2 WHERE k = 1 in '"), said
        assert said.endswith((" for 2 s", " for 3 s")), said
    finally:
        holder.rollback()
        t.join(15)
        holder.close()
        waiter.close()
