"""``benchlib provision`` and ``benchlib unprovision``: a lab spec built on real hosts with Ansible, and taken away.

Provisioning keeps a folder (``provisioned/<lab>`` by default) with everything needed to go on or undo:

- ``state.json``: the lab spec and hosts file it was given (their text), per host the packages it had before and
  those it installed and whether it created the ``mysql`` account, and the state each host reached;
- ``secrets.json`` (mode 600): the generated passwords of root, bench and repl; ``bench.password`` (mode 600): the
  password the remote lab spec names;
- ``remote.toml``: the remote lab spec of what was built, for ``benchlib lab check`` and campaigns;
- ``provision.log``: Ansible's output, every run appended; ``ansible/``: its inventory and artifacts.

A failed run leaves the folder: it says which host reached which state, and the same command goes on from there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import catalogue
from benchlib.errors import LabError, SpecError
from benchlib.lab import relay
from benchlib.lab import secrets as lab_secrets
from benchlib.lab.node import write_private
from benchlib.lab.spec import LabSpec, load_spec, parse_spec
from benchlib.provision import wanhost
from benchlib.provision.ansible_run import ProvisionError, refuse_leaked, run_playbook
from benchlib.provision.hosts import HostsSpec, load_hosts
from benchlib.provision.plan import BASE, Plan, PlannedNode

__all__ = ["Provisioned", "provision", "unprovision"]

STATE = "state.json"


@dataclass
class Provisioned:
    dir: Path
    remote_spec: Path
    changed: int
    seconds: float

    def summary(self) -> str:
        what = (f"{self.changed} change{'s' if self.changed != 1 else ''}" if self.changed
                else "nothing changed: the hosts already were as the spec says")
        return f"{what} ({self.seconds:.0f} s); remote lab spec: {self.remote_spec}"


def _controller_addresses(hosts: HostsSpec) -> list[str]:
    """This machine's source address toward each host (where benchlib and the hosts see it connect from)."""
    out = set()
    for m in hosts.hosts.values():
        res = subprocess.run(["ip", "route", "get", m.address], capture_output=True, text=True)
        parts = res.stdout.split()
        if res.returncode == 0 and "src" in parts:
            out.add(parts[parts.index("src") + 1])
    return sorted(out)


def _ssh_key(hosts: HostsSpec) -> str | None:
    login = hosts.ssh
    if login.key_env is None:
        return None
    key = os.environ.get(login.key_env)
    if not key:
        raise SpecError(f"environment variable {login.key_env} is not set (the SSH private key the hosts file names)",
                        hint=f'export {login.key_env}="$(cat ~/.ssh/id_ed25519)" before running benchlib')
    return key if key.endswith("\n") else key + "\n"


def _server_archive(plan: Plan) -> dict[str, Path]:
    """Flavour -> a tar.gz of the server folder copied to the hosts (made once, kept beside benchlib's prefix)."""
    out = {}
    for node in plan.nodes.values():
        prefix = node.server.local_prefix
        if prefix is None or node.flavor.name in out:
            continue
        archive = prefix.parent / ".archives" / f"{prefix.name}.tar.gz"
        if not archive.exists():
            archive.parent.mkdir(parents=True, exist_ok=True)
            partial = archive.with_suffix(".partial")
            marker = prefix / ".benchlib-complete"
            marker.write_text("copied by benchlib provision\n")
            with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
                tar.add(prefix, arcname=prefix.name)
            os.replace(partial, archive)
        out[node.flavor.name] = archive
    return out


def _env_file(node: PlannedNode, plan_service: str) -> str:
    cmd = node.start_command() + ["--user=mysql"]
    return (f"# {node.name}: written by benchlib provision\nMYSQLD={shlex.quote(shlex.join(cmd))}\n"
            f"DIR={shlex.quote(str(node.plan.dir))}\nPIDFILE={shlex.quote(str(node.plan.pid_file))}\n"
            f"SERVICE={shlex.quote(plan_service)}\n")


