"""benchlib's own campaign axes, one package each (``benchlib.axis`` says what an axis is): the stale-read probe, the
read split, the fault, the sustained-throughput search, the stalled replica. Each is declared as an entry point of the
group ``benchlib.axes`` in ``pyproject.toml`` and registered in ``benchlib.axis.AXES`` when first asked for; nothing
outside its package imports it.

    from benchlib.axis import AXES
    AXES.lookup("fault").excludes        # what cannot run beside a fault
"""

__all__ = ["fault", "probe", "read_split", "search", "stall"]  # its packages (none is imported here)
