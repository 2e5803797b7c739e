"""The core asks the axes through their hooks, never by name: no module outside ``benchlib/axes/`` holds an axis's name
in a string (docstrings and ``__all__`` aside), but for the places listed here, each with why. The list may only
shrink: a place that stops naming an axis fails this test until it leaves the list, and a new one fails it at once."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "benchlib"
AXIS_NAMES = {p.name for p in (ROOT / "axes").iterdir() if p.is_dir() and not p.name.startswith("_")}

#: (module under benchlib/, name) -> why it still holds it
STILL_NAMED = {
    ("cli.py", "history"): "the `history` command, not the axis",
    ("workloads/tpcc.py", "history"): "the TPC-C-like schema's table",
    ("analysis/load.py", "tpcc"): "the TPC-C-like dataset's name (a workload's), not the axis",
    ("campaign/setup.py", "tpcc"): "the TPC-C-like dataset's name",
    ("sysbench/options.py", "tpcc"): "the TPC-C-like dataset's name",
    ("workloads/builtin.py", "tpcc"): "the TPC-C-like dataset's name",
    ("sampling/probe.py", "probe"): "a sampler probe's default name, not the stale-read probe axis",
    ("manifest.py", "fault"): "records of format 3 and older kept the axes' entries at the top level: the migration",
    ("manifest.py", "probe"): "the migration of format 3 records",
    ("manifest.py", "read_split"): "the migration of format 3 records",
    ("manifest.py", "stall"): "the migration of format 3 records",
    ("manifest.py", "search"): "the search's precision, read from the campaign's table (the search's spec is core)",
    ("campaign/plan.py", "probe"): "PlannedRun.probe, the progress line's read consistency (issue 62)",
    ("campaign/plan.py", "search"): "the search's planner is core (issue 62: into axes/search/)",
    ("campaign/search.py", "search"): "the search itself is core (issue 62)",
    ("analysis/sustained.py", "search"): "the sustained search's analysis is core (issue 62)",
    ("analysis/runs.py", "search"): "the runs table's search column (issue 62)",
    ("analysis/validate.py", "search"): "a search's probing runs excused from two checks (issue 62)",
    ("studies/judge.py", "probe"): "the studies' stale-read claims read the probe's reads",
}


def _named(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skip.add(id(first.value))  # a docstring
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            skip |= {id(c) for c in ast.walk(node.value)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n.value in AXIS_NAMES and id(n) not in skip}


def test_no_module_outside_the_axes_names_an_axis_but_those_listed_with_why():
    found = {(p.relative_to(ROOT).as_posix(), name) for p in ROOT.rglob("*.py")
             if not p.relative_to(ROOT).as_posix().startswith("axes/") for name in _named(p)}
    new = sorted(found - set(STILL_NAMED))
    assert not new, f"modules outside benchlib/axes/ that name an axis: {new}: ask the axes through a hook instead"
    gone = sorted(set(STILL_NAMED) - found)
    assert not gone, f"no longer named, take them off STILL_NAMED: {gone}"
