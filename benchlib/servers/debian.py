"""Fetch Debian's MySQL 9 (unstable suite) into benchlib's own prefix, beside the system.

Debian bookworm has no MySQL server; its unstable suite carries ``mysql-server-core`` 9.x
with Group Replication, semi-sync and clone plugins (and ``mysql-router``, the same build's MySQL Router), built against newer libraries than
the host's. So it is never installed: a private apt configuration (one sources line for
``sid``, its own lists and cache, no lock on the system's state) resolves the packages'
dependency closure, downloads the .debs and ``dpkg -x`` unpacks them into one prefix. The
server then runs through the prefix's own loader with the prefix's libraries
(``benchlib.servers.Server.argv``). Nothing of the system's packages or apt state changes.

    python -m benchlib.servers.debian            # fetch unless a MySQL server is found already
    python -m benchlib.servers.debian --force    # fetch again (a newer sid build)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchlib.errors import BenchlibError, MissingDependencyError
from benchlib.servers import _in_basedir, find, found, prefix_root, probe

__all__ = ["PACKAGES", "fetch"]

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
PACKAGES = ("mysql-server-core", "mysql-client-core", "mysql-router")
#: not needed to run the server (scripts in perl; package-manager glue)
SKIP_PREFIXES = ("perl", "libperl", "debconf", "dpkg", "install-info", "mysql-common", "tzdata", "mariadb-")
NAME = "mysql-debian"


def _apt_options(state: Path) -> list[str]:
    return ["-o", f"Dir::Etc::SourceList={state / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
            "-o", f"Dir::Cache::Archives={state / 'cache' / 'archives'}", "-o", "Debug::NoLocking=1",
            "-o", "Acquire::Retries=3"]


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if res.returncode != 0:
        tail = "\n".join("    " + line for line in (res.stdout + res.stderr).strip().splitlines()[-8:])
        raise MissingDependencyError(f"fetching MySQL from Debian: {what} failed (exit {res.returncode})",
                                     hint=f"check that {MIRROR} is reachable; or give a lab spec the basedir of "
                                          "an unpacked MySQL server", detail=tail)
    return res.stdout


def closure(state: Path) -> list[str]:
    """The packages to unpack: the server and client with every library they need, recursively."""
    out = _run(["apt-cache", *_apt_options(state), "depends", "--recurse", "--no-recommends", "--no-suggests",
                "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", "--no-pre-depends", *PACKAGES],
               "resolving dependencies")
    names = {line.strip() for line in out.splitlines() if line and not line.startswith((" ", "<"))}
    return sorted(n for n in names if not n.startswith(SKIP_PREFIXES))


def fetch(root: Path | None = None, *, progress=lambda msg: None) -> Path:
    """Download and unpack Debian sid's MySQL server into ``root/mysql-debian``; returns the prefix."""
    for tool in ("apt-get", "apt-cache", "dpkg"):
        if shutil.which(tool) is None:
            raise MissingDependencyError(f"{tool} not found: fetching Debian's MySQL needs a Debian-family system",
                                         hint="give the lab spec the basedir of an unpacked MySQL server instead")
    if not Path(KEYRING).exists():
        raise MissingDependencyError(f"{KEYRING} not found", hint="apt-get install -y debian-archive-keyring")
    root = root or prefix_root()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # the servers run as 'mysql'
    state = root / ".apt"
    for d in (state / "lists" / "partial", state / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(f"deb [signed-by={KEYRING}] {MIRROR} sid main\n")
    t0 = time.monotonic()
    _run(["apt-get", *_apt_options(state), "-q", "update"], "apt-get update (sid)")
    packages = closure(state)
    progress(f"{len(packages)} packages to fetch ({time.monotonic() - t0:.1f} s)")
    archives = state / "cache" / "archives"
    _run(["apt-get", *_apt_options(state), "-q", "download", *packages], "apt-get download", cwd=archives)
    work = root / f".{NAME}.tmp{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    debs = sorted(archives.glob("*.deb"))
    wanted = {p.split(":")[0] for p in packages}
    debs = [d for d in debs if d.name.split("_")[0] in wanted]
    for deb in debs:
        _run(["dpkg", "-x", str(deb), str(work)], f"unpacking {deb.name}")
    final = root / NAME
    probe.cache_clear()
    server = _in_basedir(work)
    if server is None or server.flavor != "mysql":
        shutil.rmtree(work, ignore_errors=True)
        raise MissingDependencyError("the unpacked Debian MySQL server does not run on this machine",
                                     hint="give the lab spec the basedir of an unpacked MySQL server instead")
    (work / "benchlib-fetch.json").write_text(json.dumps(
        {"version": server.version, "suite": "sid", "mirror": MIRROR, "fetched_at": time.time(),
         "packages": [d.name for d in debs]}, indent=1))
    _chmod_readable(work)
    old = root / f".{NAME}.old{os.getpid()}"
    if final.exists():
        final.rename(old)
    work.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(archives, ignore_errors=True)  # the .debs: 50 MB that served their purpose
    probe.cache_clear()
    progress(f"MySQL {server.version} unpacked into {final} ({time.monotonic() - t0:.1f} s)")
    return final


def _has_router(server) -> bool:
    from benchlib.servers.router import _in_prefix

    return _in_prefix(server) is not None


def _chmod_readable(top: Path) -> None:
    """Everything readable (and directories traversable) by the 'mysql' user the servers run as."""
    os.chmod(top, 0o755)
    for base, dirs, files in os.walk(top):
        for d in dirs:
            p = os.path.join(base, d)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o555)
        for f in files:
            p = os.path.join(base, f)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o444)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchlib.servers.debian", description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="fetch even when a MySQL server is found")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    say = (lambda m: None) if args.quiet else (lambda m: print(f"[servers] {m}", file=sys.stderr))
    try:
        if not args.force:
            try:
                s = find("mysql")
                if s.library_path is None or _has_router(s):  # a prefix fetched before Router was: fetch again
                    say(f"{s.label} found ({s.source}): nothing to fetch")
                    return 0
            except MissingDependencyError:
                pass
        say("fetching MySQL from Debian's unstable suite into benchlib's prefix (about 60 MB)")
        fetch(progress=say)
        mysql = [s for s in found() if s.flavor == "mysql"]
        say(", ".join(f"{s.label} ({s.source})" for s in mysql))
        return 0
    except BenchlibError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
