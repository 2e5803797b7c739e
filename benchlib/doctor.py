"""``benchlib doctor``: what this machine has for benchlib, and the exact command for what is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchlib import catalogue
from benchlib.lab.mycnf import GALERA_PROVIDER


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    package: str | None = None  # Debian package that provides it
    required: bool = True


def _version(cmd: list[str], pattern: str = r"(\d+\.\d+\.\d+[\w.+~-]*)") -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else (out.stdout.strip() or None)


def _dpkg_version(package: str) -> str | None:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


#: the programs whose --version line doctor shows
_SAYS_VERSION = frozenset({"mariadbd", "sysbench", "rsync", "mariadb"})


def checks() -> list[Check]:
    from benchlib.lab.wan import capability_report

    out = [Check("python", sys.version_info >= (3, 11), sys.version.split()[0], None)]
    for exe, pkg in [("mariadbd", "mariadb-server"), ("mariadb-install-db", "mariadb-server"),
                     ("mariadb", "mariadb-client"), ("sysbench", "sysbench"), ("rsync", "rsync"),
                     ("socat", "socat"), ("ip", "iproute2")]:
        path = shutil.which(exe)
        version = _version([exe, "--version"]) if path and exe in _SAYS_VERSION else None
        out.append(Check(exe, path is not None, f"{version or ''} {path or 'not found'}".strip(), pkg))
    out += server_checks()
    galera = Path(GALERA_PROVIDER).exists()
    out.append(Check("galera", galera, f"{_dpkg_version('galera-4') or ''} {GALERA_PROVIDER if galera else 'not found'}".strip(),
                     "galera-4"))
    from benchlib.charts.export import find_browser

    browser = find_browser()
    out.append(Check("chromium", browser is not None, browser or "not found (static PNG/SVG export, report check)",
                     "chromium", required=False))
    for key, (ok, why) in capability_report().items():
        out.append(Check(f"wan:{key}", ok, why, None, required=False))
    return out


def server_checks() -> list[Check]:
    """Every server a lab can run (``benchlib.servers``): flavour, version, where, which replication plugins."""
    from benchlib import servers

    found = servers.found()
    out = []
    for s in found:
        plugins = ""
        if catalogue.SERVERS[s.flavor].plugins:
            have = s.plugins()
            plugins = " · plugins: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in have.items())
        out.append(Check(f"server:{s.flavor}", True, f"{s.label} ({s.source}) {s.mysqld}{plugins}", None))
    for flavor in catalogue.SERVERS.values():
        if flavor.without and not any(s.flavor == flavor.name for s in found):
            out.append(Check(f"server:{flavor.name}", False, f"no {flavor.title} server: {flavor.without}", None,
                             required=False))
    return out


def install_command(found: list[Check]) -> str | None:
    pkgs = sorted({c.package for c in found if not c.ok and c.package})
    return f"apt-get install -y {' '.join(pkgs)}" if pkgs else None


def report_lines(found: list[Check]) -> list[str]:
    lines = []
    for c in found:
        mark = "ok" if c.ok else ("MISSING" if c.required else "no")
        lines.append(f"{mark:8} {c.name:20} {c.detail}")
    cmd = install_command(found)
    if cmd:
        lines.append(f"install what is missing (as root): {cmd}")
    wan_missing = [c.name for c in found if c.name.startswith("wan:") and c.name != "wan:netem" and not c.ok]
    if wan_missing:
        lines.append("WAN sites are unavailable here (" + ", ".join(wan_missing) + "); labs without [sites] still work")
    elif not any(c.ok for c in found if c.name == "wan:netem"):
        lines.append("WAN sites use the user-space TUN relay (this kernel has no netem)")
    return lines


def noise_lines(folder: Path, seconds: float = 3.0) -> list[str]:
    """This host's noise (``benchlib.sampling.noise``), a line per kind: what was measured, and what to do."""
    from benchlib.analysis.interference import noise_words
    from benchlib.sampling.noise import measure

    out = []
    for what, todo, bad in noise_words(measure(folder, seconds)):
        out.append(f"{'NOISY' if bad else 'ok':8} {'noise':20} {what}: {todo}")
    return out
