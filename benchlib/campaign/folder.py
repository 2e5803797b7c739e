"""A campaign's folder: claimed under a lock, described once, its events, its runs and failed attempts.

    runs/<campaign>/
        campaign.json        the resolved campaign and lab specs and the plan, the host and the revision
                             (written once; a folder holding another campaign is refused)
        events.jsonl         what happened, one JSON object per line (runs, heals, interrupts)
        <run_id>/            one folder per run (benchlib.store)
        packed-N/            the runs of a packed campaign (benchlib.packed; ``benchlib pack``): read as run folders
        attempts/<run_id>.N  failed and disturbed runs that a later attempt replaced, kept as they were (packed
                             with the campaign: attempts/packed-N/)
        retired.json         packed runs that were run again (their copies in attempts/, their redos run
                             folders): the pack is left as it is until benchlib pack writes the next one
        notebooks/           executed copies of the campaign notebook (benchlib run)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from benchlib.campaign.ids import RunId
from benchlib.environment import git_revision, host_facts
from benchlib.errors import BenchlibError
from benchlib.packing import unpack_run
from benchlib.run_source import retire_packed
from benchlib.store import TMP_PREFIX, Manifest, has_run, list_runs, read_campaign_record, read_manifest

__all__ = ["CampaignError", "CampaignFolder"]


class CampaignError(BenchlibError):
    """A campaign that cannot be run as asked (folder holds another campaign, already running...)."""


def utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class CampaignFolder:
    """One campaign's folder; ``claim`` it before writing, ``release`` it at the end."""

    def __init__(self, path: Path):
        self.path = path
        self._lock: int | None = None

    # -- claim -------------------------------------------------------------------------
    def claim(self, description: dict[str, Any], recorded: dict[str, Any] | None = None,
              upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> "CampaignFolder":
        """Create or reopen the folder; refuse one that holds another campaign (a different ``description``) or is
        in use. The host facts, the git revision and ``recorded`` (facts of this benchlib, such as what its runs
        sample) are written once, when the folder is created, and never compared. ``upgrade`` turns a description
        an earlier benchlib wrote into today's (fields added since, at their defaults) before comparing."""
        path = self.path
        path.mkdir(parents=True, exist_ok=True)
        fd = self._flock()
        record = path / "campaign.json"
        if record.exists():
            found = read_campaign_record(path)
            old = found.model_dump(mode="json") if found is not None else {}
            if upgrade is not None:
                old = upgrade(old)
            if {k: old.get(k) for k in description} != description:
                os.close(fd)
                differs = [k for k in description if old.get(k) != description[k]]
                raise CampaignError(f"{path} holds another campaign (its {', '.join(differs)} differ from this one's)",
                                    hint="give the campaign another name, or move the old folder away to start over")
        else:
            tmp = path / ".campaign.json.tmp"
            tmp.write_text(json.dumps({**description, **(recorded or {}), "created_utc": utc(),
                                       "git_revision": git_revision(),
                                       "host": host_facts()}, indent=2, sort_keys=True))
            os.rename(tmp, record)
        for stale in path.glob(f"{TMP_PREFIX}*"):  # a run interrupted by a crash: never part of the campaign
            shutil.rmtree(stale, ignore_errors=True)
        self._lock = fd
        return self

    def lock(self) -> "CampaignFolder":
        """Take the folder's lock without claiming it for a campaign (packing: no campaign may write meanwhile)."""
        if not (self.path / "campaign.json").exists() and not any(self.path.glob("*/manifest.json")):
            raise CampaignError(f"{self.path} is not a campaign folder (no campaign.json, no runs)",
                                hint="give a folder benchlib run wrote, e.g. runs/quick")
        self._lock = self._flock()
        return self

    def _flock(self) -> int:
        """The folder's lock file, locked (one benchlib at a time writes a campaign folder)."""
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CampaignError(f"campaign folder {self.path} is in use by another benchlib run",
                                hint="wait for it to finish, or stop it (Ctrl-C) first") from None
        return fd

    def release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    # -- events ------------------------------------------------------------------------
    def event(self, event: str, **fields: Any) -> None:
        with open(self.path / "events.jsonl", "a") as f:
            f.write(json.dumps({"utc": utc(), "event": event, **fields}, default=str) + "\n")

    # -- runs --------------------------------------------------------------------------
    def has(self, run_id: str) -> bool:
        """Whether ``run_id`` is finished (its run folder, or the campaign's pack)."""
        return has_run(self.path / run_id)

    def manifest(self, run_id: str) -> Manifest | None:
        return read_manifest(self.path / run_id) if self.has(run_id) else None

    def stored(self) -> list[str]:
        """The run ids of the finished runs (folders and packed)."""
        return [p.name for p in list_runs(self.path) if RunId.is_run_id(p.name)]

    def manifests(self) -> dict[str, Manifest]:
        return {r: read_manifest(self.path / r) for r in self.stored()}

    def retire(self, run_id: str) -> Path:
        """Move a failed or disturbed run's folder to ``attempts/<run_id>.N`` (kept as it was) before it is run
        again."""
        folder = self.path / run_id
        attempts = self.path / "attempts"
        attempts.mkdir(exist_ok=True)
        n = 1
        while has_run(attempts / f"{run_id}.{n}") or (attempts / f"{run_id}.{n}").exists():
            n += 1
        target = attempts / f"{run_id}.{n}"
        if folder.exists():
            os.rename(folder, target)
        else:  # a packed run: its copy written out, and the pack (never rewritten but by benchlib pack) masked
            unpack_run(folder, target)
            retire_packed(self.path, run_id)
        return target

    def attempts_of(self, run_id: str, status: str | None = None) -> int:
        """How many earlier attempts of ``run_id`` are kept in ``attempts/`` (with ``status``: of that status)."""
        folder = self.path / "attempts"
        if not folder.is_dir():
            return 0
        found = [p for p in list_runs(folder) if p.name.startswith(f"{run_id}.") and p.name.rsplit(".", 1)[-1].isdigit()]
        if status is None:
            return len(found)
        return sum(1 for p in found if read_manifest(p).status == status)

    def next_index(self, planned: list[int]) -> int:
        """The index of a new run: after every planned one and every run there is."""
        used = [RunId.parse(p.name).index for p in self.path.iterdir() if p.is_dir() and RunId.is_run_id(p.name)]
        used += [RunId.parse(r).index for r in self.stored()]
        return max(planned + used + [0]) + 1
