"""The five published replication studies (``Study.published`` cites each): what each reproduces on a local lab, its
ready campaigns, its notebook, and the comparison with the published figures.

    from benchlib import studies
    s = studies.get("001")                 # title, campaigns (quick, full), what needs a remote lab
    r = studies.compare_reference("runs/study001-quick")
    r.claims                               # the published findings, each judged on this campaign
    r.figures                              # every published number of the study, ours next to it where we have one

A reproduction is judged on ratios and shapes (who is faster, how lag responds to a setting, latency
in round trips), never on absolute TPS of different hardware: ``claims`` holds one row per published
finding with the published value, the measured one, and ``holds``: yes, no, not shown (the direction
is right but the interval does not exclude the other answer), or not measured (the campaign lacks
those runs, or the system needs a remote lab). One module per study (``s000`` ... ``s004``), the
judging rules in ``judge``, the published numbers in ``reference``. Analysis code only: no lab import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis, analyze
from benchlib.studies import s000, s001, s002, s003, s004
from benchlib.studies.base import STUDIES, Study, StudyError, get, study_of
from benchlib.studies.judge import NO, NOT_MEASURED, NOT_SHOWN, YES
from benchlib.studies.reference import figures_of, reference

__all__ = ["NO", "NOT_MEASURED", "NOT_SHOWN", "STUDIES", "YES", "ReferenceComparison", "Study", "StudyError",
           "compare_reference", "figures", "get", "record", "reference", "show_figures", "study_of"]


#: the study modules: importing each registers its study
MODULES = (s000, s001, s002, s003, s004)


@dataclass
class ReferenceComparison:
    study: Study
    claims: pd.DataFrame
    figures: pd.DataFrame

    @property
    def summary(self) -> dict[str, int]:
        return self.claims.holds.value_counts().to_dict()


def compare_reference(campaign: str | Path | CampaignAnalysis, study: str | None = None) -> ReferenceComparison:
    """The campaign's results next to the published figures of its study (by name, or ``study``)."""
    a = campaign if isinstance(campaign, CampaignAnalysis) else analyze(campaign)
    s = get(study) if study else study_of(a)
    if s is None:
        raise StudyError(f"campaign {a.path} does not belong to a study",
                         hint=f"name the study: --study {' | '.join(STUDIES)}")
    claims = pd.DataFrame(s.claims(a), columns=["claim", "published", "measured", "holds", "how"])
    return ReferenceComparison(s, claims, figures_of(a, s))


def record(result: ReferenceComparison, folder: Path) -> Path:
    """Write the comparison as CSV files (claims.csv, figures.csv) and a JSON summary into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    result.claims.to_csv(folder / "claims.csv", index=False)
    result.figures.to_csv(folder / "figures.csv", index=False)
    (folder / "summary.json").write_text(json.dumps({"study": result.study.id, "holds": result.summary}, indent=2))
    return folder


def figures(a: CampaignAnalysis, study: str | Study | None = None, *,
            left_out: dict[str, str] | None = None) -> dict[str, Any]:
    """The study's charts that this campaign has data for, by title (a chart it has no data for is left out;
    any other error is a bug and is raised)."""
    from benchlib.charts import ChartError
    from benchlib.charts.catalogue import CATALOGUE, dress

    s = study if isinstance(study, Study) else get(study) if study else study_of(a)
    if s is None:
        return {}
    out = {}
    for title, entry in s.figures:
        build = CATALOGUE[entry][1] if isinstance(entry, str) else entry
        try:
            out[title] = dress(build(a), a, entry if isinstance(entry, str) else None)
        except (AnalysisError, ChartError) as exc:
            if left_out is not None:
                left_out[title] = exc.message + (f" ({exc.hint})" if exc.hint else "")
            continue
    return out


def show_figures(a: CampaignAnalysis, study: str | Study | None = None) -> None:
    """For a notebook: each of the study's charts shown as the report draws it, or one line saying why it is left
    out (the campaign has no data for it, or too little to say anything)."""
    left_out: dict[str, str] = {}
    figs = figures(a, study, left_out=left_out)
    s = study if isinstance(study, Study) else get(study) if study else study_of(a)
    for title, _ in (s.figures if s is not None else []):
        if title in figs:
            figs[title].show()
        elif title in left_out:
            print(f"{title}: left out. {left_out[title]}")