def inventory(plan: Plan, state: dict[str, Any], archives: dict[str, Path]) -> dict:
    """Ansible's inventory: machines, nodes and the groups the playbooks order their work by (no secrets)."""
    hosts = plan.hosts
    login = hosts.ssh
    common = {"ansible_user": login.user, "ansible_port": login.port, "ansible_become": login.become,
              "ansible_python_interpreter": "/usr/bin/python3", "service": hosts.defaults.service,
              "base": str(BASE), "apt_update": hosts.defaults.apt_update,
              "wan_files": [str(Path(relay.__file__)), str(Path(wanhost.__file__))]}
    if login.known_hosts:
        common["ansible_ssh_common_args"] = (f"-o UserKnownHostsFile={shlex.quote(login.known_hosts)} "
                                             "-o StrictHostKeyChecking=yes")
    machines: dict[str, Any] = {}
    for host, nodes in plan.machines().items():
        m = hosts.hosts[host]
        v: dict[str, Any] = {"ansible_host": m.address, "packages": plan.packages(host),
                             "installed": state.get("installed", {}).get(host, []),
                             "before": state.get("before", {}).get(host, []),
                             "made_mysql_user": state.get("made_mysql_user", {}).get(host, False)}
        peers = plan.wan_peers(host)
        if peers:  # the WAN delay this host adds (benchlib.provision.wanhost)
            v["wan"] = {"shaper": state.get("shaper", {}).get(host, "relay"), "service": hosts.defaults.service,
                        "source": m.address, "peers": peers}
        archived = {n.flavor.name for n in nodes} & set(archives)
        if archived:
            flavor = sorted(archived)[0]
            node = next(n for n in nodes if n.flavor.name == flavor)
            v.update(server_archive=str(archives[flavor]), server_prefix=str(node.server.remote_prefix))
        machines[host] = v
    groups: dict[str, dict[str, Any]] = {g: {} for g in ("first", "joiners", "replicas", "semisync_primaries",
                                                          "galera_nodes", "group_first", "group_joiners")}
    nodes: dict[str, Any] = {}
    for node in plan.nodes.values():
        wiring = catalogue.topology(node.plan.topology).wiring
        first = node is plan.first_of(node.plan.cluster)
        p = node.plan
        v = {"ansible_host": plan.hosts.hosts[node.host].address,
             "node": {"dir": str(p.dir), "datadir": str(p.datadir), "socket": str(p.socket), "port": p.port,
                      "address": node.address, "cnf": node.cnf, "env": _env_file(node, hosts.defaults.service),
                      "initialize": node.initialize_command(),
                      "start_args": list(wiring.first_args) if first else [],
                      "init_file": first or wiring.others_make_accounts}}
        for group in wiring.first if first else wiring.others:
            groups[group][node.name] = None
        wire = plan.replication_of(node)
        if wire:
            v["wire"] = wire
        semi = plan.semisync_of(node)
        if semi:
            v["semisync"] = {**semi, "replicas": [n.name for n in plan.cluster_nodes(p.cluster)[1:]]}
        v["cluster_size"] = len(plan.cluster_nodes(p.cluster))
        nodes[node.name] = v
    children = {"machines": {"hosts": machines}, "nodes": {"hosts": nodes}}
    children.update({g: {"hosts": dict(members)} for g, members in groups.items()})
    return {"all": {"vars": common, "children": children}}


