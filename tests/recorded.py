"""The recorded campaigns under data/campaigns/ (packed: benchlib pack), and a copy of one with a folder per run for
tests that change a run's files."""

from __future__ import annotations

from pathlib import Path

from benchlib.packing import unpack_campaign

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "campaigns"


def as_folders(name: str, dest: Path) -> Path:
    """Recorded campaign ``name`` at ``dest`` with one folder per run (its campaign.json, events and attempts too)."""
    unpack_campaign(RECORDED / name, dest)
    return dest
