"""The main job's output the README and the quickstart show is a recorded campaign's: data/campaigns/demo. Every
line shown (but the run's own timing and path, and the "..." of a trimmed block) is a line its report says today."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_OWN = ("campaign ", "report: ")  # printed by benchlib demo about the run itself, not by the report


@pytest.fixture(scope="module")
def said(tmp_path_factory) -> list[str]:
    from benchlib.report import publish

    work = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / "data" / "campaigns" / "demo", work / "demo")
    return publish(work / "demo", out=work / "report", notebooks=False, static=False).terminal()


@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.md"])
@pytest.mark.long
def test_the_main_job_s_output_shown_is_the_recorded_demo_campaign_s(said, page):
    text = (ROOT / page).read_text()
    block = re.search(r"```\n(The load: .*?\ngalera \(3 nodes\) delivers.*?)```", text, re.S)
    assert block, f"{page} shows no output of the main job"
    shown = [line for line in block.group(1).splitlines()
             if line.strip() not in ("", "- ...") and not line.startswith(RUN_OWN)]
    assert len(shown) >= 8
    missing = [line for line in shown if line not in said]
    assert not missing, f"{page} shows lines data/campaigns/demo's report does not say:\n" + "\n".join(missing)
    assert "data/campaigns/demo" in text
    assert shown[0].startswith("The load: ") and "keys: sysbench special" in shown[0]  # the load first, its keys said
