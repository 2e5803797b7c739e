"""Campaign axes, each a unit (``benchlib.axes.registry``): the built-in ones are registered here, in the order their
parts join a configuration's key: the stale-read probe, the read split, the fault, the sustained-throughput search,
the stalled replica.

    from benchlib import axes
    axes.AXES["fault"].excludes        # what cannot run beside a fault
"""

from benchlib.axes import probe  # noqa: F401  (each registers itself, in this order)
from benchlib.axes import read_split  # noqa: F401
from benchlib.axes import fault  # noqa: F401
from benchlib.axes import search  # noqa: F401
from benchlib.axes import stall  # noqa: F401
from benchlib.axes.registry import AXES, Axis, AxisRun, RunContext, get, register, resolve

__all__ = ["AXES", "fault", "probe", "read_split", "search", "stall", "Axis", "AxisRun", "RunContext", "get", "register", "resolve"]
