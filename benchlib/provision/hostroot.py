"""The Debian root filesystem the namespace hosts boot from: built once with ``mmdebstrap``, cached outside the
checkout.

A namespace host (``benchlib.provision.nshosts``) is a network namespace, a copy-on-write layer over this root, its
own hostname and process tree, and its own ``sshd``: provisioning reaches it as it reaches a real machine (SSH, apt,
server processes). The root is a minimal Debian with what any host has (``sshd``, Python 3 for Ansible, ``ip``,
``iptables``, ``ps``, ``tini`` as its first process) and, downloaded but not installed, the packages provisioning
installs (``CACHED``): the hosts have no route to a package mirror, so their apt finds them in its cache, and a
host's ``apt-get install`` unpacks and configures them for real. As in container images, ``policy-rc.d`` forbids
package scripts to start services: provisioning starts its own servers.

    python -m benchlib.provision.hostroot          # build (or find) the cached root; prints its path

The cache is ``$BENCHLIB_HOSTROOT`` or ``/var/cache/benchlib/hostroot/<suite>-<hash>`` (the hash of the package
lists and this recipe's version): a change of either builds a new root beside the old one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchlib.errors import MissingDependencyError, run_step

__all__ = ["BASE", "CACHED", "SUITE", "build", "cache_dir", "find"]

SUITE = "bookworm"
#: what every host has installed: SSH, Python for Ansible's modules, the network tools a cut needs, two inits (tini,
#: or systemd on a host that boots it: ``benchlib.provision.nshosts``)
BASE = ["openssh-server", "python3", "iproute2", "iptables", "procps", "tini", "systemd"]
#: units a host booting systemd does not run: consoles and logins (the host has none), timers that would run apt or
#: disk jobs beside a benchmark
MASKED = ["getty.target", "console-getty.service", "systemd-logind.service", "e2scrub_reap.service",
          "apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer", "e2scrub_all.timer", "fstrim.timer",
          "systemd-pstore.service"]
#: what provisioning installs on a host, kept downloaded in the root's apt cache (not installed)
CACHED = ["mariadb-server", "mariadb-client", "galera-4", "sysbench", "rsync", "python3-pymysql", "python3-apt"]
RECIPE = 4  # bump when the build below changes
DONE = ".benchlib-root-complete"


def cache_dir() -> Path:
    env = os.environ.get("BENCHLIB_HOSTROOT")
    if env:
        return Path(env)
    tag = hashlib.sha1(f"{RECIPE} {SUITE} {' '.join(BASE)} | {' '.join(CACHED)}".encode()).hexdigest()[:8]
    return Path("/var/cache/benchlib/hostroot") / f"{SUITE}-{tag}"


def find() -> Path | None:
    """The cached root, if it was built completely."""
    root = cache_dir()
    return root if (root / DONE).exists() else None


def _mirror() -> str:
    """The Debian mirror this machine's apt uses (deb822 or one-line sources), else deb.debian.org."""
    for f in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        try:
            text = f.read_text()
        except OSError:
            continue
        m = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s",
                                                                               text, re.M)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


_SSHD = """\
# benchlib namespace host: keys only, no DNS look-ups
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
"""


def build(*, quiet: bool = False) -> Path:
    """The cached root, built now if missing (a few minutes and about 600 MB the first time)."""
    root = cache_dir()
    if (root / DONE).exists():
        return root
    if os.geteuid() != 0:
        raise MissingDependencyError("building the namespace hosts' root filesystem needs root",
                                     hint="run the bootstrap as root (./scripts/test or ./scripts/demo)")
    if shutil.which("mmdebstrap") is None:
        raise MissingDependencyError("mmdebstrap is not installed (it builds the namespace hosts' root filesystem)",
                                     hint="apt-get install -y mmdebstrap")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    hooks = [
        # downloaded, not installed: provisioning's apt installs them
        f'chroot "$1" apt-get install --download-only -y -q {" ".join(CACHED)}',
        # each host makes its own keys when it first starts
        'rm -f "$1"/etc/ssh/ssh_host_*',
        f"printf '%s' '{_SSHD}' > \"$1/etc/ssh/sshd_config.d/benchlib.conf\"",
        # under systemd: sshd its one service, nothing else started
        'mkdir -p "$1/etc/systemd/system/multi-user.target.wants"',
        'ln -sf /lib/systemd/system/ssh.service "$1/etc/systemd/system/multi-user.target.wants/ssh.service"',
        *[f'ln -sf /dev/null "$1/etc/systemd/system/{unit}"' for unit in MASKED],
    ]
    cmd = ["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE)}",
           "--skip=cleanup/apt/lists", "--skip=cleanup/apt/cache",
           *[f"--customize-hook={h}" for h in hooks], SUITE, str(partial), _mirror()]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        tail = "\n".join("    " + line for line in res.stderr.splitlines()[-15:])
        raise MissingDependencyError(f"mmdebstrap could not build the namespace hosts' root ({SUITE})",
                                     hint="check that Debian's package registry is reachable (apt-get update)",
                                     detail=tail)
    # package scripts start no service (as in container images): provisioning runs its own servers (written after
    # mmdebstrap, which removes the policy-rc.d it uses itself)
    policy = partial / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    (partial / DONE).write_text(f"built in {time.monotonic() - started:.0f} s\n")
    os.replace(partial, root)
    for old in root.parent.glob(f"{SUITE}-*"):  # roots of earlier recipes: nothing uses them any more
        if old != root and not old.name.endswith(".partial"):
            shutil.rmtree(old, ignore_errors=True)
    if not quiet:
        print(f"[hostroot] built {root} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return root


if __name__ == "__main__":
    run_step(lambda: build(quiet="--quiet" in sys.argv))
