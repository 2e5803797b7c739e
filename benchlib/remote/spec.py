"""Remote lab specs: clusters of real hosts benchlib does not start, and the client hosts sysbench runs on.

    kind = "remote"                       # says this is a remote lab (a local lab spec has no kind, or "local")
    name = "gr9"
    allow_restart = false                 # settings that need a restart are refused unless true

    [credentials]                         # by environment-variable name, never the values
    user = "bench"
    password_env = "BENCH_DB_PASSWORD"

    [clusters.gr]
    system = "group_replication"          # mariadb | mysql | group_replication | pxc | galera | aurora
    mode = "single-primary"               # group_replication: single-primary | multi-primary
    nodes = [
        { name = "gr1", host = "10.0.0.1", port = 3306, role = "primary" },
        { name = "gr2", host = "10.0.0.2", role = "secondary",
          ssh = { user = "bench", key_env = "BENCH_SSH_KEY" } },  # optional: sample this host's CPU and disks
    ]

    [clients.c1]                          # optional: without [clients], sysbench runs on this host
                                          # reached over SSH (asyncssh); the key by variable name, or the agent
    host = "10.0.0.20"
    user = "bench"
    key_env = "BENCH_SSH_KEY"             # or agent = true
    share = 0.5                           # share of each run's client threads (default: equal shares)

    [sites.dr]                            # optional: nodes across a WAN, with the round trip the network has
    nodes = ["gr2"]                       # (benchlib provision emulates it on the hosts)
    rtt_ms = 35

Validation names every bad field; a literal password or key in the file is refused with the way to pass it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from benchlib import catalogue
from benchlib.systems import base as systems
from benchlib.errors import SpecError
from benchlib.systems.settings import SettingRules
from benchlib.specs import (CLUSTER_NAME, CLUSTER_NAME_RULE, Site, Strict, check_sites, format_validation, named_keys,
                            read_toml, site_of)

ENV_NAME = r"^[A-Z_][A-Z0-9_]{0,63}$"
#: why a remote lab takes no fault (campaign specs with [fault] are refused on one when loaded)
NO_FAULTS = ("a remote lab's servers are not benchlib's to kill, freeze or cut off: faults run on the embedded lab (a "
             "local lab spec)")
#: what benchlib does to the servers of a provisioned remote lab (over SSH, with its service script on each host)
PROVISIONED_FAULTS = ("kill", "freeze", "isolate")
PROVISIONED_ONLY = ("on provisioned hosts benchlib kills, freezes, isolates and promotes servers (a site's cut and a "
                    "proxy run on the embedded lab so far)")
SECRET_FIELDS = {"password", "passwd", "key", "private_key", "secret"}


class NoSecrets(Strict):
    """A spec table that refuses literal secrets (a password belongs in an environment variable); the hosts file of
    ``benchlib provision`` is made of them too."""

    @model_validator(mode="before")
    @classmethod
    def _no_literal_secrets(cls, data):
        if isinstance(data, dict):
            bad = sorted(k for k in data if str(k).lower() in SECRET_FIELDS)
            if bad:
                raise ValueError(f"{bad[0]}: secrets are never written in a spec; put the value in an environment "
                                 f"variable and name it ({bad[0]}_env = \"MY_VARIABLE\")")
        return data


class Credentials(NoSecrets):
    #: the account's user name
    user: str = Field(min_length=1, max_length=80)
    #: the environment variable holding the password
    password_env: str | None = Field(default=None, pattern=ENV_NAME)
    #: or a file holding only the password, mode 600, relative to the spec (what ``benchlib provision`` writes)
    password_file: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.password_env is None) == (self.password_file is None):
            raise ValueError("give exactly one of password_env (the variable holding the password) or password_file "
                             "(a mode-600 file holding it)")
        return self

    @property
    def source(self) -> str:
        """Where the password comes from, for messages: ``$BENCH_DB_PASSWORD`` or the file's name."""
        return f"${self.password_env}" if self.password_env else str(self.password_file)


class SSHAccess(NoSecrets):
    """How to log in to a host over SSH: the key by environment-variable name, or the agent."""
    #: the SSH port
    port: int = Field(default=22, ge=1, le=65535)
    #: the SSH user
    user: str = Field(min_length=1, max_length=80)
    #: the environment variable holding the private key
    key_env: str | None = Field(default=None, pattern=ENV_NAME)
    #: use the SSH agent instead of a key
    agent: bool = False
    known_hosts: str | None = None  # file of trusted host keys (default ~/.ssh/known_hosts)

    @model_validator(mode="after")
    def _one_way_in(self):
        if (self.key_env is None) == (not self.agent):
            raise ValueError("give exactly one of key_env (the variable holding the private key) or agent = true")
        return self


