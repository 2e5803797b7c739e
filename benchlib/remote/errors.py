"""What goes wrong with a remote lab."""

from __future__ import annotations

from benchlib.errors import LabError

__all__ = ["RemoteLabError"]


class RemoteLabError(LabError):
    """A remote lab that cannot be used as asked (a node down, a variable unset)."""
