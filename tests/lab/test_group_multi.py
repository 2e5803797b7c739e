"""A Group Replication group in multi-primary mode on real servers: every member a primary, a write on each seen on
the others (``lab check``), writes on several members with their conflicts counted by the clients and the servers,
and a member killed while the others go on writing."""

from __future__ import annotations

import pytest

from benchlib import servers
from benchlib.lab import sql
from benchlib.lab.check import check
from benchlib.lab.spec import parse_spec
from benchlib.store import read_run
from benchlib.sysbench.options import SysbenchOptions
from tests.conftest import EXAMPLES, healthy

LONG_S = 60  # about how long this module's tests take: phase 2 starts the longest first

pytestmark = pytest.mark.skipif(not any(s.flavor == "mysql" for s in servers.found()),
                                reason="no MySQL server (./scripts/bootstrap fetches one)")

# examples/labs/gr-3-multi.toml at a test size: a killed member is expelled about 1 s after the group suspects it
# (member_expel_timeout = 0) instead of about 16 s after with the lab's 5 s
SPEC = (EXAMPLES / "gr-3-multi.toml").read_text().replace('name = "gr-3-multi"', 'name = "t-grm"') + \
    'server = { loose-group_replication_member_expel_timeout = 0 }\n'


@pytest.fixture(scope="module")
def lab(labs):
    return labs.up(parse_spec(SPEC))


@pytest.fixture(autouse=True)
def whole(request):
    """Every test starts from the group whole, whatever the test before it left."""
    if "lab" in request.fixturenames:
        healthy(request.getfixturevalue("lab"), __name__)


def test_every_member_is_a_primary_and_a_write_on_each_is_seen_on_the_others(lab):
    status = {s.name: s for s in lab.health.status()}
    assert [status[f"gr-{i}"].detail["member_role"] for i in (1, 2, 3)] == ["PRIMARY"] * 3
    with lab.connect("gr-2") as conn:
        assert sql.scalar(conn, "SELECT @@group_replication_enforce_update_everywhere_checks") == 1
        assert sql.scalar(conn, "SELECT @@super_read_only") == 0
    result = check(lab)
    assert result.ok, result.problems
    assert set(result.visible_ms["gr"]) == {"gr-2", "gr-3"}
    assert {w: set(seen) for w, seen in result.elsewhere_ms["gr"].items()} == {"gr-2": {"gr-1", "gr-3"},
                                                                               "gr-3": {"gr-1", "gr-2"}}
    assert any(line.startswith("gr: a write on gr-3 became visible on") and "gr-1 after" in line
               for line in result.lines()), result.lines()


def test_writes_on_three_members_conflict_on_shared_rows_and_not_on_their_own(lab, tmp_path):
    """One writer member: no conflict; three each on its own rows: none; three on the same 10 rows: conflicts on
    every member (3101 at commit, mostly; 1180 and 1213 where the applier's lock conflict rolled a local transaction
    back), and on each the server counters that equal what its clients saw."""
    from tests.axes.test_writers import measured_writers

    result, a, records = measured_writers(lab, tmp_path, SPEC, "gr")
    one, shared, own = records[(1, "shared")], records[(3, "shared")], records[(3, "disjoint")]
    assert one["client"]["gr-1"]["errors"] == 0 and one["server"]["gr-1"]["gr_conflicts_detected"] == 0, one
    assert sum(c["errors"] for c in own["client"].values()) == 0, own
    assert sum(s["gr_conflicts_detected"] for s in own["server"].values()) == 0, own
    for node in ("gr-1", "gr-2", "gr-3"):
        client = shared["client"][node]
        assert client["committed"] > 0 and client["errors"] > 0, shared
        assert client.get("e1180", 0) + client.get("e3101", 0) + client.get("e1213", 0) == client["errors"], shared
        # certification's losers (3101) are the member's local rollbacks, and every member's are the group's
        # conflicts; the applier's lock conflicts (1180, 1213) no group counter counts (Handler_rollback counts them
        # all, measured: each error at commit twice, each 1213 once)
        assert {"gr_local_rollback = its clients' 3101 errors",
                "gr_conflicts_detected = the group's 3101 errors"} <= set(shared["reconciled"][node]), shared
    said = a.axis("writers").findings
    assert any(s.startswith("gr, 3 writer nodes on shared keys") and "conflicts per 1,000 commits" in s
               for s in said), said
    q = a.axis("writers").queues  # per writer node: the group's flow control and each member's backlog
    three = q[(q.writer_nodes == 3) & (q.writer_keys == "shared")]
    assert sorted(three.node) == ["gr-1", "gr-2", "gr-3"] and three.queue_mean.notna().all(), q
    assert any("their queues held a mean" in s for s in said), said


def test_a_killed_member_leaves_the_others_writing_and_comes_back_a_primary(lab, tmp_path):
    from benchlib.store import RunWriter
    from tests.axes.test_fault_run import plan
    from benchlib.axes.fault.run import execute_fault_run

    opts = SysbenchOptions(workload="oltp_write_only", tables=2, table_size=2000, threads=2, time_s=14, rate=100)
    w = RunWriter(tmp_path, "m1", {"workload": opts.workload}, secrets=list(lab.creds.passwords.values()))
    run = read_run(execute_fault_run(lab, "gr", opts, w, plan(at_s=3.0)))
    m = run.manifest
    assert m.status == "ok", m.reason
    fault = m.axis("fault")
    assert fault.survivor in ("gr-2", "gr-3"), fault.survivor  # no election: the load moved to another primary
    ledger = run.frames["ledger"]
    after = ledger[(ledger.t_sent_s > fault.happened_s + 0.5) & (ledger.outcome == "acked")]
    assert (after.node == fault.survivor).sum() > 50, ledger.tail()  # the ledger's writer went on on a survivor
    assert fault.ledger["lost"] == 0 and not m.audit["mismatches"]
    status = {s.name: s for s in lab.health.status()}
    assert [status[f"gr-{i}"].detail["member_role"] for i in (1, 2, 3)] == ["PRIMARY"] * 3
