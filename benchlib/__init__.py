"""benchlib: a workbench for benchmarking MySQL-family replication on real lab clusters."""

from benchlib.errors import BenchlibError

__version__ = "0.1.0"
__all__ = ["BenchlibError", "__version__", "load_campaign"]


def __getattr__(name: str):
    if name == "load_campaign":  # imported on first use: the CLI does not pay for pandas at start
        from benchlib.store import load_campaign

        return load_campaign
    raise AttributeError(f"module 'benchlib' has no attribute {name!r}")
