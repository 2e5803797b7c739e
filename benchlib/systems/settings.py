"""Runtime settings: one vocabulary per system, parsed and applied alike on local and remote labs.

A ``Setting`` knows how to parse what a user wrote, the statements that apply it on one node
of a role (``primary`` or ``replica``: a replica, a secondary, a Galera node that does not take
the writes), and the variables to read back afterwards. A few need the whole cluster at once
(semi-sync on or off waits until the primary has every replica as a client): they carry their
own ``apply``. ``apply_setting`` runs one setting on a ``ClusterTarget`` (the cluster's nodes
with their roles and a way to connect) and raises ``SettingError`` naming the node.

Settings read only at server start (``restart``) are applied with ``SET PERSIST_ONLY`` and
``RESTART`` (MySQL 8.0.17+), on remote labs that allow it; a local lab refuses them (they are
lab-spec fields there: a new lab).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pymysql

from benchlib.errors import SettingError
from benchlib.systems.sql import execute, global_variables, scalar
from benchlib.systems.values import Parser, choice, int_range, sql_literal
from benchlib.schema import Cell

__all__ = ["DURABILITY", "COMMON", "ClusterTarget", "NodeRef", "Setting", "SettingRules", "apply_setting",
           "plan_settings"]

#: durability profiles: the variables each sets
DURABILITY = {
    "durable": {"sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1},
    "relaxed": {"sync_binlog": 0, "innodb_flush_log_at_trx_commit": 2},
}
@dataclass(frozen=True)
class NodeRef:
    name: str
    role: str  # "primary" | "replica"


@dataclass
class ClusterTarget:
    """The nodes of one cluster (writer first) and how to reach them, for applying settings."""

    cluster: str
    nodes: list[NodeRef]
    connect: Callable[[str], Any]
    on_restart: Callable[[str], None] | None = None  # waits until a node restarted by RESTART is back
    hint: str = "benchlib lab status shows the nodes' state"

    @classmethod
    def of(cls, cluster: str, nodes: list[str], connect: Callable[[str], Any], **kwargs: Any) -> "ClusterTarget":
        """The target of a cluster whose nodes are ``nodes``, the write node first (``Lab.cluster_nodes``'s
        order): it is the primary, every other node a replica."""
        return cls(cluster, [NodeRef(n, "primary" if i == 0 else "replica") for i, n in enumerate(nodes)], connect,
                   **kwargs)

    @property
    def primary(self) -> NodeRef:
        return next(n for n in self.nodes if n.role == "primary")

    def execute(self, node: str, *statements: str) -> None:
        """Run ``statements`` on ``node`` over a connection of its own."""
        conn = self.connect(node)
        try:
            execute(conn, *statements)
        finally:
            conn.close()

    @property
    def replicas(self) -> list[NodeRef]:
        return [n for n in self.nodes if n.role != "primary"]


def same_value(got: Any, want: Any) -> bool:
    if isinstance(want, bool):
        return str(got).strip().upper() in ({"1", "ON", "TRUE"} if want else {"0", "OFF", "FALSE"})
    if str(got).lower() == str(want).lower():
        return True
    try:
        return float(got) == float(want)
    except (TypeError, ValueError):
        return False


def _none(value: Any, variables: dict[str, str]) -> dict[str, Cell]:
    return {}


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Parser
    help: str
    #: (value, role, variables) -> statements for one node ([]: not for a node of that role)
    statements: Callable[[Any, str, dict[str, str]], list[str]] = lambda v, r, vs: []
    #: (value, variables) -> {variable: expected value} read back on every node the statements ran on
    read_back: Callable[[Any, dict[str, str]], dict[str, Cell]] = _none
    matches: Callable[[Any, Any], bool] = same_value
    variables: tuple[str, ...] = ()  # variables to read first (names that differ by version)
    replicas_only: bool = False  # means something only in a cluster with replicas
    #: means something only while this on/off setting is on (the semi-sync wait point and timeout: semi-sync); a
    #: campaign sweeps it on the clusters whose topology has it on, or where it sweeps that setting too
    only_with: str | None = None
    restart: str | None = None  # read only at server start: this variable (SET PERSIST_ONLY + RESTART)
    apply: Callable[[ClusterTarget, Any, list[NodeRef]], None] | None = None  # a whole-cluster applier
    #: the statements take a node out of its cluster for a while (a group member leaves and joins again): the lab
    #: waits until the cluster is whole again before it goes on
    rejoins: bool = False


def set_global(var: str, roles: tuple[str, ...] = ("primary", "replica")) -> Callable[..., list[str]]:
    def stmts(value: Any, role: str, variables: dict[str, str]) -> list[str]:
        return [f"SET GLOBAL {var} = {sql_literal(value)}"] if role in roles else []
    return stmts


def read_var(var: str) -> Callable[[Any, dict[str, str]], dict[str, Cell]]:
    return lambda value, variables: {var: value}


COMMON: dict[str, Setting] = {s.name: s for s in [
    Setting("durability", choice("durable", "relaxed"), "sync_binlog and innodb_flush_log_at_trx_commit together",
            lambda v, r, vs: [f"SET GLOBAL {k} = {x}" for k, x in DURABILITY[v].items()],
            lambda v, vs: dict(DURABILITY[v])),
    Setting("sync_binlog", int_range(0, 1_000_000), "binary log fsync every N commits (0: leave it to the OS)",
            set_global("sync_binlog"), read_var("sync_binlog")),
    Setting("innodb_flush_log_at_trx_commit", int_range(0, 2), "redo log flush policy (1: fsync at every commit)",
            set_global("innodb_flush_log_at_trx_commit"), read_var("innodb_flush_log_at_trx_commit")),
]}


@dataclass(frozen=True)
class SettingRules:
    """The settings of one cluster: its system's, less what the cluster cannot have."""

    system: str
    label: str  # how messages name the cluster's kind ("async", "galera", "group_replication" ...)
    settings: dict[str, Setting] = field(default_factory=dict)
    allow_restart: bool = False
    note: str = ""  # why a system sweeps nothing (Aurora)
    #: what cannot change on a running cluster of this lab, and what to do instead (a local lab's spec fields)
    fixed: dict[str, str] = field(default_factory=dict)
    no_restart: str = ""  # the server with no RESTART statement this system runs on ("": it restarts from SQL)

    @property
    def names(self) -> list[str]:
        return sorted(self.settings)

    def __contains__(self, key: str) -> bool:
        return key in self.settings

    def parse(self, key: str, value: Any) -> Any:
        if key not in self.settings:
            if self.note:
                raise SettingError(f"{key!r} is not a setting benchlib can sweep on {self.label} clusters",
                                   hint=self.note)
            raise SettingError(f"{key!r} is not a runtime setting of a {self.label} cluster",
                               hint=f"settings of {self.label}: {', '.join(self.names)}")
        setting = self.settings[key]
        try:
            parsed = setting.parse(value)
        except ValueError as exc:
            raise SettingError(f"{key}={value!r}: {exc}", hint=f"{key}: {setting.help}") from None
        if setting.restart:
            self._check_restart(key)
        return parsed

    def _check_restart(self, key: str) -> None:
        if not self.allow_restart:
            raise SettingError(f"{key} takes effect only when the server restarts, and this remote lab does not "
                               "allow restarts", hint="set allow_restart = true in the remote lab spec (MySQL 8.0.17+ "
                                                      "restarts from SQL), or set it on the servers by hand and drop "
                                                      "it from the campaign's matrix")
        if self.no_restart:
            raise SettingError(f"{key} needs a server restart, which benchlib cannot do on a remote "
                               f"{self.no_restart} server ({self.no_restart} has no RESTART statement)",
                               hint="set it in the servers' configuration, restart them by hand, and drop it from "
                                    "the campaign's matrix")


