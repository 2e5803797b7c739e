"""Generated account passwords of a lab, kept in a mode-600 file beside the lab record.

Accounts every lab node has (the same on every node of a lab; ``account_statements`` creates them, each flavour
naming the privileges its server spells differently):
- ``root``@localhost: administration over the unix socket only;
- ``bench``: load and monitoring (all on ``sbtest`` and ``benchlib``, PROCESS and the server's replication
  monitoring privileges), from loopback and the lab's own namespace addresses;
- ``repl``: REPLICATION SLAVE (and what Group Replication's recovery needs on MySQL), same hosts;
- ``router``: MySQL Router's account (``benchlib_router`` on the server), created by Router's own bootstrap on a
  group fronted by Router (``benchlib.lab.router``).
No anonymous account and no account without a password exists.
Passwords never appear on a command line, in a log or in ``repr``.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from benchlib.errors import LabError

ACCOUNTS = ("root", "bench", "repl", "router")


def account_statements(creds: "Credentials", hosts: tuple[str, ...], monitor: str, replicate: str,
                       more_for_bench: tuple[str, ...] = ()) -> list[tuple[str, tuple]]:
    """(statement, parameters) creating the accounts: root's password; ``bench`` and ``repl`` per host of ``hosts``,
    ``bench`` with the global privileges ``monitor`` and the grants ``more_for_bench`` (each with %s for the host),
    ``repl`` with the global privileges ``replicate``."""
    stmts: list[tuple[str, tuple]] = [("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (creds.password("root"),))]
    for host in hosts:
        stmts += [
            ("CREATE USER 'bench'@%s IDENTIFIED BY %s", (host, creds.password("bench"))),
            ("GRANT ALL PRIVILEGES ON `sbtest`.* TO 'bench'@%s", (host,)),
            ("GRANT ALL PRIVILEGES ON `benchlib`.* TO 'bench'@%s", (host,)),
            (f"GRANT {monitor} ON *.* TO 'bench'@%s", (host,)),
            *((grant, (host,)) for grant in more_for_bench),
            ("CREATE USER 'repl'@%s IDENTIFIED BY %s", (host, creds.password("repl"))),
            (f"GRANT {replicate} ON *.* TO 'repl'@%s", (host,)),
        ]
    return stmts


@dataclass(frozen=True)
class Credentials:
    passwords: dict[str, str]

    def password(self, user: str) -> str:
        return self.passwords[user]

    def __repr__(self) -> str:
        return f"Credentials(users={sorted(self.passwords)}, passwords=***)"

    __str__ = __repr__


def secrets_path(lab_dir: Path) -> Path:
    return lab_dir / "secrets.json"


def create(lab_dir: Path) -> Credentials:
    creds = Credentials({user: secrets.token_urlsafe(18) for user in ACCOUNTS})
    path = secrets_path(lab_dir)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(creds.passwords, f)
    return creds


def load(lab_dir: Path) -> Credentials:
    path = secrets_path(lab_dir)
    try:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise LabError(f"{path} is readable by others (mode {mode:o})", hint=f"chmod 600 {path}")
        return Credentials(json.loads(path.read_text()))
    except FileNotFoundError:
        raise LabError(f"the lab's password file {path} is missing", hint="recreate the lab: benchlib lab down, then up") from None
