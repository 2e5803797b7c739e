"""The architecture, locked in: the table of layers (``benchlib.layers``), no import cycles between modules nor between
folders, and analysis that never imports lab code.

Every import counts: module level, inside functions (lazy) and under ``TYPE_CHECKING``. A module may
import modules of its own layer or of a lower one; cycles are refused anywhere in ``benchlib``.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

from benchlib.layers import ANALYSIS_SIDE, LAB_ONLY, LAB_SIDE, LAYERS

PKG = Path(__file__).resolve().parents[1] / "benchlib"

def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts
        out["benchlib." + ".".join(parts) if parts != ("__init__",) else "benchlib"] = p
    return out


MODULES = _modules()


def imports(module: str) -> set[str]:
    """Every module ``module`` imports (external ones by their full name)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            found |= set(subs) if len(subs) == len(node.names) else {base, *subs}
    return found - {module}


def _matches(name: str, pattern: str) -> bool:
    """``name`` is ``pattern`` or inside it (a pattern may hold ``*``: one dotted part)."""
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")


def layer_of(module: str) -> int:
    name = module.removeprefix("benchlib").removeprefix(".") or "__init__"
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if _matches(name, n) and (best is None or len(n) > len(best[1])):
                best = (i, n)
    assert best is not None, f"{module} is in no layer of benchlib/layers.py: add it"
    return best[0]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_layers(module):
    mine = layer_of(module)
    above = sorted(t for t in imports(module) if t in MODULES and layer_of(t) > mine)
    assert not above, f"{module} (layer {mine}) imports higher layers: {above}"


@pytest.mark.long
def test_no_import_cycles():
    graph = {m: {t for t in imports(m) if t in MODULES} for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def _analysis_side(module: str) -> bool:
    name = module.removeprefix("benchlib.")
    return any(_matches(name, p) for p in ANALYSIS_SIDE) and not any(_matches(name, p) for p in LAB_ONLY)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _analysis_side(m)))
def test_analysis_imports_no_lab_code(module):
    bad = sorted(t for t in imports(module) if t.startswith(LAB_SIDE) and not _analysis_side(t))
    assert not bad, f"{module} imports {bad}"


def test_every_package_says_what_it_is_and_what_it_exports():
    for init in PKG.rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init.relative_to(PKG.parent)} has no docstring"
        assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
                   for n in tree.body), f"{init.relative_to(PKG.parent)} has no __all__"


def test_load_campaign_is_a_package_attribute():
    import benchlib
    from benchlib.store import load_campaign

    assert benchlib.load_campaign is load_campaign


def _folder(module: str) -> str:
    """The folder (or top-level module) of ``module``: benchlib.analysis.runs -> analysis."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.long
def test_no_folder_imports_a_folder_that_imports_it_back():
    """Folders as units: no two folders (or top-level modules) import each other, however indirectly."""
    graph: dict[str, set[str]] = {}
    why: dict[tuple[str, str], tuple[str, str]] = {}
    for m in MODULES:
        for t in imports(m):
            if t in MODULES and _folder(t) != _folder(m):
                graph.setdefault(_folder(m), set()).add(_folder(t))
                why.setdefault((_folder(m), _folder(t)), (m, t))

    def reach(a: str) -> set[str]:
        seen, todo = set(), [a]
        while todo:
            for b in graph.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    against = sorted(f"{a} -> {b} ({why[(a, b)][0]} imports {why[(a, b)][1]})"
                     for a, bs in graph.items() for b in bs if a in reach(b))
    assert not against, "folders that import each other: " + "; ".join(against)
