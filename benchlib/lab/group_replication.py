"""Group Replication as a lab topology: a group bootstrapped by node 1 and joined by the others, healed after kills.

Distributed recovery brings a restarted member back (incrementally from a donor's binary log, or by clone when
no donor has what it misses: the cloned server shuts down, and the lab starts it again and makes it safe to crash,
``benchlib.lab.group_cloning``); a group that lost its majority is forced to the survivors (or, when they lack what
a restarted member holds, formed again around that member), a member holding transactions the group lacks is rebuilt by clone, a whole group killed is bootstrapped
again, and a single-primary group gets its intended primary (node 1) back after a failover. A group with
``router = true`` has MySQL Router in front of it (``benchlib.lab.router``): its metadata written once the group is
formed, and again after a heal when a member's ``server_uuid`` changed; Router started again if it is not running.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pymysql

from benchlib.errors import LabError, ReplicationError
from benchlib.lab import router, sql
from benchlib.lab.base import Promotion
from benchlib.lab.group_cloning import finish_clone
from benchlib.lab.group_forcing import force
from benchlib.lab.group_joining import Joining
from benchlib.lab.layout import NodePlan
from benchlib.lab.node import log_tail
from benchlib.lab.topology import Topology, register

__all__ = ["GroupReplication"]


@register
class GroupReplication(Topology):
    """A MySQL group: node 1 bootstraps it, the others join (distributed recovery from a donor); in a
    single-primary group node 1 is the intended primary, and heal gives it the role back."""

    name = "group_replication"

    MEMBERS = ("SELECT MEMBER_ID, MEMBER_HOST, MEMBER_PORT, MEMBER_STATE, MEMBER_ROLE "
               "FROM performance_schema.replication_group_members")
    START_S = 150.0  # START GROUP_REPLICATION waits up to 60 s for its view: let the server say why it failed
    #: a setting such as ``applier_threads`` has a member leave the group and join it again: on a loaded host the
    #: join outlasts the usual 60 s read timeout
    SETTINGS_READ_S = START_S

    def _recovery_account(self, conn) -> None:
        with conn.cursor() as cur:
            cur.execute("CHANGE REPLICATION SOURCE TO SOURCE_USER='repl', SOURCE_PASSWORD=%s "
                        "FOR CHANNEL 'group_replication_recovery'", (self.ctx.secret_of("repl"),))

    def _address(self, node: NodePlan) -> str:
        """Where the group reaches ``node`` (its group_replication_local_address)."""
        return f"{node.listen_host}:{node.port if self.spec.communication_stack == 'MYSQL' else node.gr_port}"

    def _start(self, node: NodePlan, bootstrap: bool, members: list[NodePlan] = (), retries: int = 1) -> None:
        """START GROUP_REPLICATION on ``node``: it bootstraps the group, or joins through ``members`` only (the
        nodes ONLINE now: a joiner that asks another joiner to add it waits 10 s for nothing) and recovers. A join is
        done once the member is ONLINE: START GROUP_REPLICATION returns about a second after that (the plugin's own
        wait), which is left to finish on a thread of its own (``Joining``) instead of being waited for."""
        Joining.settle([node])
        conn = self.connect(node, read_timeout=self.START_S)
        try:
            self._recovery_account(conn)
            if members:
                with conn.cursor() as cur:
                    cur.execute("SET GLOBAL group_replication_group_seeds = %s",
                                (",".join(self._address(m) for m in members),))
            if bootstrap:
                sql.execute(conn, "SET GLOBAL group_replication_bootstrap_group = ON")
                try:
                    sql.execute(conn, "START GROUP_REPLICATION")
                except pymysql.err.MySQLError as exc:
                    raise self._failure(node, f"START GROUP_REPLICATION failed: {exc.args[-1] if exc.args else exc}") \
                        from None
                finally:
                    sql.execute(conn, "SET GLOBAL group_replication_bootstrap_group = OFF")
                return
        except BaseException:
            conn.close()
            raise
        finally:
            if bootstrap:
                conn.close()
        self._until_recovered(node, members, Joining(node, conn), retries)

    CLONE_DONE = "Clone shutting down server as RESTART failed"  # MY-013462: no supervisor to restart it

    @staticmethod
    def _failure(node: NodePlan, what: str) -> ReplicationError:
        return ReplicationError(f"{node.name}: {what}",
                                detail=f"  last lines of {node.error_log}:\n{log_tail(node.error_log, 8)}")

    @staticmethod
    def _log_tail(node: NodePlan) -> str:
        try:
            with open(node.error_log, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - 65536))
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def _cloned(self, node: NodePlan) -> bool:
        """Did distributed recovery clone ``node`` and shut it down since it last started (mysqld cannot
        restart itself without a supervisor)?"""
        tail = self._log_tail(node)
        return tail.rfind(self.CLONE_DONE) > tail.rfind("ready for connections")

    DIVERGED = "more executed transactions than those present in the group"  # MY-011526: refused to join

    def _diverged(self, node: NodePlan) -> bool:
        """Was ``node`` refused by the group since it last started, for transactions the group does not have?"""
        tail = self._log_tail(node)
        return tail.rfind(self.DIVERGED) > tail.rfind("ready for connections")

    def _rebuild(self, node: NodePlan) -> None:
        """A member holding transactions the group lacks cannot join: none was acknowledged (a commit needs the
        group's majority, and the group has the majority's), so the lab discards them as an operator re-provisioning
        the member would: the member gets a fresh datadir (a lab that cannot: its GTID history is reset) and
        distributed recovery clones a donor's data over it. A clone over a member's own old data left pages of its
        old life newer than the clone's log (MySQL 9.7): killed after it joined, such a member crashed at every start
        ("log sequence number ... is in the future", then "Assertion failure: trx0purge.cc:180")."""
        Joining.settle([node])
        with self.connect(node, read_timeout=self.START_S) as conn:
            extra = sql.scalar(conn, "SELECT @@GLOBAL.gtid_executed")
            if self.ctx.renew is not None:
                sql.execute(conn, "SHUTDOWN")
            else:
                sql.execute(conn, "STOP GROUP_REPLICATION", "SET GLOBAL super_read_only = OFF",
                            "RESET BINARY LOGS AND GTIDS")
        if self.ctx.renew is not None:
            self.ctx.renew(node)
        with self.connect(node, read_timeout=self.START_S) as conn:
            sql.execute(conn, "SET GLOBAL group_replication_clone_threshold = 1")  # this start only: not persisted
        self.__dict__.setdefault("rebuilt", set()).add(node.name)
        self.__dict__.setdefault("notes", {})[node.name] = (
            f"{node.name} held transactions the group lacked ({extra}): discarded, "
            + ("the member given a fresh datadir and recovered from the group" if self.ctx.renew is not None
               else "its GTID history reset and a donor cloned over its data"))

    CLONING = "SELECT STATE FROM performance_schema.clone_status"  # 'In Progress' until the restarted server recovered

    def _member_state(self, node: NodePlan) -> tuple[str | None, bool]:
        """``node``'s own member state (None: it does not answer: down, starting or shutting down) and whether a
        clone is in progress on it (copying a donor's data, or about to shut the server down to finish)."""
        try:
            with self.connect(node, read_timeout=10.0) as conn:
                state = sql.scalar(conn, "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
                                         "WHERE MEMBER_ID = @@server_uuid") or "OFFLINE"
                try:
                    cloning = sql.scalar(conn, self.CLONING) == "In Progress"
                except pymysql.err.ProgrammingError:  # no clone plugin: never cloned
                    cloning = False
                return state, cloning
        except (LabError, pymysql.err.MySQLError):
            return None, False

    STOPPED = ("Shutdown complete", "got signal")  # the server's last line when it stops, or when it crashed

    def _stopped(self, node: NodePlan) -> bool:
        """Has ``node``'s server stopped or crashed since it last started (its error log's last word)?"""
        tail = self._log_tail(node)
        return max(tail.rfind(s) for s in self.STOPPED) > tail.rfind("ready for connections")

    def _until_recovered(self, node: NodePlan, members: list[NodePlan], joining: "Joining", retries: int,
                         timeout: float = 600.0) -> None:
        """Wait while a joining ``node`` recovers until ONLINE. A member cloned from a donor shuts down (nothing
        restarts it): it is started again and joins again, incrementally. While a clone is in progress, or the
        server does not answer (a clone's shutdown), nothing is sent to it: a statement then dies with its
        connection. A join that failed (on a loaded machine the view change can time out) is tried ``retries`` more
        times."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            failed = joining.failed()
            state, cloning = self._member_state(node)
            if state == "ONLINE":
                self.__dict__.get("rebuilt", set()).discard(node.name)
                return
            if cloning or (state in (None, "ERROR", "OFFLINE") and joining.running()):
                time.sleep(0.05)  # START GROUP_REPLICATION has not said how it ended yet, or a clone goes on
                continue
            if state is None:
                if self._cloned(node):
                    self.__dict__.setdefault("cloned", set()).add(node.name)  # rejoin_path says so
                    finish_clone(self, node)  # started, shut down cleanly, started: safe to crash
                    return self._start(node, False, members, retries)
                if self._stopped(node):
                    raise self._failure(node, "stopped while joining the group" if self.STOPPED[0] in
                                        self._log_tail(node).rsplit("ready for connections", 1)[-1]
                                        else "crashed while joining the group")
                time.sleep(0.1)  # shutting down, or starting: look again
                continue
            if state in ("ERROR", "OFFLINE") and (failed or state == "ERROR"):
                if self._diverged(node) and node.name not in self.__dict__.get("rebuilt", set()):
                    self._rebuild(node)
                    return self._start(node, False, members, retries)
                if retries:
                    try:
                        with self.connect(node, read_timeout=self.START_S) as conn:
                            sql.execute(conn, "STOP GROUP_REPLICATION")
                    except (LabError, pymysql.err.OperationalError):
                        continue  # the server went away meanwhile (a clone's shutdown): look again
                    return self._start(node, False, members, retries - 1)
                raise self._failure(node, f"could not join the group ({failed or 'member state ERROR'})")
            time.sleep(0.1)
        raise self._failure(node, f"not ONLINE within {timeout:.0f} s of joining")

    def form(self, timeout: float) -> None:
        """Node 1 bootstraps the group; the others join as soon as node 1 is ONLINE (its START GROUP_REPLICATION
        returns about a second later), one after another as each enters the group's view (``_join``)."""
        first = self.nodes[0]
        with ThreadPoolExecutor(max_workers=1) as pool:
            boot = pool.submit(self._start, first, True)
            with self.connect(first) as conn:
                self._poll(timeout, lambda: self._online(conn, 1) if not boot.done() else (True, ""),
                           f"{first.name} bootstrapping the group")
            if boot.done():
                boot.result()  # raises what failed
            self._join(self.nodes[1:], [first])
            boot.result()
        self.wait_ready(timeout)
        router.ensure(self, timeout)

    def _join(self, nodes: list[NodePlan], members: list[NodePlan]) -> None:
        """``nodes`` join through ``members``, each as soon as the one before it is in the group's view (still
        recovering, most likely): a group admits one joiner at a time, and a joiner it refuses meanwhile ("Error
        on opening a connection to peer node ... when joining a group") tries again only about 5 s later."""
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            started = []
            for i, n in enumerate(nodes):
                started.append(pool.submit(self._start, n, False, members))
                if i < len(nodes) - 1:
                    self._until_in_view(n, members[0], started[-1])
            for f in started:
                f.result()

    def _until_in_view(self, node: NodePlan, member: NodePlan, joining: Any, timeout: float = 30.0) -> None:
        """Until ``member`` lists ``node`` in its group (any state), or ``node``'s join is over (it failed: its
        own error is raised by whoever waits for it), or ``timeout`` (the next joiner goes ahead)."""
        where = (node.listen_host, node.port)
        deadline = time.monotonic() + timeout
        with self.connect(member) as conn:
            while time.monotonic() < deadline and not joining.done():
                try:
                    if any(self._where(r) == where for r in self.members(conn)):
                        return
                except pymysql.err.MySQLError:
                    return
                time.sleep(0.05)

    def members(self, conn) -> list[dict[str, Any]]:
        return sql.query(conn, self.MEMBERS)

    def _online(self, conn, want: int) -> tuple[bool, str]:
        try:
            rows = self.members(conn)
        except pymysql.err.MySQLError as exc:
            return False, str(exc)
        online = [r for r in rows if r["MEMBER_STATE"] == "ONLINE"]
        states = ", ".join(f"{r['MEMBER_HOST']}:{r['MEMBER_PORT']} {r['MEMBER_STATE']}" for r in rows)
        return len(online) == want, states or "not in a group"

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            with self.connect(node) as conn:
                self._poll(max(0.5, deadline - time.monotonic()), lambda: self._online(conn, len(self.nodes)),
                           f"{node.name} seeing {len(self.nodes)} members ONLINE")

    def restart_order(self, dead):
        alive = [n for n in self.nodes if n not in dead]
        if alive:
            return [dead]
        return [[self.nodes[0]], [n for n in dead if n is not self.nodes[0]]]  # the whole group: bootstrap again

    def apply_setting(self, key: str, value: Any, nodes: list[NodePlan]) -> None:
        Joining.settle(self.nodes)  # a setting may stop and start the group on a member
        super().apply_setting(key, value, nodes)

    def before_restart(self, dead, timeout):
        """Survivors left without a majority form the group on their own before the dead start again
        (``benchlib.lab.group_forcing``): no restarted member meets a survivor still blocked on its old
        incarnation."""
        alive = [n for n in self.nodes if n not in dead and self._is_member(n)]
        if alive and len(alive) * 2 <= len(self.nodes):
            self._drop_old_incarnations(dead, alive, timeout)

    def after_group(self, group, timeout):
        Joining.settle(self.nodes)
        members = [n for n in self.nodes if n not in group and self._is_member(n)]
        if not members and self.nodes[0] in group:
            self._start(self.nodes[0], bootstrap=True)  # the whole group was down: node 1 bootstraps it again
            group, members = [n for n in group if n is not self.nodes[0]], [self.nodes[0]]
        elif members and len(members) * 2 <= len(self.nodes) and (lead := self._ahead(members, group)) is not None:
            self._reform(lead, members)
            group, members = [n for n in self.nodes if n is not lead], [lead]
        else:
            self._drop_old_incarnations(group, members, timeout)
        self._join(group, members)

    def _ahead(self, survivors: list[NodePlan], restarted: list[NodePlan]) -> NodePlan | None:
        """The restarted node whose executed transactions include every node's, when the survivors (no majority of the
        group) lack some of its (a majority committed them after the survivors were cut off): None when a survivor
        has them all."""
        nodes = survivors + restarted
        sets = {}
        for n in nodes:
            with self.connect(n) as conn:
                sets[n.name] = sql.scalar(conn, "SELECT @@GLOBAL.gtid_executed") or ""
        with self.connect(survivors[0]) as conn:
            def covers(n: NodePlan) -> bool:
                return all(sql.scalar(conn, "SELECT GTID_SUBSET(%s, %s)", (sets[o.name], sets[n.name])) for o in nodes)

            if any(covers(n) for n in survivors):
                return None
            return next((n for n in restarted if covers(n)), None)

    def _reform(self, lead: NodePlan, survivors: list[NodePlan]) -> None:
        """Form the group again around ``lead``: forcing the survivors' minority on the group would drop what the
        majority committed after they were cut off (and no member holding it could join again)."""
        for m in survivors:
            with self.connect(m, read_timeout=self.START_S) as conn:
                sql.execute(conn, "STOP GROUP_REPLICATION")
        self._start(lead, bootstrap=True)
        self.__dict__["led"] = (lead.name, f"the group formed again around {lead.name} (the surviving "
                                           f"{', '.join(m.name for m in survivors)} lacked transactions it held)")

    @staticmethod
    def _where(row: dict[str, Any]) -> tuple[str, int]:
        return row["MEMBER_HOST"], int(row["MEMBER_PORT"])

    def _drop_old_incarnations(self, restarted: list[NodePlan], members: list[NodePlan], timeout: float) -> None:
        """Before a restarted member joins again, the group must have expelled its killed incarnation (a join
        while the group still lists it times out waiting for its view). The survivors expel it once they have
        suspected it for ``group_replication_member_expel_timeout``; survivors left without a majority cannot,
        so they are forced to a group of themselves (``group_replication_force_members``, as an operator would)."""
        if not members:
            return
        gone = {(n.listen_host, n.port) for n in restarted}
        survivor = members[0]

        def expelled() -> tuple[bool, str]:
            rows = self.members(conn)
            stale = [r for r in rows if self._where(r) in gone]
            unreachable = [r for r in rows if r["MEMBER_STATE"] == "UNREACHABLE"]
            if stale and len(unreachable) * 2 >= len(rows) and all(r in unreachable for r in stale):
                force(self, members)  # no majority left: the survivors form the group on their own
            states = ", ".join(f"{h}:{p} {r['MEMBER_STATE']}" for r in stale for h, p in [self._where(r)])
            return not stale, f"{survivor.name} still lists {states}"

        with self.connect(survivor) as conn:
            self._poll(timeout, expelled, f"the group expelling the killed {', '.join(n.name for n in restarted)}")

    def _is_member(self, node: NodePlan) -> bool:
        try:
            with self.connect(node) as conn:
                return sql.scalar(conn, "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
                                        "WHERE MEMBER_ID = @@server_uuid") == "ONLINE"
        except (LabError, pymysql.err.MySQLError):  # down, or not answering: not a member to join through
            return False

    def force_full_transfer(self, node, survivors):
        """The survivors purge their binary logs: what the node lacks is no longer there to send, so distributed
        recovery clones a donor instead."""
        for m in survivors:
            with self.connect(m) as conn:
                sql.execute(conn, "FLUSH BINARY LOGS")
                sql.execute(conn, "PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 SECOND")
        return f"binary logs purged on {', '.join(m.name for m in survivors)} (incremental recovery impossible: clone)"

    def before_rejoin(self, node, survivors, timeout):
        Joining.settle(self.nodes)
        """The group must have expelled the killed incarnation before the node can join again."""
        self._drop_old_incarnations([node], [m for m in survivors if self._is_member(m)], timeout)

    def after_rejoin(self, node, timeout):
        self.after_group([node], timeout)  # joins and waits until ONLINE; the primary stays where the group put it

    def rejoin_path(self, restarted):
        cloned = self.__dict__.get("cloned", set())
        notes = self.__dict__.pop("notes", {})
        led, how = self.__dict__.pop("led", (None, ""))
        return "; ".join([how if n.name == led else
                          f"{n.name} by {'clone' if n.name in cloned or self._cloned(n) else 'incremental recovery'}"
                          for n in restarted] + list(notes.values()))

    def after_heal(self, restarted, timeout):
        self.wait_ready(timeout)
        if self.spec.single_primary:
            self.restore_primary(timeout)
        self.online_mode()
        router.ensure(self, timeout)

    def ensure_front(self, timeout: float) -> str | None:
        done = [d for d in (self.online_mode(), router.ensure(self, timeout)) if d]
        return "; ".join(done) or None

    def online_mode(self) -> str | None:
        """A member that left the group on an error (expelled) is put in offline_mode (MySQL 8.4's
        group_replication_exit_state_action = OFFLINE_MODE), and stays so once it is back in the group: clients without
        CONNECTION_ADMIN cannot connect. Switched off on every ONLINE member; returns on which (None: none)."""
        back = []
        for n in self.nodes:
            with self.connect(n) as conn:
                if int(sql.scalar(conn, "SELECT @@GLOBAL.offline_mode") or 0) and any(
                        r["MEMBER_STATE"] == "ONLINE" and self._where(r) == (n.listen_host, n.port)
                        for r in self.members(conn)):
                    sql.execute(conn, "SET GLOBAL offline_mode = OFF")
                    back.append(n.name)
        return f"offline_mode switched off on {', '.join(back)} (back in the group)" if back else None

    def primary_name(self) -> str | None:
        """The node that is the group's primary now (None: no primary, or a multi-primary group)."""
        with self.connect(self.nodes[0]) as conn:
            rows = [r for r in self.members(conn) if r["MEMBER_ROLE"] == "PRIMARY"]
        if len(rows) != 1:
            return None
        return next((n.name for n in self.nodes if n.port == int(rows[0]["MEMBER_PORT"])
                     and n.listen_host == rows[0]["MEMBER_HOST"]), None)

    def switchover(self, timeout: float, *, wait_s: float = 15.0) -> Promotion:
        """A planned change of primary: ``group_replication_set_as_primary`` hands the role to the next member; the
        group waits for the old primary's open transactions up to ``wait_s`` (its running_transactions_timeout),
        then disconnects their clients."""
        t0 = time.monotonic()
        old = self.primary_name() or self.nodes[0].name
        new = next(n for n in self.nodes if n.name != old)
        with self.connect(new, read_timeout=max(60.0, timeout + wait_s)) as conn:
            uuid = sql.scalar(conn, "SELECT @@server_uuid")
            try:
                sql.scalar(conn, "SELECT group_replication_set_as_primary(%s, %s)", (uuid, int(round(wait_s))))
            except pymysql.err.MySQLError as exc:
                raise LabError(f"{self.cluster}: switchover to {new.name} failed: {exc.args[-1] if exc.args else exc}",
                               hint="benchlib lab heal gives node 1 its primary role back") from None
        return Promotion(new.name, ((f"{new.name} asked to take the primary role", 0.0),
                                    (f"the group moved it from {old} to {new.name}", time.monotonic() - t0)), "")

    def restore_primary(self, timeout: float) -> None:
        """Give node 1 (the spec's writer) the primary role back after a failover."""
        if self.primary_name() == self.nodes[0].name:
            return
        with self.connect(self.nodes[0]) as conn:
            uuid = sql.scalar(conn, "SELECT @@server_uuid")
            sql.scalar(conn, "SELECT group_replication_set_as_primary(%s)", (uuid,))
        self._poll(timeout, lambda: (self.primary_name() == self.nodes[0].name, f"primary is {self.primary_name()}"),
                   f"{self.nodes[0].name} primary again")
