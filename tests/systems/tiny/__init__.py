"""A throwaway system, a package of its own as a third party's would be: ``facts.py`` (its entry point) and
``system.py`` (what acts on its servers: here a MariaDB server, read and set as MariaDB replication's are)."""

__all__ = ["facts", "system"]
