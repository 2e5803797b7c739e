"""Hosts files: which machines a lab spec's nodes go on, and how to log in to them.

    [ssh]                          # how benchlib and Ansible log in to every host (one login for all of them)
    user = "root"                  # or a user with sudo: become = true
    key_env = "BENCH_SSH_KEY"      # the private key, by environment-variable name (or agent = true)
    known_hosts = "known_hosts"    # the hosts' keys, relative to this file (default ~/.ssh/known_hosts)
    become = false

    [defaults]
    port = 3306                    # a node's MySQL port (a second node on the same host: port + 10)
    service = "auto"               # auto | systemd | direct: who starts the servers (auto: systemd where it runs)
    apt_update = true              # false: the hosts' apt installs from what it has cached (no mirror reachable)

    [hosts.db1]
    address = "10.0.0.1"
    nodes = ["galera-1"]           # node names of the lab spec (<cluster>-<i>)

    [hosts.load]
    address = "10.0.0.20"
    client = true                  # sysbench runs here (without a client host: on the machine running benchlib)

Every node of the lab spec is placed on exactly one host, and a host's nodes are in one place (one of the lab spec's
[sites], or none: the hosts emulate the round trips between places). Secrets are never written here: a literal password or key
is refused with the way to pass it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from benchlib.errors import SpecError
from benchlib.remote.spec import ENV_NAME, NoSecrets
from benchlib.specs import format_validation, named_keys, read_toml

__all__ = ["HostsSpec", "Machine", "load_hosts"]


class Login(NoSecrets):
    #: the SSH user: root, or a user with sudo (become = true)
    user: str = Field(default="root", min_length=1, max_length=80)
    #: the SSH port
    port: int = Field(default=22, ge=1, le=65535)
    #: the environment variable holding the private key
    key_env: str | None = Field(default=None, pattern=ENV_NAME)
    #: use the SSH agent instead of a key
    agent: bool = False
    #: the hosts' keys, relative to this file (default ~/.ssh/known_hosts)
    known_hosts: str | None = None
    become: bool = False  # sudo to root for what needs it (user is not root)

    @model_validator(mode="after")
    def _one_way_in(self):
        if (self.key_env is None) == (not self.agent):
            raise ValueError("give exactly one of key_env (the variable holding the private key) or agent = true")
        if self.user != "root" and not self.become:
            raise ValueError(f"user {self.user!r} is not root: provisioning installs packages and starts servers, "
                             "so set become = true (the user needs sudo without a password)")
        return self


class Defaults(NoSecrets):
    #: a node's MySQL port (a second node on the same host: port + 10)
    port: int = Field(default=3306, ge=1, le=65000)
    #: who starts the servers: systemd, benchlib directly, or auto (systemd where it runs)
    service: Literal["auto", "systemd", "direct"] = "auto"
    #: false: the hosts' apt installs from what it has cached (no mirror reachable)
    apt_update: bool = True


class Machine(NoSecrets):
    #: the host's address
    address: str = Field(min_length=1, max_length=253)
    #: the lab spec's nodes it runs (<cluster>-<i>)
    nodes: list[str] = Field(default_factory=list)
    #: sysbench runs here (without a client host: on the machine running benchlib)
    client: bool = False

    @field_validator("nodes")
    @classmethod
    def _node_names(cls, v: list[str]) -> list[str]:
        for n in v:
            if not re.match(r"^[a-z][a-z0-9]{0,11}-\d+$", n):
                raise ValueError(f"node {n!r} is not a lab spec node name (<cluster>-<i>, e.g. galera-1)")
        return v


class HostsSpec(NoSecrets):
    #: how benchlib and Ansible log in to every host (one login for all of them)
    ssh: Login
    #: what every host takes
    defaults: Defaults = Field(default_factory=Defaults)
    #: the machines by name: each one's address and nodes
    hosts: dict[str, Machine] = Field(min_length=1)

    _host_names = named_keys("hosts", pattern=r"[a-z][a-z0-9-]{0,31}", rule="lower-case letters, digits and '-', at most 32")

    @model_validator(mode="after")
    def _each_node_once(self):
        seen: dict[str, str] = {}
        for name, m in self.hosts.items():
            if not m.nodes and not m.client:
                raise ValueError(f"host {name} has no nodes and is not a client: give it nodes = [...] or "
                                 "client = true, or leave it out")
            for n in m.nodes:
                if n in seen:
                    raise ValueError(f"node {n} is placed on both {seen[n]} and {name}")
                seen[n] = name
        return self

    def placed(self) -> dict[str, str]:
        return {n: h for h, m in self.hosts.items() for n in m.nodes}

    def clients(self) -> list[str]:
        return [h for h, m in self.hosts.items() if m.client]

    def check_against(self, nodes: list[str], source: str) -> None:
        """Every node of the lab spec on exactly one host, and no host naming a node the spec lacks."""
        placed = self.placed()
        unknown = sorted(set(placed) - set(nodes))
        missing = [n for n in nodes if n not in placed]
        if unknown:
            raise SpecError(f"{source}: node {unknown[0]} (on host {placed[unknown[0]]}) is not in the lab spec",
                            hint=f"the lab spec's nodes are: {', '.join(nodes)}")
        if missing:
            raise SpecError(f"{source}: no host for node{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                            hint="add it to a host's nodes = [...]")


def load_hosts(path: str | Path) -> HostsSpec:
    data = read_toml(path, "hosts file")
    login = data.get("ssh")
    if isinstance(login, dict) and isinstance(login.get("known_hosts"), str):  # relative to the hosts file
        login["known_hosts"] = str((Path(path).parent / login["known_hosts"]).absolute())
    try:
        return HostsSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{path}: invalid hosts file ({exc.error_count()} problems)",
                        detail=format_validation(exc, str(path), "docs/reference/hosts.md")) from None
