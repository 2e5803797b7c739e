"""The ``Lab`` protocol: what a campaign, the sampler and the CLI need of a lab, local or remote.

The embedded lab (``benchlib.lab.lab.LocalLab``: servers this machine starts), a remote lab
(``benchlib.remote.lab.RemoteLab``: servers benchlib only connects to) and a lab benchlib provisioned on real hosts
(``benchlib.provision.lab.ProvisionedLab``) implement it alike, so nothing above them asks which one it has.

The core is ten members: its ``name`` and ``spec`` (whose ``kind`` says local or remote), its nodes (``cluster_nodes``; the clusters are the
spec's), ``connect``, ``close``, and its capabilities. Every lab has three: ``health`` (``Health``: is a node up, what
is broken, heal, status, check), ``tuning`` (``Tuning``: runtime settings) and ``hooks`` (``RunHooks``: the load
driver, the run's facts and secrets, the sampler's extra probes and triggers). Where labs differ, the capability
says so itself: ``health.heal`` restarts nodes locally and refuses remotely with the reason; ``hooks.load_driver``
runs sysbench here or on the client hosts; ``hooks.extra_probes`` samples local processes or remote clocks. What
only some labs can do is offered or lacked: ``faults()`` (inject, release, promote, rejoin: ``FaultControl``) and
``proxy()`` (``ProxyControl``) give it or None, and the spec's ``lacks(capability)`` says why not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, runtime_checkable

from benchlib.schema import Cell

if TYPE_CHECKING:
    from benchlib.manifest import ClusterFacts
    from benchlib.sampling.probe import Probe
    from benchlib.sampling.status import StatusLog
    from benchlib.systems.settings import SettingRules
    from benchlib.sysbench.driver import LoadDriver

__all__ = ["CAPABILITIES", "Fault", "FaultControl", "Health", "Lab", "LabSpecLike", "NodeInfo", "NodeStatus", "Progress",
           "Promotion", "ProxyControl", "RunHooks", "Tuning", "quiet"]

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class NodeInfo:
    """One node as everything above the lab sees it."""

    name: str
    cluster: str
    role: str  # primary, replica, secondary, galera, single (local); the remote spec's roles
    system: str  # benchlib.systems key
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Fault:
    """A fault the lab injects into one cluster: ``kill`` (SIGKILL: the node stays down until the heal),
    ``freeze`` (SIGSTOP until released: the process keeps its sockets and answers nothing), ``cut`` (the
    network link of ``site`` goes down until released: the nodes there run on, unreachable) or ``isolate`` (the
    nodes are cut off from the other nodes of their cluster until released, while their clients still reach them)."""

    kind: str
    nodes: tuple[str, ...]
    site: str | None = None

    def words(self) -> str:
        where = f"site {self.site} ({', '.join(self.nodes)})" if self.site else ", ".join(self.nodes)
        return {"kill": f"killed {where} (SIGKILL)", "freeze": f"froze {where} (SIGSTOP)",
                "cut": f"cut the network link of {where}",
                "isolate": f"cut {where} off from the rest of its cluster (its clients still reach it)",
                "switchover": f"switched the primary role over from {where} (planned)"}[self.kind]


@dataclass(frozen=True)
class Promotion:
    """What a promotion did: the new primary and each step with its time (seconds since the promotion began)."""

    primary: str
    steps: tuple[tuple[str, float], ...]
    discarded: str = ""  # what the old primary held that the new one lacks, when it could be told


@dataclass
class NodeStatus:
    name: str
    cluster: str
    topology: str
    role: str
    site: str | None
    port: int
    pid: int | None
    up: bool
    detail: dict[str, object]  # what the node says of itself, shown as it is
    system: str = ""
    host: str = ""


class LabSpecLike(Protocol):
    """What every lab's spec has (``benchlib.lab.spec.LabSpec``, ``benchlib.remote.spec.RemoteLabSpec``)."""

    name: str
    kind: str  # "local" | "remote" (a lab benchlib provisioned is a remote lab whose spec names its provisioning)
    counters: list[str]  # SHOW GLOBAL STATUS counters sampled beyond each system's own

    @property
    def clusters(self) -> Mapping[str, Any]:
        """Its clusters by name."""

    def system_of(self, cluster: str) -> str:
        """The system ``cluster`` runs (``benchlib.catalogue``)."""

    def lacks(self, capability: str) -> str:
        """Why a lab of this spec lacks ``capability`` (one of ``CAPABILITIES``); "": it has it."""

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]: ...


