"""Generated account passwords of a lab, kept in a mode-600 file beside the lab record.

Accounts every lab node has (the same on every node of a lab):
- ``root``@localhost: administration over the unix socket only;
- ``bench``: load and monitoring (all on ``sbtest`` and ``benchlib``, PROCESS,
  REPLICATION CLIENT, SLAVE MONITOR, BINLOG MONITOR), from loopback and the lab's
  own namespace addresses;
- ``repl``: REPLICATION SLAVE, same hosts.
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

ACCOUNTS = ("root", "bench", "repl")


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
