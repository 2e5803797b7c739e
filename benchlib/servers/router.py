"""MySQL Router: the program InnoDB Cluster puts in front of a group, found beside the MySQL server benchlib runs.

``python -m benchlib.servers.debian`` unpacks Debian's ``mysql-router`` (the same 9.x build as the server) into
benchlib's prefix; it runs through the prefix's own loader, with its own libraries (``usr/lib/mysql-router``) added
to the server's, and its plugins from the prefix (the program's built-in plugin folder is the system's
``/usr/lib/mysqlrouter/plugin``, absent here). A system-wide ``mysqlrouter`` on PATH is used when the prefix has
none.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchlib.errors import MissingDependencyError
from benchlib.servers import Server, find

__all__ = ["RouterProgram", "find_router"]

GET = ("run ./scripts/bootstrap (it fetches Debian's MySQL Router 9 with the server into .servers/), or: "
       "python -m benchlib.servers.debian --force")


@dataclass(frozen=True)
class RouterProgram:
    program: Path  # mysqlrouter
    version: str  # "9.7.4"
    library_path: str | None = None  # run through the prefix's loader with these libraries (":"-separated)
    plugin_folder: Path | None = None  # None: the program's built-in one

    @property
    def label(self) -> str:
        return f"MySQL Router {self.version}"

    def argv(self, *args: str) -> list[str]:
        if self.library_path is not None:
            loader = self.library_path.split(":")[0] + "/ld-linux-x86-64.so.2"
            return [loader, "--library-path", self.library_path, str(self.program), *args]
        return [str(self.program), *args]


def _in_prefix(server: Server) -> RouterProgram | None:
    usr = server.mysqld.parent.parent  # .../usr/sbin/mysqld -> .../usr
    program = usr / "bin" / "mysqlrouter"
    if server.library_path is None or not program.exists():
        return None
    return _probe(str(program), f"{server.library_path}:{usr / 'lib' / 'mysql-router'}",
                  str(usr / "lib" / "mysqlrouter" / "plugin"))


@functools.lru_cache(maxsize=8)
def _probe(program: str, library_path: str | None, plugin_folder: str | None) -> RouterProgram | None:
    stub = RouterProgram(Path(program), "0", library_path)
    try:
        out = subprocess.run(stub.argv("--version"), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Ver\s+(\d+\.\d+\.\d+)", out.stdout)
    if out.returncode != 0 or not m:
        return None
    return RouterProgram(Path(program), m.group(1), library_path, Path(plugin_folder) if plugin_folder else None)


def find_router(server: Server | None = None) -> RouterProgram:
    """The MySQL Router beside ``server`` (default: the MySQL server benchlib finds), else the system's."""
    try:
        server = server or find("mysql")
    except MissingDependencyError:
        server = None
    found = _in_prefix(server) if server is not None else None
    if found is None and (path := shutil.which("mysqlrouter")):
        found = _probe(path, None, None)
    if found is None:
        raise MissingDependencyError("MySQL Router (mysqlrouter) not found: a group fronted by Router needs it",
                                     hint=GET)
    return found
