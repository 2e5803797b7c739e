"""The adaptive mode on a recorded campaign (18 configurations x 3 rounds): whole rounds while a comparison is
open, a stop when every comparison is settled or at the cap, an incomplete round completed first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchlib.campaign.adaptive import next_round
from benchlib.campaign.folder import CampaignFolder
from benchlib.campaign.plan import plan
from benchlib.campaign.spec import CampaignSpec
from benchlib.labs import load_lab_spec
from benchlib.packing import unpack_run
from tests.conftest import ROOT

RECORDED = ROOT / "data" / "campaigns" / "topologies"


def campaign_with(tmp_path: Path, rounds: int, **changes) -> tuple[CampaignSpec, CampaignFolder, list]:
    """The recorded campaign's first ``rounds`` rounds in a folder of their own, and its plan up to them."""
    recorded = json.loads((RECORDED / "campaign.json").read_text())
    spec = CampaignSpec.model_validate({**recorded["campaign"], "adaptive": True, **changes})
    runs = [r for r in plan(spec, load_lab_spec(ROOT / "examples" / "labs" / "demo.toml")) if r.repetition <= rounds]
    folder = tmp_path / "topologies"
    folder.mkdir()
    # the folder's campaign.json holds the spec as changed (a campaign's folder always holds its own spec)
    (folder / "campaign.json").write_text(json.dumps({**recorded, "campaign": spec.model_dump(mode="json")}))
    for r in runs:
        unpack_run(RECORDED / r.run_id, folder / r.run_id)
    return spec, CampaignFolder(folder), runs


@pytest.mark.long
def test_an_open_comparison_adds_a_whole_shuffled_round(tmp_path):
    spec, folder, runs = campaign_with(tmp_path, 2, max_repetitions=4, margin=0.02)
    step = next_round(spec, folder, runs)
    assert not step.stop and step.rounds == 2 and step.open and "still open" in step.reason
    assert {r.repetition for r in step.runs} == {3}
    assert sorted(r.config_key for r in step.runs) == sorted({r.config_key for r in runs})  # baseline included
    assert [r.index for r in step.runs] == list(range(len(runs) + 1, len(runs) + 19))
    assert step.runs[0].config_key != max(runs, key=lambda r: r.index).config_key
    assert [r.config_key for r in step.runs] != sorted(r.config_key for r in step.runs)  # shuffled


@pytest.mark.long
def test_the_cap_stops_it_and_says_what_is_still_open(tmp_path):
    spec, folder, runs = campaign_with(tmp_path, 3, max_repetitions=3, margin=0.001)
    step = next_round(spec, folder, runs)
    assert step.stop and step.rounds == 3 and step.open
    assert step.reason.startswith("cap of 3 rounds reached") and step.open[0] in step.reason


@pytest.mark.long
def test_settled_comparisons_stop_it(tmp_path):
    spec, folder, runs = campaign_with(tmp_path, 3, max_repetitions=5, margin=0.95)  # every ratio is within 1 +- 95%
    step = next_round(spec, folder, runs)
    assert step.stop and step.open == [] and step.reason == "every headline comparison settled after 3 rounds"


def test_a_round_an_earlier_start_left_incomplete_is_completed_first(tmp_path):
    spec, folder, runs = campaign_with(tmp_path, 3, max_repetitions=5)
    gone = [r for r in runs if r.repetition == 3][-2:]
    for r in gone:
        shutil.rmtree(folder.path / r.run_id)
    planned = [r for r in runs if r not in gone]
    step = next_round(spec, folder, planned)
    assert step.reason == "completing round(s) [3]"
    assert sorted((r.config_key, r.repetition) for r in step.runs) == sorted((r.config_key, 3) for r in gone)


@pytest.mark.long
def test_runs_an_earlier_start_added_are_taken_into_account(tmp_path):
    spec, folder, runs = campaign_with(tmp_path, 3, max_repetitions=3, margin=0.001)
    planned = [r for r in runs if r.repetition <= 2]  # the plan says 2 rounds; round 3 was added by adaptive
    step = next_round(spec.model_copy(update={"repetitions": 2}), folder, planned)
    assert len(planned) == len(runs) and step.stop and step.rounds == 3


@pytest.mark.parametrize("rounds", [1])
def test_one_round_without_blocks_still_judges_with_fieller(tmp_path, rounds):
    spec, folder, runs = campaign_with(tmp_path, rounds, max_repetitions=2, margin=0.02)
    step = next_round(spec, folder, runs)
    assert not step.stop and {r.repetition for r in step.runs} == {2}
