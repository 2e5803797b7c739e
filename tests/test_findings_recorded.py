"""Every recorded campaign under data/campaigns/ says the same findings sentences as when they were written down
(tests/fixtures/findings/), and a study's campaign each of its claims judged as it was: a refactoring of the analysis,
the axes, the report or a study that changes a number or a word shows here (docs/results.md quotes them). After an
intended change: ``BENCHLIB_REWRITE_FINDINGS=1 ./scripts/test tests/test_findings_recorded.py``, then read the diff
of tests/fixtures/findings/."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchlib.analysis.campaign import analyze
from benchlib.report import findings

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = ROOT / "data" / "campaigns"
GOLDEN = ROOT / "tests" / "fixtures" / "findings"
pytestmark = pytest.mark.long  # every recorded campaign analysed: the whole suite's, not the edit loop's


@pytest.mark.parametrize("name", sorted(p.name for p in CAMPAIGNS.iterdir() if (p / "campaign.json").exists()))
def test_a_recorded_campaign_says_the_findings_it_said(name):
    campaign = CAMPAIGNS / name
    a = analyze(campaign, baseline="async")
    said = findings(a, campaign)
    if name.startswith("study"):  # and each claim of the study as judged on it (docs/results.md quotes them)
        from benchlib.studies import compare_reference

        said["reference"] = [f"{c.claim}: {c.measured} ({c.holds})" for c in compare_reference(a).claims.itertuples()]
    file = GOLDEN / f"{name}.json"
    if os.environ.get("BENCHLIB_REWRITE_FINDINGS") == "1":
        file.write_text(json.dumps(said, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(file.read_text())
    for section in expected.keys() | said.keys():
        assert said.get(section, []) == expected.get(section, []), f"{name}: {section}"


def test_the_failover_consistency_and_quick_campaigns_are_among_them():
    written = {p.stem for p in GOLDEN.glob("*.json")}
    assert {"failover", "consistency", "quick"} <= written
    assert all(sum(map(len, json.loads((GOLDEN / f"{n}.json").read_text()).values())) > 0
               for n in ("failover", "consistency", "quick"))


@pytest.mark.parametrize("name", ["failover", "consistency", "quick"])
def test_the_report_page_says_every_finding(name, tmp_path):
    """The page itself (interactive charts only: no image export, no notebooks, so it stays in the edit loop): each
    section's sentences are on it, the axes' sections among them."""
    import html

    from benchlib.report import publish

    report = publish(CAMPAIGNS / name, out=tmp_path / "report", notebooks=False, static=False)
    page = report.page.read_text()
    expected = json.loads((GOLDEN / f"{name}.json").read_text())
    ratios = {f.sentence(): f for f in report.ratios}
    for section, sentences in expected.items():
        for sentence in sentences:
            if sentence in ratios:  # a ratio: its sentence, then its mechanism under it, a clause an item
                f = ratios[sentence]
                assert html.escape(f"{f.what}: {f.verdict}.") in page, sentence
                assert all(f"<li>{html.escape(c)}</li>" in page for c in f.because), sentence
                continue
            assert html.escape(sentence) in page or html.escape(sentence.rstrip(".")) in page, (section, sentence)
    said = report.lines()  # what `benchlib publish` and the main job print, in the page's order
    assert sorted(said) == sorted(x for sentences in expected.values() for x in sentences)
