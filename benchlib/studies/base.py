"""The study registry: each published study (title, author, date, address), what it reproduces locally, its campaigns.

A study is one module (``benchlib.studies.s000`` ...) that registers a ``Study``: its claims (each
judged on a campaign, ``benchlib.studies.judge``) and its charts. Adding a study is adding a module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchlib.analysis import views
from benchlib.analysis.campaign import CampaignAnalysis
from benchlib.errors import BenchlibError
from benchlib.studies.judge import mean_of, pick
from benchlib.plugin import Registry

__all__ = ["STUDIES", "STUDY_DIR", "Published", "Study", "StudyError", "commit_latency", "get", "register", "study_of"]

ROOT = Path(__file__).resolve().parents[2]
STUDY_DIR = ROOT / "examples" / "studies"

#: a study's chart: one of the report's catalogue (by name) or a builder of its own
Figure = tuple[str, "str | Callable[[CampaignAnalysis], Any]"]


class StudyError(BenchlibError):
    """An unknown study, or a campaign that belongs to no study."""


@dataclass(frozen=True)
class Published:
    """Where a study was published: what a reader needs to find it."""

    title: str
    author: str  # empty when the page names none
    date: str  # ISO date of publication
    where: str  # the blog or venue
    url: str

    def cite(self) -> str:
        by = f"{self.author}, " if self.author else ""
        return f"{by}“{self.title}”, {self.where}, {self.date}, <{self.url}>"


@dataclass(frozen=True)
class Study:
    id: str
    title: str
    published: Published
    local: str  # what the local lab reproduces
    remote: str  # what needs a remote lab
    claims: Callable[[CampaignAnalysis], list[dict[str, Any]]] = field(repr=False, compare=False)
    figures: list[Figure] = field(default_factory=list, repr=False, compare=False)

    @property
    def quick(self) -> Path:
        return STUDY_DIR / f"{self.id}-quick.toml"

    @property
    def full(self) -> Path:
        return STUDY_DIR / f"{self.id}-full.toml"

    @property
    def notebook(self) -> str:
        return "study"

    def describe(self) -> str:
        """The study's introduction (Markdown), for its notebook and report."""
        return (f"# Study {self.id}: {self.title}\n\nReproduces {self.published.cite()} on a lab of your own. "
                f"Locally: {self.local}. Needs a remote lab: {self.remote}.\n\nRun the campaign first "
                f"(`./scripts/study {self.id}`, or `benchlib run examples/studies/{self.id}-quick.toml`). A "
                "reproduction is judged on ratios and shapes, not on absolute TPS of different hardware.")


STUDIES: Registry[Study] = Registry("study", key=lambda s: s.id, error=StudyError,
                                   hint=lambda known: f"studies: {', '.join(known)}")


def register(study: Study) -> Study:
    return STUDIES.register(study)


def get(study: str) -> Study:
    key = study.removeprefix("study").zfill(3)
    if key not in STUDIES:
        raise StudyError(f"no study {study!r}", hint=f"studies: {', '.join(STUDIES)}")
    return STUDIES[key]


def study_named(name: str) -> Study | None:
    """The study a campaign of this name reproduces (study000-quick ...), if any."""
    return STUDIES[name[5:8]] if name.startswith("study") and name[5:8] in STUDIES else None


def study_of(a: CampaignAnalysis) -> Study | None:
    """The study a campaign reproduces, from its name."""
    return study_named(a.record.name or (a.path.name if a.path else ""))


def commit_latency(a: CampaignAnalysis, cluster: str) -> float:
    """Mean latency of single-row autocommit INSERTs by one client on ``cluster`` (NaN: no such runs)."""
    return mean_of(commit_latency_runs(a, cluster), "summary_lat_avg_ms")


def commit_latency_runs(a: CampaignAnalysis, cluster: str):
    """The runs of single-row autocommit INSERTs by one client on ``cluster`` (``summary_lat_avg_ms`` per run)."""
    return pick(views.measured(a), cluster=cluster, workload="insert_single", threads=1)