def _remote_spec(plan: Plan, source: str) -> str:
    """The remote lab spec of what was built (TOML)."""
    lab, hosts = plan.lab, plan.hosts
    login = hosts.ssh
    ssh = f'ssh = {{ user = "{login.user}", ' + (f'key_env = "{login.key_env}"' if login.key_env else "agent = true")
    if login.known_hosts:
        ssh += f', known_hosts = "{login.known_hosts}"'
    ssh += " }"
    lines = [f"# written by benchlib provision from {source}; provision again rather than edit it",
             'kind = "remote"', f'name = "{lab.name}"', "allow_restart = false",
             'provisioned = "."                     # this folder: benchlib may kill, freeze and restart the servers',
             "", "[credentials]", 'user = "bench"',
             'password_file = "bench.password"']
    for cname, cluster in lab.clusters.items():
        nodes = plan.cluster_nodes(cname)
        system = nodes[0].flavor.system(cluster.topology)
        facts = catalogue.of(system)
        lines += ["", f"[clusters.{cname}]", f'system = "{system}"']
        if facts.modes:  # Group Replication: single- or multi-primary
            lines.append(f'mode = "{facts.modes[0] if cluster.single_primary else facts.modes[1]}"')
        elif facts.topology != cluster.topology:  # e.g. semi-sync MariaDB
            lines.append(f'topology = "{cluster.topology}"')
        lines.append("nodes = [")
        for i, n in enumerate(nodes):
            role = facts.roles[0] if i == 0 else facts.roles[-1]
            lines.append(f'    {{ name = "{n.name}", host = "{n.address}", port = {n.plan.port}, role = "{role}", '
                         f"{ssh} }},")
        lines.append("]")
    for sname, site in lab.sites.items():
        lines += ["", f"[sites.{sname}]                          # emulated on the hosts (benchlib.provision.wanhost)",
                  f"nodes = {json.dumps(site.nodes)}", f"rtt_ms = {site.rtt_ms:g}"]
        if site.jitter_ms:
            lines.append(f"jitter_ms = {site.jitter_ms:g}")
    for h in hosts.clients():
        m = hosts.hosts[h]
        key = f'key_env = "{login.key_env}"' if login.key_env else "agent = true"
        lines += ["", f"[clients.{h.replace('-', '')[:12]}]", f'host = "{m.address}"', f'user = "{login.user}"', key]
        if login.known_hosts:
            lines.append(f'known_hosts = "{login.known_hosts}"')
    return "\n".join(lines) + "\n"


def _reached(plan: Plan, exc: ProvisionError) -> dict[str, str]:
    """Per machine, where a failed run left it: the ones it failed on, else the last play it got through."""
    failed = {plan.nodes[h].host if h in plan.nodes else h for h in exc.hosts}
    return {h: "failed" if h in failed else (f"through '{exc.reached[h]}'" if h in exc.reached else "not reached")
            for h in plan.machines()}


def _save(dir: Path, state: dict) -> None:
    tmp = dir / (STATE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, dir / STATE)


def provision(lab_path: str | Path, hosts_path: str | Path, dir: str | Path | None = None, *,
              quiet: bool = False) -> Provisioned:
    started = time.monotonic()
    lab_path, hosts_path = Path(lab_path), Path(hosts_path)
    lab = load_spec(lab_path)  # a missing or invalid file: one message
    lab_text = lab_path.read_text()
    hosts = load_hosts(hosts_path)
    hosts_data = hosts.model_dump(mode="json")
    hosts.check_against(lab.node_names(), str(hosts_path))
    key = _ssh_key(hosts)
    plan = Plan(lab, hosts, _controller_addresses(hosts))  # what cannot be built is refused before anything is made
    # absolute before Ansible sees it: Ansible resolves a relative path from its playbooks' folder
    folder = (Path(dir) if dir else Path("provisioned") / lab.name).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    state: dict[str, Any] = {}
    if (folder / STATE).exists():
        state = json.loads((folder / STATE).read_text())
        if state.get("lab") != lab_text or state.get("hosts") != hosts_data:
            raise LabError(f"{folder} holds a lab provisioned from another spec or hosts file",
                           hint=f"benchlib unprovision {folder} first, or give another folder (--dir)")
    else:
        state = {"lab": lab_text, "hosts": hosts_data, "installed": {}, "made_mysql_user": {}, "reached": {}}
        _save(folder, state)
    creds = (lab_secrets.load(folder) if lab_secrets.secrets_path(folder).exists()
             else lab_secrets.create(folder))
    log = folder / "provision.log"
    secret_file = folder / "secrets.vars.json"
    passwords = {u: creds.password(u) for u in lab_secrets.ACCOUNTS if u in creds.passwords}
    write_private(secret_file, json.dumps({"secrets": {
        "passwords": passwords, "init_sql": {n: plan.init_sql(node, creds) for n, node in plan.nodes.items()}}}), None)
    try:
        archives = _server_archive(plan)
        # what each host had before (only what provisioning installs is removed by unprovision), and whether a node's
        # port is taken: asked until every host has answered once
        if any(h not in state.get("before", {}) for h in plan.machines()):
            facts = run_playbook("facts.yml", private_dir=folder / "ansible",
                                 inventory=inventory(plan, state, archives), extravars_file=secret_file, ssh_key=key,
                                 log=log, what="provision", quiet=quiet)
            for host in plan.machines():
                lines = str(facts.facts.get(host, {}).get("stdout", "")).splitlines()
                have = {line.split()[1] for line in lines if line.startswith("have ")}
                busy = [line[5:] for line in lines if line.startswith("busy ")]
                if busy:
                    raise ProvisionError(f"host {host}: {busy[0]}", host=host,
                                         hint="stop what listens there, or set [defaults] port in the hosts file to a "
                                              "free one")
                if host not in state.get("before", {}):
                    state.setdefault("shaper", {})[host] = "netem" if "netem yes" in lines else "relay"
                    state["installed"][host] = [p for p in plan.packages(host) if p not in have]
                    state["made_mysql_user"][host] = "user mysql" not in lines
                    state.setdefault("before", {})[host] = sorted(line[4:] for line in lines
                                                                  if line.startswith("pkg "))
            _save(folder, state)
        outcome = run_playbook("provision.yml", private_dir=folder / "ansible",
                               inventory=inventory(plan, state, archives), extravars_file=secret_file, ssh_key=key,
                               log=log, what="provision", quiet=quiet)
        state["reached"] = {h: "provisioned" for h in plan.machines()}
    except ProvisionError as exc:
        state["reached"] = _reached(plan, exc)
        _save(folder, state)
        raise
    finally:
        refuse_leaked(list(passwords.values()), log, folder / "ansible")
    _save(folder, state)
    write_private(folder / "bench.password", creds.password("bench"), None)
    remote = folder / "remote.toml"
    remote.write_text(_remote_spec(plan, f"{lab_path} and {hosts_path}"))
    return Provisioned(folder, remote, outcome.total_changed, time.monotonic() - started)


