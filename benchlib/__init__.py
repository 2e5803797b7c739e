"""benchlib: a workbench for benchmarking MySQL-family replication on real lab clusters."""

from benchlib.errors import BenchlibError

__version__ = "0.1.0"
__all__ = ["BenchlibError", "__version__"]
