"""The error chart code raises."""

from __future__ import annotations

from benchlib.errors import BenchlibError

__all__ = ["ChartError"]

class ChartError(BenchlibError):
    """A chart that cannot be built from the frame it was given."""
