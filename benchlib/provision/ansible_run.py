"""Running benchlib's playbooks with ansible-runner: progress on the console, every event's text in a log kept with
the lab, a failed task as one error naming the host, the task and Ansible's message.

Secrets never reach a command line: they are in an extra-vars file (mode 600) named by path, and the SSH key goes to
ansible-runner's ssh-agent through a pipe. After each run the log and Ansible's artifacts are searched for every
password: one found there is an error (the files are removed first).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib.errors import LabError, MissingDependencyError, SecretRefusedError
from benchlib.provision import collections

__all__ = ["PLAYBOOKS", "ProvisionError", "Outcome", "refuse_leaked", "run_playbook"]

PLAYBOOKS = Path(__file__).parent / "ansible"


class ProvisionError(LabError):
    """A playbook task that failed on a host, or a host Ansible could not reach: ``host`` names it (a machine, or a
    node of one), ``hosts`` every one that failed or did not answer, ``reached`` says how far each inventory host got
    (the last play it got through a task of)."""

    def __init__(self, message: str, *, host: str | None = None, reached: dict[str, str] | None = None,
                 hosts: tuple[str, ...] = (), **kw):
        super().__init__(message, **kw)
        self.host = host
        self.hosts = tuple(hosts) or ((host,) if host else ())
        self.reached = dict(reached or {})


@dataclass
class Outcome:
    changed: dict[str, int] = field(default_factory=dict)  # host -> tasks that changed something
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (host, task, message)
    unreachable: list[tuple[str, str]] = field(default_factory=list)  # (host, message)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # host -> what a task registered for benchlib
    reached: dict[str, str] = field(default_factory=dict)  # host -> the last play it got through a task of
    status: str = ""

    @property
    def total_changed(self) -> int:
        return sum(self.changed.values())


def _message(res: dict[str, Any]) -> str:
    """Ansible's own words for a failed task, shortest first: its message, else the command's error output."""
    if res.get("censored"):
        return "the task's output is hidden (it handles a password); its log on the host says more"
    parts = [str(res.get("msg") or "").strip()]
    for key in ("stderr", "stdout", "module_stderr"):
        text = str(res.get(key) or "").strip()
        if text and text not in parts[0]:
            parts.append(text[-1500:])
    results = res.get("results")
    if isinstance(results, list):  # a loop: the failed items' messages
        parts += [_message(r) for r in results if isinstance(r, dict) and r.get("failed")]
    return "\n".join(p for p in parts if p) or "no message"


def _address(inventory: dict, host: str) -> tuple[str, int] | None:
    """``host``'s address and SSH port in an Ansible inventory (its own vars over its groups'), None if absent."""
    def find(group: dict, inherited: dict) -> tuple[str, int] | None:
        here = {**inherited, **(group.get("vars") or {})}
        v = (group.get("hosts") or {}).get(host)
        if isinstance(v, dict) or host in (group.get("hosts") or {}):
            v = {**here, **(v or {})}
            return str(v.get("ansible_host", host)), int(v.get("ansible_port", 22))
        for child in (group.get("children") or {}).values():
            if (found := find(child or {}, here)) is not None:
                return found
        return None
    return find(inventory.get("all", inventory), {})


def _ssh_words(inventory: dict, host: str, said: str) -> str:
    """Ansible's words for a host it could not reach, or, when they are not SSH's own ("Data could not be sent to
    remote host ... Broken pipe": a master connection that failed under load), what connecting to its SSH port
    says now, in SSH's words ("connect to host A port P: Connection refused")."""
    import socket

    where = _address(inventory, host)
    if where is None or "connect to host" in said:
        return said
    try:
        with socket.create_connection(where, timeout=5):
            return said  # its port answers: Ansible's words stand
    except ConnectionRefusedError:
        return f"connect to host {where[0]} port {where[1]}: Connection refused"
    except TimeoutError:
        return f"connect to host {where[0]} port {where[1]}: Connection timed out"
    except OSError as e:
        return f"connect to host {where[0]} port {where[1]}: {e.strerror or e}"


def run_playbook(playbook: str, *, private_dir: Path, inventory: dict, extravars_file: Path, ssh_key: str | None,
                 log: Path, what: str, quiet: bool = False, limit: str | None = None) -> Outcome:
    """Run ``playbook`` (a file of ``PLAYBOOKS``); raise ``ProvisionError`` for the first failed task or unreachable
    host, after the run has ended (every host's state is in the log)."""
    try:
        import ansible_runner
    except ImportError:
        raise MissingDependencyError("ansible-runner is not installed (benchlib provision runs Ansible through it)",
                                     hint="pip install 'benchlib[provision]' (the bootstrap does)") from None
    coll = collections.path()
    if not (coll / "ansible_collections" / "community" / "mysql").is_dir():
        raise MissingDependencyError("Ansible's community.mysql collection is missing",
                                     hint="python -m benchlib.provision.collections")
    # Ansible resolves a relative path from the playbooks' folder, not from where benchlib was started
    private_dir, extravars_file, log = Path(private_dir).absolute(), Path(extravars_file).absolute(), Path(log).absolute()
    private_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (private_dir / "tmp").mkdir(exist_ok=True, mode=0o700)
    outcome = Outcome()
    say = (lambda text: None) if quiet else (lambda text: print(f"[{what}] {text}", file=sys.stderr, flush=True))

    play = [""]

    def on_event(event: dict) -> bool:
        data = event.get("event_data", {})
        kind = event.get("event", "")
        if kind == "playbook_on_play_start":
            play[0] = data.get("play", "")
        elif kind in ("runner_on_ok", "runner_on_skipped") and data.get("host"):
            outcome.reached[data["host"]] = play[0]
        with open(log, "a") as f:
            if event.get("stdout"):
                f.write(event["stdout"] + "\n")
        if kind == "playbook_on_play_start":
            say(f"play: {data.get('play', '')}")
        elif kind == "playbook_on_task_start":
            say(f"  {data.get('task', '')}")
        elif kind == "runner_on_ok" and data.get("res", {}).get("changed"):
            outcome.changed[data["host"]] = outcome.changed.get(data["host"], 0) + 1
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            outcome.failed.append((data.get("host", "?"), data.get("task", "?"), _message(data.get("res", {}))))
        elif kind == "runner_on_unreachable":
            outcome.unreachable.append((data.get("host", "?"), _message(data.get("res", {}))))
        if kind == "runner_on_ok" and data.get("task", "").startswith("facts for benchlib"):
            outcome.facts.setdefault(data["host"], {})["stdout"] = data.get("res", {}).get("stdout", "")
        return True

    control_dir = tempfile.mkdtemp(prefix="blcp")
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",  # ansible-playbook
        "ANSIBLE_COLLECTIONS_PATH": str(coll),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=20s -o ConnectTimeout=10",
        # a short folder of this run's own: a socket path is at most 107 bytes, and the lab's folder may be deep
        "ANSIBLE_SSH_CONTROL_PATH_DIR": control_dir,
        "ANSIBLE_LOCAL_TEMP": str(private_dir / "tmp"),
        "ANSIBLE_REMOTE_TEMP": "/tmp/.benchlib-ansible",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_FORKS": "24",  # every host and node at once (the default 5 queues an 8-host lab)
        "ANSIBLE_NOCOLOR": "True",
        "ANSIBLE_FORCE_COLOR": "False",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_INTERPRETER_PYTHON": "/usr/bin/python3",
    }
    try:
        runner = ansible_runner.run(
            private_data_dir=str(private_dir), project_dir=str(PLAYBOOKS), playbook=playbook, inventory=inventory,
            cmdline=f"-e @{extravars_file}", ssh_key=ssh_key, envvars=env, event_handler=on_event, quiet=True,
            rotate_artifacts=3, timeout=3600, settings={"suppress_ansible_output": True}, limit=limit,
        )
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)  # its SSH masters end on their own (ControlPersist)
    outcome.status = runner.status
    where = "\n".join(f"    {h}: went as far as '{p}'" for h, p in sorted(outcome.reached.items()))
    where = f"  where each host got to (the same command goes on from there):\n{where}\n" if where else ""
    if outcome.unreachable:
        first: dict[str, str] = {}
        for h, m in outcome.unreachable:  # every host that did not answer, each once, with SSH's own words
            line = m.splitlines()[0] if m else ""
            first.setdefault(h, line.rsplit("ssh: ", 1)[-1] if "ssh: " in line else _ssh_words(inventory, h, line))
        host = next(iter(first))
        names = ", ".join(sorted(first))
        said = (f"host {host} unreachable over SSH: {first[host]}" if len(first) == 1 else
                f"{len(first)} hosts unreachable over SSH: {names}")
        each = "".join(f"    {h}: {m}\n" for h, m in sorted(first.items())) if len(first) > 1 else ""
        raise ProvisionError(f"{what}: {said}", host=host, hosts=tuple(first), reached=outcome.reached,
                             hint="check each address, that sshd runs there, the SSH user and the key the hosts file "
                                  "names; then run the same command again (it goes on where it stopped)",
                             detail=f"{each}{where}  Ansible's log: {log}")
    if outcome.failed:
        host, task, msg = outcome.failed[0]
        more = f" (and {len(outcome.failed) - 1} more failures)" if len(outcome.failed) > 1 else ""
        raise ProvisionError(f"{what}: task {task!r} failed on {host}{more}: {msg.splitlines()[0]}",
                             host=host, reached=outcome.reached,
                             hint="fix what the message says, then run the same command again (it goes on where it "
                                  "stopped)",
                             detail="\n".join("    " + line for line in msg.splitlines()[1:12])
                             + f"\n{where}  Ansible's log: {log}")
    if runner.status != "successful":
        tail = log.read_text(errors="replace").splitlines()[-8:] if log.exists() else []
        raise ProvisionError(f"{what}: Ansible ended {runner.status} (exit {runner.rc})",
                             detail="\n".join("    " + line for line in tail) + f"\n  its log: {log}")
    return outcome


def refuse_leaked(secrets: list[str], *places: Path) -> None:
    """Fail when a password appears in a log or in Ansible's artifacts (they are removed first)."""
    for place in places:
        files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file() and not p.is_fifo()]
        for f in files:
            try:
                text = f.read_text(errors="replace")
            except OSError:
                continue
            if any(s and s in text for s in secrets):
                for p in places:
                    shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                raise SecretRefusedError(f"a password appeared in {f}: the file was removed",
                                         hint="report this: a playbook task that handles a password lacks no_log")

