"""A plug-in installed the way a third party's package is: a distribution's metadata, with its entry points, in a
temporary folder on ``sys.path``; taken away afterwards, with whatever it registered."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchlib.plugin import Registry


@contextmanager
def installed(where: Path, registry: Registry, name: str, value: str) -> Iterator[object]:
    """Installs a distribution declaring ``name = value`` in ``registry``'s entry-point group; yields the plug-in
    as the registry loaded it."""
    dist = where / f"benchlib_test_{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: benchlib-test-{name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{registry.group}]\n{name} = {value}\n")
    sys.path.insert(0, str(where))
    try:
        registry.reload()
        yield registry.lookup(name)
    finally:
        sys.path.remove(str(where))
        registry.unregister(name)