@runtime_checkable
class Lab(Protocol):
    """A lab of one or more clusters: its core, ten members (see the module docstring); what it does beyond reaching
    its nodes is in its capabilities: ``health``, ``tuning``, ``hooks``, and, where it has them, ``faults()`` and
    ``proxy()``."""

    name: str

    @property
    def spec(self) -> LabSpecLike: ...

    def cluster_nodes(self, cluster: str) -> list[NodeInfo]:
        """The nodes of ``cluster``, the one that takes the writes first."""

    def connect(self, node: Any, *, database: str | None = None, timeout: float = 5.0) -> Any:
        """A pymysql connection (DictCursor, autocommit) with the lab's administrative account; ``timeout``: the
        connect timeout, s."""

    def close(self, *, down: bool = False) -> None:
        """Release connections (SSH, watch connections); the servers are left as they are. ``down``: take the lab
        down as well (a remote lab: close, never stop a server)."""

    @property
    def health(self) -> "Health":
        """Is it up, what is broken, heal it, its status and readiness check."""

    @property
    def tuning(self) -> "Tuning":
        """Its runtime settings: the rules, what is applied, apply more."""

    @property
    def hooks(self) -> "RunHooks":
        """What a run takes from it: the load driver, the facts it records, the secrets the store refuses, the
        sampler's extra probes and triggers."""

    def faults(self) -> "FaultControl | None":
        """Its faults (inject, release, promote, rejoin); None: it has none (``spec.lacks("faults")`` says why)."""

    def proxy(self) -> "ProxyControl | None":
        """A proxy in front of a cluster's writes; None: it has none (``spec.lacks("proxy")`` says why)."""


@runtime_checkable
class Health(Protocol):
    """A lab's health: its nodes up or not, what is broken and the heal, its status and readiness check."""

    def describe(self) -> str:
        """One line for a person: which lab, where its servers are, where the load comes from."""

    def is_up(self, node: Any) -> bool: ...

    def broken(self) -> list[str]:
        """What ``heal`` would have to repair, cheaply."""

    def heal(self, *, timeout: float = 120.0, progress: Progress = quiet) -> list[str]:
        """Repair what ``broken`` lists (a remote lab refuses, naming the nodes); returns the nodes restarted."""

    def heal_report(self) -> list[str]:
        """What the last ``heal`` did, in words (how each node came back)."""

    def status(self) -> list[NodeStatus]: ...

    def check(self) -> Any:
        """Is the lab ready for a campaign? A result with ``ok``, ``problems`` and ``lines()`` (one per finding)."""


@runtime_checkable
class Tuning(Protocol):
    """A lab's runtime settings, by the rules every lab shares (``benchlib.systems.settings.plan_settings``)."""

    def setting_rules(self, cluster: str) -> "SettingRules": ...

    def settings(self, cluster: str) -> dict[str, Cell]:
        """The runtime settings applied so far (recorded in every run's manifest)."""

    def set(self, settings: dict[str, Cell], *, cluster: str | None = None) -> dict[str, dict[str, Cell]]:
        """Apply runtime settings (read back); returns {cluster: {setting: value}}."""

    def refresh(self) -> None:
        """Read again what the lab's record says (another process may have changed it)."""