def reopen(folder: Path) -> tuple[dict, Plan, str | None]:
    """The state, plan and SSH key of a provisioned lab's folder."""
    folder = folder.absolute()
    if not (folder / STATE).exists():
        raise LabError(f"{folder} holds no provisioned lab ({STATE} is missing)",
                       hint="give the folder benchlib provision printed (provisioned/<lab> by default)")
    state = json.loads((folder / STATE).read_text())
    lab: LabSpec = parse_spec(state["lab"], f"{folder}/{STATE}")
    hosts = HostsSpec.model_validate(state["hosts"])
    return state, Plan(lab, hosts, _controller_addresses(hosts)), _ssh_key(hosts)


def heal(dir: str | Path, nodes: list[str], *, quiet: bool = False) -> list[str]:
    """Start ``nodes`` again on their hosts and wait until each is back in its cluster (Ansible's heal.yml on those
    nodes); returns what happened, in words, per node."""
    folder = Path(dir).absolute()
    state, plan, key = reopen(folder)
    run_playbook("heal.yml", private_dir=folder / "ansible", inventory=inventory(plan, state, {}),
                 extravars_file=folder / "secrets.vars.json", ssh_key=key, log=folder / "provision.log", what="heal",
                 quiet=quiet, limit=",".join(nodes))
    return [f"{n}: started again on {plan.nodes[n].host} and back in {plan.nodes[n].plan.cluster}" for n in nodes]


def unprovision(dir: str | Path, *, quiet: bool = False) -> tuple[int, float]:
    """Undo what ``provision`` built from ``dir``; returns (changes, seconds) and removes ``dir``."""
    started = time.monotonic()
    folder = Path(dir).absolute()
    state, plan, key = reopen(folder)
    log = folder / "provision.log"
    secret_file = folder / "secrets.vars.json"
    if not secret_file.exists():
        write_private(secret_file, "{}", None)
    outcome = run_playbook("unprovision.yml", private_dir=folder / "ansible", inventory=inventory(plan, state, {}),
                           extravars_file=secret_file, ssh_key=key, log=log, what="unprovision", quiet=quiet)
    shutil.rmtree(folder, ignore_errors=True)
    return outcome.total_changed, time.monotonic() - started

