"""Parts of hand-written pages that are made from the code, so that they cannot drift from it: each sits between
``<!-- made: NAME (python -m benchlib.reference_pages) -->`` and ``<!-- end: NAME -->`` in its page.

- docs/architecture.md ``layers``: the layer table, from ``benchlib.layers`` (what ``tests/test_layering.py``
  enforces);
- docs/architecture.md ``axes``: the registered axes, from ``benchlib.axis.AXES`` (their entry points).

``benchlib.reference_pages`` writes them with the reference pages and checks them with ``--check``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from benchlib.axis import AXES
from benchlib.layers import LAYERS
from benchlib.plugin import declared

__all__ = ["BLOCKS", "made", "stale", "write"]

ROOT = Path(__file__).resolve().parents[1]


def _layers() -> str:
    rows = ["| layer | packages and modules | what for |", "|---|---|---|"]
    for i, layer in enumerate(LAYERS):
        rows.append(f"| {i} | {', '.join(f'`{n}`' for n in layer)} | {layer.what} |")
    return "\n".join(rows)


def _axes() -> str:
    points = dict(declared("benchlib.axes"))
    rows = ["| axis | what it adds | a campaign asks with | entry point |", "|---|---|---|---|"]
    for name, axis in AXES.items():
        table = f"`{axis.asked}`" if axis.asked else f"`[{name}]`"
        docs = axis.docs.removeprefix("docs/")
        rows.append(f"| `{name}` | [{axis.title}]({docs}) | {table} | `{points.get(name, '')}` |")
    return "\n".join(rows)


#: (page, block name) -> what makes it
BLOCKS: dict[tuple[str, str], Callable[[], str]] = {("docs/architecture.md", "layers"): _layers,
                                                     ("docs/architecture.md", "axes"): _axes}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- made: {name} \(python -m benchlib.reference_pages\) -->\n)(.*?)(\n<!-- end: {name} -->)",
                      re.S)


def made(page: str) -> str:
    """``page`` (relative to the clone) with its blocks as the code makes them now."""
    text = (ROOT / page).read_text()
    for (where, name), make in BLOCKS.items():
        if where != page:
            continue
        if not _pattern(name).search(text):
            raise ValueError(f"{page} has no block {name!r}: add '<!-- made: {name} (python -m "
                             f"benchlib.reference_pages) -->' and '<!-- end: {name} -->'")
        text = _pattern(name).sub(lambda m: m.group(1) + "\n" + make() + "\n" + m.group(3), text)
    return text


def _pages() -> list[str]:
    return sorted({page for page, _ in BLOCKS})


def stale() -> list[str]:
    """The pages whose blocks differ from what the code makes."""
    return [p for p in _pages() if made(p) != (ROOT / p).read_text()]


def write() -> list[str]:
    """Rewrites the blocks; returns the pages."""
    for p in _pages():
        (ROOT / p).write_text(made(p))
    return _pages()