class RemoteNode(NoSecrets):
    #: the node's name in runs and reports
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")
    #: its address
    host: str = Field(min_length=1, max_length=253)
    #: its MySQL port
    port: int = Field(default=3306, ge=1, le=65535)
    #: primary, replica, secondary or node: which one the load writes to (the primary, or the first node)
    role: str
    ssh: SSHAccess | None = None  # optional: the server host's CPU, disks and network are sampled over SSH


class RemoteCluster(NoSecrets):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    system: str  # a system of benchlib.catalogue
    #: Group Replication: single-primary or multi-primary
    mode: Literal["single-primary", "multi-primary"] | None = None
    #: the cluster's servers
    nodes: list[RemoteNode] = Field(min_length=1)
    credentials: Credentials | None = None  # overrides the lab's
    label: str | None = Field(default=None, alias="topology")  # e.g. "semisync" for a semi-sync MySQL pair

    @property
    def topology(self) -> str:
        return self.label or catalogue.of(self.system).topology

    @property
    def writer(self) -> "RemoteNode":
        return next(n for n in self.nodes if n.role == self.facts.writer_role)

    @property
    def facts(self) -> catalogue.SystemFacts:
        return catalogue.of(self.system)

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    @field_validator("system")
    @classmethod
    def _system(cls, v):
        if v not in catalogue.SYSTEMS:
            raise ValueError(f"system {v!r}: one of {', '.join(catalogue.SYSTEMS)}")
        return v

    @field_validator("label")
    @classmethod
    def _label(cls, v):
        labels = [t.name for t in catalogue.TOPOLOGIES.values() if t.replicas]
        if v is not None and v not in labels:
            raise ValueError(f"topology {v!r}: one of {', '.join(sorted(labels))}")
        return v

    @model_validator(mode="after")
    def _roles(self):
        facts = self.facts
        for n in self.nodes:
            if n.role not in facts.roles:
                raise ValueError(f"node {n.name}: role {n.role!r} is not one of {self.system}'s: "
                                 f"{', '.join(sorted(facts.roles))}")
        writers = [n.name for n in self.nodes if n.role == facts.writer_role]
        if facts.modes:
            if self.mode is None:
                raise ValueError(f"{self.system} needs mode = " + " or ".join(f'"{m}"' for m in facts.modes))
            if self.mode == facts.modes[0] and len(writers) != 1:
                raise ValueError(f"{facts.modes[0]} {facts.title} needs exactly one {facts.writer_role} "
                                 f"(got {writers})")
        elif self.mode is not None:
            having = [f.name for f in catalogue.SYSTEMS.values() if f.modes]
            raise ValueError(f"mode applies to {', '.join(having)} only, not {self.system}")
        elif not writers:
            raise ValueError("no node with role primary or writer: where does the load go?")
        return self


class ClientHost(SSHAccess):
    #: its address
    host: str = Field(min_length=1, max_length=253)
    #: its share of each run's client threads (default: equal shares)
    share: float | None = Field(default=None, gt=0, le=1)
    #: the sysbench command there
    sysbench: str = "sysbench"