def plan_settings(settings: dict[str, Cell], rules: dict[str, SettingRules], cluster: str | None,
                  lab: str) -> list[tuple[str, str, Any]]:
    """What ``Lab.set`` applies, by the same rules on every lab: (cluster, setting, parsed value) for every
    cluster that has each setting (or for ``cluster`` only). A setting no cluster has, a fixed one, a bad value
    or a restart a lab cannot do raises ``SettingError`` before anything is applied."""
    if cluster is not None and cluster not in rules:
        raise SettingError(f"no cluster {cluster!r} in lab {lab}", hint=f"clusters: {', '.join(rules)}")
    clusters = [cluster] if cluster else list(rules)
    out = []
    for key, raw in settings.items():
        targets = [c for c in clusters if key in rules[c]]
        if not targets:
            fixed = next((rules[c].fixed[key] for c in clusters if key in rules[c].fixed), None)
            if fixed is not None:
                raise SettingError(f"{key!r} cannot change on a running lab (it needs a server restart or a new "
                                   "build)", hint=fixed)
            if len(clusters) == 1:
                rules[clusters[0]].parse(key, raw)  # raises the cluster's own message (Aurora's note)
            known = sorted({k for c in clusters for k in rules[c].names})
            raise SettingError(f"{key!r} is not a runtime setting of {' or '.join(clusters)}",
                               hint=f"runtime settings here: {', '.join(known) or 'none'}; other server options "
                                    "need a new lab")
        out += [(c, key, rules[c].parse(key, raw)) for c in targets]
    return out