@runtime_checkable
class RunHooks(Protocol):
    """What a run takes from a lab beyond its nodes: the sampling hooks and what it records."""

    def load_driver(self) -> "LoadDriver": ...

    def facts(self, cluster: str) -> "ClusterFacts":
        """What analysis needs to know of ``cluster`` for every run (system, nodes, RTT, durability, binlog)."""

    def secrets(self) -> list[str]:
        """Every password this lab uses: the run store refuses to write any of them."""

    def extra_probes(self, nodes: list[str], log: "StatusLog", clock: Callable[[], float]) -> list["Probe"]:
        """Probes the placement provides (processes of a local lab, server clocks of a remote one)."""

    def heartbeat_triggers(self, cluster: str) -> bool:
        """Whether replicas of ``cluster`` get the apply-time trigger (needs privileges a remote account lacks)."""

    def client_connect(self) -> Callable[..., Any]:
        """How an application connects to a node (``connect(node, timeout=...)``): the load's account, without the
        administrative rights that ``read_only`` lets through (the heartbeat writer writes as one: a read-only old
        primary refuses it, as it refuses the application)."""


#: what a lab may offer beyond the core (``Lab.faults()``, ``Lab.proxy()``); a campaign that needs one asks the lab
#: (or its spec: ``lacks``) and refuses with the lab's own reason when it lacks it
CAPABILITIES = ("faults", "proxy")


@runtime_checkable
class FaultControl(Protocol):
    """Faults a lab can inject into its clusters, and what follows them (the embedded lab: its own servers)."""

    def fault_refusal(self, cluster: str, kind: str, nodes: list[str], site: str | None) -> str | None:
        """Why this lab cannot inject a ``kind`` fault into ``nodes`` (or ``site``) of ``cluster`` (None: it can)."""

    def inject(self, cluster: str, fault: Fault) -> None:
        """Inject ``fault`` now (see ``Fault``)."""

    def release(self, cluster: str, fault: Fault) -> None:
        """End a ``freeze`` or ``cut`` (a ``kill`` lasts until the heal)."""

    def rejoin(self, cluster: str, node: str, *, full: bool = False, timeout: float = 300.0,
               starting: Callable[[], None] | None = None) -> str:
        """Start a killed ``node`` again while the cluster works on and wait until it is back in its role (no role
        moves); ``full``: force its cluster's full state transfer (Galera SST, Group Replication clone);
        ``starting()`` is called just before the node's process starts (after what must come first: a group
        expelling the node's killed incarnation). Returns the path it took, in words."""

    def switchover(self, cluster: str, *, timeout: float = 60.0, wait_s: float = 15.0) -> Promotion:
        """A planned change of ``cluster``'s primary (async, semi-sync: read-only, replicas caught up, the first
        replica promoted, the others following; Group Replication: ``group_replication_set_as_primary``), an open
        transaction on the old primary waited for up to ``wait_s``; ``heal`` gives the roles back."""

    def errant(self, cluster: str, old: str, new: str, *, timeout: float = 60.0) -> dict[str, Any]:
        """After a promotion: the transactions the old primary ``old`` holds that the promoted ``new`` lacks (started
        again first if it is down, stopped again after): ``count``, ``gtids``, ``restarted``, ``s``."""

    def promote(self, cluster: str, failed: str, *, timeout: float = 60.0, discard: bool = False) -> Promotion:
        """Make the most advanced surviving replica of an async or semi-sync ``cluster`` its primary and the other
        replicas follow it (as orchestrator does: each applies its relay log first; with ``discard``, the one that
        applied the most at once, its relay log thrown away unapplied, as a hasty failover tool does); ``heal`` gives
        the original write node its role back."""


@runtime_checkable
class ProxyControl(Protocol):
    """A proxy a lab can put in front of a cluster's writes."""

    def front(self, cluster: str, serving: Callable[[], "str | None"], kind: str = "haproxy") -> Any:
        """A proxy of ``kind`` in front of ``cluster``'s writes (``host``, ``port``, ``connect(timeout)`` with the
        load's account, ``stop()``): ``haproxy`` (``benchlib.lab.proxy.HAProxyFront``), steered to the node
        ``serving()`` names; ``router``, the group's own MySQL Router (``benchlib.lab.router``), which follows the
        group by itself."""
