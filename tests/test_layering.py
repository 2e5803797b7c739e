"""Analysis code never imports lab or runner code: it runs anywhere, on any campaign folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "benchlib"
ANALYSIS = ["schema.py", "store.py", "errors.py", "sysbench/output.py", "studies.py", "report.py",
            *sorted(str(p.relative_to(PKG)) for sub in ("analysis", "charts") for p in (PKG / sub).glob("*.py"))]
FORBIDDEN = ("benchlib.lab", "benchlib.sampling", "benchlib.campaign", "pymysql")


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("module", ANALYSIS)
def test_analysis_module_imports_no_lab_code(module):
    bad = sorted(m for m in imports(PKG / module) if m.startswith(FORBIDDEN))
    assert not bad, f"{module} imports {bad}"


def test_load_campaign_is_a_package_attribute():
    import benchlib
    from benchlib.store import load_campaign

    assert benchlib.load_campaign is load_campaign
