"""Server binaries: which mysqld/mariadbd a lab runs, found where a user keeps one.

A ``Server`` is one unpacked MySQL-family server: its ``mysqld``, the directories its
plugins and error messages live in, how to run it (some run through their own dynamic
loader), its flavour and version, the plugins it ships. Where they are found, in order:

1. a ``basedir`` a lab spec names: any unpacked server (Oracle or Percona tarballs, a
   previous download; ``bin/mysqld`` or ``sbin/mysqld`` or ``usr/sbin/mysqld`` below it);
2. the system's own server (MariaDB's ``mariadbd``; a MySQL ``mysqld`` such as Ubuntu's
   ``mysql-server-core-8.0``; Debian's ``/usr/sbin/mysqld`` is MariaDB's alias and counts as MariaDB);
3. benchlib's own prefix (``.servers/`` in the checkout, or ``$BENCHLIB_SERVERS``), where
   ``python -m benchlib.servers.debian`` (run by the bootstrap) unpacks Debian's MySQL 9 with
   its library closure, run through the prefix's own loader (``benchlib.servers.debian``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from benchlib import catalogue
from benchlib.errors import MissingDependencyError

__all__ = ["FLAVORS", "PLUGINS", "Server", "find", "found", "prefix_root", "probe"]

#: the server flavours benchlib tells apart by their ``--version``, and how people call them
FLAVORS = {name: facts.title for name, facts in catalogue.SERVERS.items()}
#: where to get a server of a flavour that is not found
GET = {"mariadb": "run ./scripts/demo as root, or: apt-get install -y mariadb-server galera-4",
       "mysql": "run ./scripts/bootstrap (it fetches Debian's MySQL 9 into .servers/), or: python -m "
                "benchlib.servers.debian; or name an unpacked server with basedir in the spec"}
#: plugins ``benchlib doctor`` reports (file names without .so)
PLUGINS = {"group_replication": "group_replication", "semisync": "semisync_source", "clone": "mysql_clone",
           "gr_flow_control_stats": "component_group_replication_flow_control_stats"}
_VERSION = re.compile(r"Ver\s+(\d+\.\d+\.\d+)(\S*)")


def prefix_root() -> Path:
    """Where benchlib keeps the servers it fetched (a checkout's ``.servers/`` unless ``$BENCHLIB_SERVERS``)."""
    env = os.environ.get("BENCHLIB_SERVERS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".servers"


@dataclass(frozen=True)
class Server:
    flavor: str  # mariadb | mysql
    version: str  # "9.7.4"
    mysqld: Path
    source: str  # where it was found, for people: "system", "basedir /opt/mysql-8.4", "benchlib prefix"
    plugin_dir: Path | None = None
    share_dir: Path | None = None  # lc_messages_dir (errmsg.sys)
    library_path: Path | None = None  # run through this prefix's loader with this library path
    version_text: str = ""

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.version.split("."))

    @property
    def label(self) -> str:
        """"MySQL 9.7.4" / "MariaDB 10.11.14": for legends and messages."""
        return f"{FLAVORS.get(self.flavor, self.flavor)} {self.version}"

    def argv(self, *args: str, program: Path | None = None) -> list[str]:
        """The command that runs ``program`` (default: mysqld) of this server with ``args``."""
        exe = str(program or self.mysqld)
        if self.library_path is not None:
            return [str(self.library_path / "ld-linux-x86-64.so.2"), "--library-path", str(self.library_path), exe,
                    *args]
        return [exe, *args]

    def program(self, name: str) -> str:
        """Another program of this server (``mariadb-install-db``): beside its mysqld, in its base's bin or
        scripts, else on PATH."""
        base = self.mysqld.parent.parent
        for folder in (self.mysqld.parent, base / "bin", base / "scripts"):
            if (folder / name).exists():
                return str(folder / name)
        found = shutil.which(name)
        if found is None:
            raise MissingDependencyError(f"{name} not found next to {self.mysqld} nor on PATH",
                                         hint=GET.get(self.flavor, f"install {name}"))
        return found

    def has_plugin(self, name: str) -> bool:
        return self.plugin_dir is not None and (self.plugin_dir / f"{name}.so").exists()

    def plugins(self) -> dict[str, bool]:
        return {k: self.has_plugin(v) for k, v in PLUGINS.items()}


def _layout(mysqld: Path) -> tuple[Path | None, Path | None]:
    """(plugin dir, share dir) of the server whose mysqld is ``mysqld`` (tarball or distribution layout)."""
    base = mysqld.parent.parent  # bin/.. or sbin/..
    plugin = next((p for p in (base / "lib" / "plugin", base / "lib" / "mysql" / "plugin",
                               base / "lib64" / "mysql" / "plugin") if p.is_dir()), None)
    share = next((p for p in (base / "share" / "mysql", base / "share") if (p / "english" / "errmsg.sys").exists()),
                 None)
    return plugin, share


@functools.lru_cache(maxsize=32)
def probe(mysqld: str, library_path: str | None = None, source: str = "") -> Server | None:
    """The server whose binary is ``mysqld`` (None: it does not run or is not MySQL-family)."""
    lib = Path(library_path) if library_path else None
    stub = Server("mysql", "0.0.0", Path(mysqld), source, library_path=lib)
    try:
        out = subprocess.run(stub.argv("--no-defaults", "--version"), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(out.stdout)
    if out.returncode != 0 or not m:
        return None
    flavor = "mariadb" if "mariadb" in (m.group(2) + out.stdout).lower() else "mysql"
    plugin, share = _layout(Path(mysqld).resolve() if flavor == "mysql" else Path(mysqld))
    return Server(flavor, m.group(1), Path(mysqld), source, plugin, share, lib, out.stdout.strip())


def _in_basedir(basedir: Path) -> Server | None:
    for rel in ("bin/mysqld", "sbin/mysqld", "usr/sbin/mysqld", "bin/mariadbd", "sbin/mariadbd", "usr/sbin/mariadbd"):
        exe = basedir / rel
        if exe.exists():
            lib = exe.parent.parent / "lib" / "x86_64-linux-gnu"
            own_loader = lib if (lib / "ld-linux-x86-64.so.2").exists() else None
            return probe(str(exe), str(own_loader) if own_loader else None, f"basedir {basedir}")
    return None


def found(basedir: str | Path | None = None) -> list[Server]:
    """Every server this machine has (a spec's ``basedir`` first), each once."""
    out: list[Server] = []
    if basedir is not None:
        s = _in_basedir(Path(basedir))
        if s:
            out.append(s)
    for name in ("mariadbd", "mysqld"):
        path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if path:
            s = probe(path, None, "system")
            if s and name == catalogue.SERVERS[s.flavor].binaries[0]:  # Debian's mysqld is MariaDB's alias
                out.append(s)
    root = prefix_root()
    if root.is_dir():
        for prefix in sorted(root.iterdir()):
            if prefix.is_dir() and not prefix.name.startswith("."):
                s = _in_basedir(prefix)
                if s:
                    out.append(replace(s, source=f"benchlib prefix {prefix}"))
    seen, unique = set(), []
    for s in out:
        key = (s.flavor, s.version, str(s.mysqld))
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return unique


def find(flavor: str, basedir: str | Path | None = None) -> Server:
    """The server a ``flavor`` cluster runs: the spec's ``basedir`` if given, else the first one found."""
    if basedir is not None:
        s = _in_basedir(Path(basedir))
        if s is None:
            raise MissingDependencyError(
                f"basedir {basedir}: no runnable mysqld or mariadbd below it",
                hint="give the directory an unpacked server tarball unpacks to (it holds bin/mysqld), "
                     "or remove basedir to use the server benchlib finds")
        if s.flavor != flavor:
            raise MissingDependencyError(f"basedir {basedir} holds {s.label}, not a {flavor} server",
                                         hint=f"set system = \"{s.flavor}\" for this cluster, or give a {flavor} basedir")
        return s
    for s in found():
        if s.flavor == flavor:
            return s
    raise MissingDependencyError(f"no {FLAVORS.get(flavor, flavor)} server found (the system's, or benchlib's prefix)",
                                 hint=GET.get(flavor, "name an unpacked server with basedir in the spec"))
