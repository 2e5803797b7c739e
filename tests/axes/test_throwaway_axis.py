"""An axis of one's own is one package (``tests/axes/uptime``) with one entry point: installed the way a third party's
is, a campaign with its table runs end to end on a real lab, its run hook writes its frame, its measure and finding
are computed, and the report says its line; nothing else in benchlib names it."""

from __future__ import annotations

import html

import pytest

from benchlib.axis import AXES
from benchlib.campaign.runner import run_campaign
from benchlib.analysis.campaign import analyze
from benchlib.report import findings, publish
from benchlib.store import read_manifest
from tests.plugins import installed
from tests.campaign.test_runner import write_campaign
from tests.conftest import example_spec


@pytest.fixture
def uptime_axis(tmp_path_factory):
    with installed(tmp_path_factory.mktemp("site"), AXES, "uptime", "tests.axes.uptime:AXIS") as axis:
        yield axis


def test_a_throwaway_axis_runs_end_to_end_on_a_real_lab(labs, tmp_path, uptime_axis):
    spec = write_campaign(tmp_path, "single.toml", "t-axis", clusters=["solo"], repetitions=1, time_s=2,
                          extra='[uptime]\nlabel = ["a", "b"]\n')
    labs.up(example_spec("single.toml", "t-axis"))
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert result.counts == {"ok": 2} and len({r.config_key for r in result.plan}) == 2  # each label a configuration
    m = read_manifest(result.path / result.plan[0].run_id)
    assert "uptime" in m.frames and m.as_dict()["axes"]["uptime"]["reads"] == 2
    a = analyze(result.path)
    assert set(a.runs.uptime_label) == {"a", "b"}  # its parameter, as the run store recorded it
    grew = a.measures("uptime")
    assert len(grew) == 2 and (grew.grew_s >= 1).all()  # the server was up through each 2 s load
    assert a.axis("uptime").measures is grew  # its analysis, computed once
    line = findings(a, result.path)["uptime"]
    assert line and line[0].startswith("the write node's uptime grew by a median")
    page = publish(result.path, notebooks=False, static=False).page.read_text()
    assert "<h2>The write node&#x27;s uptime</h2>" in page and html.escape(line[0]) in page


def test_its_table_is_validated_and_refused_when_not_registered(tmp_path, uptime_axis):
    from benchlib.campaign.spec import CampaignSpec
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"\[uptime\] label"):
        CampaignSpec.model_validate({"name": "x", "lab": "l", "uptime": {"label": []}})
    AXES.unregister("uptime")
    with pytest.raises(ValidationError, match="uptime"):
        CampaignSpec.model_validate({"name": "x", "lab": "l", "uptime": {"label": ["a"]}})