class RemoteLabSpec(NoSecrets):
    #: always "remote": what tells a remote lab spec from a local one
    kind: Literal["remote"]
    #: the lab's name
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,23}$")
    #: settings that need a server restart are applied (a restart of someone else's servers) only when true
    allow_restart: bool = False
    #: the folder ``benchlib provision`` kept for these servers (relative to the spec): they are benchlib's, so it
    #: kills, freezes and restarts them over SSH (``benchlib.provision.lab``)
    provisioned: str | None = None
    #: the account benchlib connects with (a cluster may name its own)
    credentials: Credentials
    #: the lab's clusters by name
    clusters: dict[str, RemoteCluster] = Field(min_length=1)
    clients: dict[str, ClientHost] = Field(default_factory=dict)  # none: sysbench runs on the benchlib host
    #: where nodes are far from the rest (a WAN): a provisioned lab emulates these round trips on its hosts, any other
    #: remote lab declares what its network has; runs record each node's site and round trip
    sites: dict[str, Site] = Field(default_factory=dict)
    # SHOW GLOBAL STATUS counters sampled every second beyond each system's own set (benchlib.systems)
    counters: list[Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]] = Field(default_factory=list)

    _names = named_keys("clusters", "clients", "sites", pattern=CLUSTER_NAME, rule=CLUSTER_NAME_RULE)

    @model_validator(mode="after")
    def _unique_and_shares(self):
        seen: dict[str, str] = {}
        for cname, c in self.clusters.items():
            for n in c.nodes:
                if n.name in seen:
                    raise ValueError(f"node name {n.name!r} is in both {seen[n.name]!r} and {cname!r}")
                seen[n.name] = cname
        check_sites(self.sites, list(seen))
        shares = [c.share for c in self.clients.values()]
        if any(s is not None for s in shares):
            if any(s is None for s in shares):
                raise ValueError("give every client a share, or none (equal shares)")
            if abs(sum(shares) - 1.0) > 1e-6:
                raise ValueError(f"client shares add up to {sum(shares):g}, not 1")
        return self

    def server_hosts(self) -> dict[str, "ClientHost"]:
        """The server hosts reachable over SSH (nodes with ``ssh``), one per address, named by its first node."""
        out: dict[str, ClientHost] = {}
        seen: set[str] = set()
        for c in self.clusters.values():
            for n in c.nodes:
                if n.ssh is not None and n.host not in seen:
                    seen.add(n.host)
                    out[n.name] = ClientHost(host=n.host, **n.ssh.model_dump())
        return out

    def site_of(self, node: str) -> str | None:
        return site_of(self.sites, node)

    def system_of(self, cluster: str) -> str:
        return self.clusters[cluster].system

    def nodes(self) -> list[str]:
        """Every node's name, cluster by cluster."""
        return [n.name for c in self.clusters.values() for n in c.nodes]

    def nodes_of(self, cluster: str) -> list[str]:
        """The nodes of ``cluster``, the one that takes the writes first."""
        c = self.clusters[cluster]
        return [n.name for n in sorted(c.nodes, key=lambda n: n.role != c.facts.writer_role)]

    # -- capabilities ------------------------------------------------------------------------------------------------
    def lacks(self, capability: str) -> str:
        """Why a remote lab cannot do ``capability``: its servers are not benchlib's to kill, freeze, cut off,
        promote, restart or put a proxy in front of (unless benchlib provisioned them: faults then)."""
        if capability == "faults" and self.provisioned:
            return ""
        if capability == "proxy" and self.provisioned:
            return PROVISIONED_ONLY
        return NO_FAULTS if capability in ("faults", "proxy") else ""

    def fault_refusal(self, kind: str, nodes: list[str], site: str | None) -> str | None:
        if not self.provisioned:
            return NO_FAULTS
        if kind not in PROVISIONED_FAULTS:
            return f"{kind}: {PROVISIONED_ONLY}"
        no_ssh = [n.name for c in self.clusters.values() for n in c.nodes if n.name in nodes and n.ssh is None]
        if no_ssh:
            return f"{', '.join(no_ssh)} has no ssh access in the spec: benchlib reaches its server over SSH"
        return None

    def setting_rules(self, cluster: str) -> SettingRules:
        """The settings a campaign may sweep on ``cluster`` (its system's; ``benchlib.systems``)."""
        c = self.clusters[cluster]
        return systems.rules(c.system, replicas=len(c.nodes) > 1, remote=True, allow_restart=self.allow_restart)

    def credentials_of(self, cluster: str) -> Credentials:
        return self.clusters[cluster].credentials or self.credentials

    def split_threads(self, threads: int) -> dict[str, int]:
        """A run's client threads per client host (largest remainders; every host at least one)."""
        names = list(self.clients)
        if not names:
            return {}
        if threads < len(names):
            raise SpecError(f"{threads} client threads cannot be split over {len(names)} client hosts",
                            hint="use at least one thread per client host")
        shares = [self.clients[n].share or 1 / len(names) for n in names]
        raw = [threads * s for s in shares]
        out = [max(1, int(r)) for r in raw]
        order = sorted(range(len(names)), key=lambda i: raw[i] - int(raw[i]), reverse=True)
        i = 0
        while sum(out) < threads:
            out[order[i % len(order)]] += 1
            i += 1
        while sum(out) > threads:
            j = max(range(len(out)), key=lambda k: out[k])
            out[j] -= 1
        return dict(zip(names, out))


def remote_spec_from(data: dict, source: str) -> RemoteLabSpec:
    """Validate a remote lab spec's TOML table (``source``: its file; a relative password_file is read beside it);
    one ``SpecError`` naming every bad field."""
    if "credentials" not in data:
        raise SpecError(f"{source}: a remote lab spec needs [credentials]: the account benchlib connects as",
                        hint='add [credentials] with user = "bench" and password_env = "BENCH_DB_PASSWORD" (the '
                             "name of the environment variable holding the password, never the password)")
    base = Path(source).parent if Path(source).is_file() else Path.cwd()
    for creds in [data.get("credentials")] + [c.get("credentials") for c in data.get("clusters", {}).values()
                                               if isinstance(c, dict)]:
        if isinstance(creds, dict) and isinstance(creds.get("password_file"), str):  # relative to the spec
            creds["password_file"] = str((base / creds["password_file"]).absolute())
    if isinstance(data.get("provisioned"), str):
        data = {**data, "provisioned": str((base / data["provisioned"]).absolute())}
    try:
        return RemoteLabSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: invalid remote lab spec ({exc.error_count()} problems)",
                        detail=format_validation(exc, source, "docs/reference/remote-spec.md")) from None


def load_remote_spec(path: str | Path) -> RemoteLabSpec:
    return remote_spec_from(read_toml(path, "remote lab spec"), str(path))
