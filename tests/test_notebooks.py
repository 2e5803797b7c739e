"""The committed notebooks: thin, parameterized, without outputs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from benchlib.notebooks import NOTEBOOK_DIR, NotebookError, notebook_path, output_path
from benchlib.store import list_runs

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


DATA = Path(__file__).resolve().parents[1] / "data" / "campaigns"
DEFAULTS = {"compare": "topologies", "stability": "apply", "flow_control": "apply", "lag": "apply",
            "parallel_apply": "apply", "wan": "wan", "resources": "resources", "consistency": "consistency",
            "failover": "failover", "study": "study001-quick"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A copy of the recorded campaigns (executed notebooks are written next to a campaign)."""
    import shutil

    root = tmp_path_factory.mktemp("campaigns")
    for name in set(DEFAULTS.values()):
        shutil.copytree(DATA / name, root / name, ignore=shutil.ignore_patterns("notebooks", ".lock"))
    return root


ANALYSIS = [p.stem for p in NOTEBOOKS if p.stem != "campaign"]  # campaign.ipynb runs a campaign: tests/lab/test_check


def _outputs(out: Path) -> list[dict]:
    nb = json.loads(out.read_text())
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.kernel
@pytest.mark.parametrize("name", ANALYSIS)
def test_every_analysis_notebook_executes_with_its_defaults_on_a_recorded_campaign(tmp_path, name):
    """As a fresh clone opens it: no parameter given, its default is a campaign recorded under data/, which it
    leaves as it was."""
    from benchlib.notebooks import execute

    before = _files(DATA)
    outputs = _outputs(execute(name, tmp_path / f"{name}.ipynb", {}, stream=False))
    assert _files(DATA) == before  # the recorded campaigns are read, never written
    assert not [o for o in outputs if o["output_type"] == "error"]
    warned = [t for o in outputs if o["output_type"] == "stream" and o["name"] == "stderr" for t in o["text"]]
    assert not warned, "".join(warned)  # no warning printed under a chart or a table
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, f"{name} drew no chart"
    if name == "compare_campaigns":
        printed = "".join(t for o in outputs if o["output_type"] == "stream" for t in o["text"])
        assert "B/A" in printed and "what differs" in printed and "day-to-day variation" in printed
    if name == "history":
        printed = "".join(t for o in outputs if o["output_type"] == "stream" for t in o["text"])
        assert "campaign(s), oldest first" in printed and "quick-busy" in printed  # the campaigns' folders
        table = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in outputs)
        assert "busy1" in table and "summary_tps" in table  # the run index's rows


def test_every_notebook_s_default_campaign_is_recorded_in_the_repository():
    import ast

    for path in NOTEBOOKS:
        cell = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        for stmt in ast.parse("".join(cell["source"])).body:
            value = ast.literal_eval(stmt.value)
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and v.startswith("../") and stmt.target.id != "runs_dir":
                    assert (NOTEBOOK_DIR / v).exists(), f"{path.name}: {stmt.target.id} = {v!r} is not in a fresh clone"


def test_applicable_notebooks_follow_what_the_campaign_swept(recorded):
    from benchlib.notebooks import applicable

    assert set(applicable(recorded / "apply")) >= {"flow_control", "parallel_apply", "lag", "stability"}
    assert "wan" in applicable(recorded / "wan") and "wan" not in applicable(recorded / "topologies")
    assert "compare" in applicable(recorded / "topologies")
    assert "consistency" in applicable(recorded / "consistency") and "consistency" not in applicable(recorded / "apply")


@pytest.mark.kernel
def test_rerun_cli_keeps_earlier_copies_and_takes_parameters(recorded):
    """``benchlib rerun`` executes a notebook with a parameter into a new copy beside the earlier ones."""
    import subprocess
    import sys

    run = list_runs(recorded / "topologies")[0].name
    cmd = [sys.executable, "-m", "benchlib.cli", "rerun", str(recorded / "topologies"), "-n", "stability",
           "-p", f'runs=["{run}"]']
    folder = recorded / "topologies" / "notebooks"
    earlier = folder / "stability-20260101T000000Z.ipynb"  # a copy an earlier rerun left (one rerun here: each
    folder.mkdir(exist_ok=True)                            # costs a kernel, minutes on a loaded 2-core host)
    earlier.write_text('{"earlier": true}')
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    copies = sorted(folder.glob("stability-*.ipynb"))
    assert len(copies) == 2 and earlier.read_text() == '{"earlier": true}'
    outputs = [o for c in json.loads(copies[-1].read_text())["cells"] for o in c.get("outputs", [])]
    # the chosen run's chart; the report's is left out with its reason (this campaign's runs are too short)
    assert sum("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs) == 1
    assert any("Stability over time: left out." in "".join(o.get("text", "")) for o in outputs)
    bad = subprocess.run([sys.executable, "-m", "benchlib.cli", "rerun", str(recorded)], capture_output=True, text=True)
    assert bad.returncode == 1 or bad.returncode == 2
    assert "not a campaign folder" in bad.stderr and "Traceback" not in bad.stderr



def test_two_copies_made_in_the_same_second_get_two_names(tmp_path):
    first = output_path(tmp_path, "stability")
    first.write_text("{}")
    second = output_path(tmp_path, "stability")
    assert second != first and not second.exists() and second.name.startswith("stability-")
