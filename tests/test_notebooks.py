"""The committed notebooks: thin, parameterized, without outputs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from benchlib.notebooks import NOTEBOOK_DIR, NotebookError, notebook_path, output_path

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs_with_a_typed_parameters_cell(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    params = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and params[0] is code[0]
    tree = ast.parse("".join(params[0]["source"]))
    assert tree.body and all(isinstance(s, ast.AnnAssign) for s in tree.body)  # every parameter has a type


def test_executed_copies_never_overwrite_each_other(tmp_path):
    first = output_path(tmp_path, "campaign")
    first.write_text("{}")
    second = output_path(tmp_path, "campaign")
    assert second != first and second.parent == first.parent


def test_unknown_notebook_names_the_known_ones():
    with pytest.raises(NotebookError, match="no notebook named 'nope'") as err:
        notebook_path("nope")
    assert "campaign" in err.value.hint