def _holds(conn, setting: Setting, value: Any, variables: dict[str, str]) -> bool:
    """The node already has ``value`` of ``setting`` (what its read-back would check)."""
    want = setting.read_back(value, variables)
    return bool(want) and all(setting.matches(scalar(conn, f"SELECT @@GLOBAL.{var}"), w) for var, w in want.items())


def apply_setting(target: ClusterTarget, setting: Setting, value: Any, nodes: list[NodeRef] | None = None) -> None:
    """Apply an already parsed ``value`` of ``setting`` on ``nodes`` (default: every node of the target)."""
    nodes = target.nodes if nodes is None else nodes
    if setting.apply is not None:
        try:
            setting.apply(target, value, nodes)
        except pymysql.MySQLError as exc:
            raise SettingError(f"{target.cluster}: applying {setting.name}={value} failed: "
                               f"{exc.args[-1] if exc.args else exc}", hint=target.hint) from None
        return
    for node in nodes:
        conn = target.connect(node.name)
        try:
            variables = global_variables(conn, setting.variables) if setting.variables else {}
            if setting.restart:
                stmts = [f"SET PERSIST_ONLY {setting.restart} = {sql_literal(value)}", "RESTART"]
            else:
                stmts = setting.statements(value, node.role, variables)
            if not stmts or setting.rejoins and _holds(conn, setting, value, variables):
                continue  # a member does not leave its group to take the value it has (right after a rejoin, too)
            try:
                execute(conn, *stmts)
            except pymysql.MySQLError as exc:
                raise SettingError(f"{target.cluster}: applying {setting.name}={value} failed on {node.name}: "
                                   f"{exc.args[-1] if exc.args else exc}", hint=target.hint) from None
            if "RESTART" in stmts:
                if target.on_restart is None:
                    raise SettingError(f"{node.name}: {setting.name} needs a restart this lab cannot do")
                target.on_restart(node.name)
                continue
            for var, want in setting.read_back(value, variables).items():
                got = scalar(conn, f"SELECT @@GLOBAL.{var}")
                if not setting.matches(got, want):
                    raise SettingError(f"{node.name}: {var} is {got!r} after setting {want!r}")
        finally:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a connection a RESTART closed
                pass
