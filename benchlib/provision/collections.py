"""The Ansible collections provisioning uses, taken from PyPI's ``ansible`` bundle (Ansible Galaxy is not needed).

Only ``community.mysql`` is used (replication, users, queries): it is copied out of the bundle's wheel into
``<venv>/share/ansible/collections`` instead of installing the whole bundle (200 MB, 21,000 files).

    python -m benchlib.provision.collections     # fetch once (idempotent); prints the collections path
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchlib.errors import MissingDependencyError, run_step

__all__ = ["BUNDLE", "COLLECTIONS", "ensure", "path"]

#: the bundle release whose ansible-core line (2.19) runs on Python 3.11
BUNDLE = "ansible==12.3.0"
COLLECTIONS = {"community.mysql": "3.16.1"}


def path() -> Path:
    """Where the collections live (ANSIBLE_COLLECTIONS_PATH)."""
    return Path(sys.prefix) / "share" / "ansible" / "collections"


def _installed(name: str) -> str | None:
    manifest = path() / "ansible_collections" / name.replace(".", "/") / "MANIFEST.json"
    try:
        return json.loads(manifest.read_text())["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        return None


def ensure(*, quiet: bool = False) -> Path:
    missing = [n for n, v in COLLECTIONS.items() if _installed(n) != v]
    if not missing:
        return path()
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, BUNDLE],
                             capture_output=True, text=True)
        wheels = list(Path(tmp).glob("ansible-*.whl"))
        if res.returncode != 0 or not wheels:
            raise MissingDependencyError(f"could not download {BUNDLE} from PyPI (it carries {', '.join(missing)})",
                                         detail=res.stderr[-1500:])
        with zipfile.ZipFile(wheels[0]) as z:
            for name in missing:
                prefix = "ansible_collections/" + name.replace(".", "/") + "/"
                members = [m for m in z.namelist() if m.startswith(prefix)]
                z.extractall(path(), members)
    if not quiet:
        print(f"[collections] {', '.join(missing)} into {path()}", file=sys.stderr)
    return path()


if __name__ == "__main__":
    run_step(lambda: ensure(quiet="--quiet" in sys.argv))
