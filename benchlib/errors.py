"""The one root exception of benchlib and its precise subclasses.

Every error a user can cause (bad spec, port in use, missing binary, a node that
does not start) is a ``BenchlibError``: the CLI prints its message on one line
(plus any detail lines it carries) and exits with code 2, without a traceback.
"""

from __future__ import annotations


class BenchlibError(Exception):
    """Root of every error benchlib raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail

    def render(self) -> str:
        """The text the CLI prints: message, the fix, then any detail (e.g. a log tail)."""
        parts = [self.message]
        if self.hint:
            parts.append(f"  fix: {self.hint}")
        if self.detail:
            parts.append(self.detail.rstrip())
        return "\n".join(parts)

    def __str__(self) -> str:  # keeps pytest output and logs readable
        return self.render()


class SpecError(BenchlibError):
    """A lab spec (TOML) that cannot be read or does not validate."""


class MissingDependencyError(BenchlibError):
    """A system binary or capability (mariadbd, galera, sysbench, netns, tun) is missing."""


class LabError(BenchlibError):
    """A lab operation that cannot be carried out (no such lab, already exists, port in use...)."""


class NodeStartError(LabError):
    """A server process that failed to start or to become ready; carries its error-log tail."""


class ReplicationError(LabError):
    """Replication that did not come up, or a replica that did not catch up in time."""


class SettingError(LabError):
    """A runtime setting that is unknown, invalid, or cannot be changed without a restart."""


class NetworkError(LabError):
    """A WAN link (namespace, TUN device, relay) that could not be set up or measured."""


class LabSpecMismatch(LabError):
    """A lab of that name is up with another spec than the one given."""


class StoreError(BenchlibError):
    """A run folder that cannot be written (exists, holds a secret) or read (damaged, unknown format)."""


class SecretRefusedError(StoreError):
    """Something about to be saved holds a secret (a password): nothing is written."""


class DiskFullError(StoreError):
    """The disk under a campaign or report folder is full: nothing half-written is kept."""

    @classmethod
    def of(cls, folder, what: str) -> "DiskFullError":
        """The message for a full disk under ``folder``: where, how much is free, what was removed and kept."""
        import shutil

        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            free = None
        room = f"{free / 2**20:.1f} MiB free" if free is not None else "free space unknown"
        return cls(f"no space left on the device of {folder} ({room}): {what}",
                   hint="free space on that file system (or use another --runs-dir), then run the same command "
                        "again: what is stored is kept and reused")


def disk_full(exc: BaseException) -> bool:
    """An OS error that says the file system (or the user's quota) is full."""
    import errno

    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def run_step(step) -> None:
    """A bootstrap step run as ``python -m``: prints what ``step()`` returns, or its ``BenchlibError`` as one message
    on stderr, and exits 0 or the error's code (no traceback)."""
    import sys

    try:
        print(step())
    except BenchlibError as exc:
        print(exc.render(), file=sys.stderr)
        sys.exit(exc.exit_code)
