"""MySQL Group Replication: a system of benchlib's, one package: its facts (``facts.py``, pure data, declared as an entry point of ``benchlib.systems``) and what acts on its servers (``system.py``, loaded by lab-side code when used)."""

__all__ = ["facts", "system"]  # its modules (none is imported here)
