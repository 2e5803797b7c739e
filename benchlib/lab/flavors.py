"""Server flavours: everything the embedded lab does differently for MariaDB and MySQL, as data in one registry.

A ``Flavor`` is what a lab spec's ``system`` names (``system = "mysql"``). It says which server binaries it runs
(a ``benchlib.servers`` flavour, found on the system, in benchlib's prefix or in a spec's ``basedir``), which
topologies it runs and the ``benchlib.systems`` key of each (a MariaDB ``galera`` cluster is system ``galera``),
the my.cnf section and options of a node, how a datadir template is made once per server
(``mariadb-install-db`` or ``mysqld --initialize-insecure``), the lab's accounts in its grammar, whether nodes set
their passwords at first start (an init file) or start from a per-lab seed that has them, its command-line client,
its replication and semi-sync statement names (``benchlib.systems.replication``, ``benchlib.systems.semisync``),
and the spec fields it refuses. Nothing in ``benchlib.lab`` asks which flavour it has: it asks the flavour.

The built-in flavours are ``benchlib.lab.mariadb`` and ``benchlib.lab.mysql`` (registered when ``benchlib.lab`` is
imported). Adding one (Percona Server from a tarball, say) is one ``register(Flavor(...))``; a flavour that
differs from another in a few fields is ``dataclasses.replace(get("mysql"), name=..., ...)``.
"""

from __future__ import annotations

from pathlib import Path

from dataclasses import dataclass, field
from typing import Any, Callable

from benchlib.systems.replication import Names as ReplicationNames
from benchlib.systems.semisync import Names as SemisyncNames
from benchlib.plugin import Registry

__all__ = ["Flavor", "FLAVORS", "get", "names", "register"]


#: one server option's value as an option file writes it (``benchlib.lab.mycnf``; a flag: True; left out: None or
#: False)
Option = str | int | float | bool | Path | None
#: a server's options by name, as an option file writes them into a section
Options = dict[str, Option]

@dataclass(frozen=True)
class Flavor:
    name: str  # what a lab spec's ``system`` says
    title: str  # for people: "MariaDB"
    server: str  # the benchlib.servers flavour of its binaries (mariadb | mysql)
    #: topology -> the benchlib.systems key of a cluster of it (the topologies this flavour runs)
    systems: dict[str, str]
    section: str  # the my.cnf section its server reads
    client: str  # its command-line client
    #: (layout, node, server) -> a node's server options (benchlib.lab.mycnf renders them)
    options: Callable[..., Options]
    #: (server, datadir, socket, pid_file, log_error, tmpdir, galera_port) -> options of a short-lived seed server
    seed_options: Callable[..., Options]
    #: (work dir, run_as, server) -> an initialised datadir in work/data (cached per server, once)
    initialize: Callable[..., None]
    template_done: str  # the file or folder of datadir initialisation writes last (the cache is complete)
    #: (credentials, hosts=the lab's addresses) -> (statement, parameters) that give a fresh datadir exactly the lab's
    #: accounts
    accounts: Callable[..., list[tuple[str, tuple]]]
    replication: ReplicationNames
    semisync: SemisyncNames
    #: True: every node starts from the cached template and sets the lab's passwords at its first start (an init
    #: file); False: a seed per lab (per Galera cluster) is made with the lab's passwords and copied to every node
    passwords_at_first_start: bool = False
    #: (server) -> statements run once on a template or seed server after the accounts (plugins, components)
    seed_statements: Callable[..., list[str]] = lambda server: []
    #: programs beyond the server this flavour needs, and the Debian package that has each
    tools: dict[str, str] = field(default_factory=dict)
    replica_triggers: bool = False  # its replicas fire triggers for row events (the heartbeat's apply time)
    parallel_threads_max: int = 1024  # the replica apply threads it allows
    #: spec fields it has no use for: field -> (the only value it takes, why)
    refuses: dict[str, tuple[Any, str]] = field(default_factory=dict)
    #: topology -> why this flavour does not run it (said when a spec asks for it)
    why_not: dict[str, str] = field(default_factory=dict)
    #: the privilege that lets an account change global variables (a remote lab's settings sweep)
    set_global: str = "SUPER"
    #: provisioned hosts (benchlib.provision): the server's program when the hosts' packages install it (the
    #: packages of ``tools``); None: benchlib's own copy of the server is sent to the hosts
    host_program: str | None = None
    #: (server as on the host, node) -> the command that makes a node's datadir on a provisioned host
    host_initialize: Callable[..., list[str]] = lambda server, node: []

    def system(self, topology: str) -> str:
        """The benchlib.systems key of a ``topology`` cluster of this flavour."""
        if topology not in self.systems:
            why = self.why_not.get(topology, "")
            runs = ", ".join(sorted(self.systems))
            raise ValueError(f"system {self.name!r} has no topology {topology!r}{': ' + why if why else ''} "
                             f"({self.name} runs {runs})")
        return self.systems[topology]


FLAVORS: Registry[Flavor] = Registry("server system", hint=lambda known: f"a local cluster's system is one of: "
                                                                         f"{', '.join(sorted(known))}")


def register(flavor: Flavor) -> Flavor:
    return FLAVORS.register(flavor)


def get(name: str) -> Flavor:
    return FLAVORS.lookup(name)


def names() -> list[str]:
    return sorted(FLAVORS)
