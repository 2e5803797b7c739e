"""The recorded campaigns under data/campaigns/ (packed: benchlib pack), and a copy of one with a folder per run for
tests that change a run's files."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchlib.store import list_runs, unpack_run

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "campaigns"


def as_folders(name: str, dest: Path) -> Path:
    """Recorded campaign ``name`` at ``dest`` with one folder per run (its campaign.json and events too)."""
    src = RECORDED / name
    dest.mkdir(parents=True)
    for f in ("campaign.json", "events.jsonl"):
        if (src / f).exists():
            shutil.copy2(src / f, dest / f)
    for run in list_runs(src):
        unpack_run(run, dest / run.name)
    if (src / "attempts").is_dir():
        shutil.copytree(src / "attempts", dest / "attempts")
    return dest
