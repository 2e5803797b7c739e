"""Where a campaign's finished runs are read from: one interface, two kinds, one owner.

A ``RunSource`` holds finished runs and gives each one's manifest as written, its frames and its raw text. There
are two: the campaign folder's run folders (``FolderSource``: ``<campaign>/<run_id>/manifest.json``, one parquet
file per frame, ``raw/``) and its pack (``PackSource``: a few compressed files for every run, ``benchlib.packed``).
A ``Campaign`` is a campaign folder as the readers see it: its sources, the pack first (a folder its pack also
holds is read once, from the pack), found again only when the folder's entries changed. A pack is never rewritten
but by ``benchlib pack``: a packed run that is run again is retired (``RETIRED``: its run id listed in
``retired.json`` beside the pack, its copy kept in ``attempts/``), and its redo is a run folder. The run store's readers
(``benchlib.store``: ``read_manifest``, ``read_run``, ``raw_texts``, ``list_runs``, ``load_campaign``) ask the
campaign which source holds a run and read it there; none of them asks which kind it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import AbstractSet, Any, Protocol

import pyarrow as pa

from benchlib.errors import StoreError
from benchlib.packed import Pack, find_pack

__all__ = ["Campaign", "FolderSource", "PackSource", "RETIRED", "RunSource", "campaign_of", "forget", "read_table",
           "retire_packed", "retired"]

#: beside a campaign's pack: the run ids the pack holds that were retired (run again); ``benchlib pack`` drops them
RETIRED = "retired.json"


def retired(root: Path) -> set[str]:
    """The packed runs of campaign folder ``root`` that were retired (run again since the pack was written)."""
    try:
        return set(json.loads((root / RETIRED).read_text()))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        raise StoreError(f"{root / RETIRED} is damaged: {exc}",
                         hint="it lists the packed runs that were run again; benchlib pack rewrites the pack "
                              "without them once it is fixed") from None


def retire_packed(root: Path, run_id: str) -> None:
    """Mark the packed run ``run_id`` retired: the readers stop seeing the pack's copy; the pack is not touched."""
    tmp = root / f".{RETIRED}.tmp"
    tmp.write_text(json.dumps(sorted(retired(root) | {run_id})))
    tmp.replace(root / RETIRED)


def read_table(file: Path) -> pa.Table:
    """A parquet file of the run store as a pyarrow table (a damaged one: one message naming it)."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file)
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"{file} is damaged: {exc}") from None


class RunSource(Protocol):
    """Finished runs of one campaign, read from one place."""

    where: Path  # the folder or the pack, for messages

    def holds(self, run_id: str) -> bool: ...

    def run_ids(self) -> list[str]: ...

    def manifest(self, run_id: str) -> dict[str, Any]:
        """The run's manifest as it was written (any format: the store upgrades it)."""

    def manifest_at(self, run_id: str) -> str:
        """Where the run's manifest is, for messages."""

    def frame(self, kind: str, run_id: str) -> pa.Table | None:
        """The run's frame of ``kind`` (None: the run has none)."""

    def raw(self, run_id: str) -> dict[str, str]:
        """The run's raw text files (sysbench's output ...), by name."""


class FolderSource:
    """The run folders of a campaign folder: a run is finished once its folder holds its manifest (a run is written
    under a temporary name and renamed whole)."""

    def __init__(self, root: Path):
        self.where = root

    def holds(self, run_id: str) -> bool:
        return (self.where / run_id / "manifest.json").exists()

    def run_ids(self) -> list[str]:
        return sorted(p.name for p in self.where.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and (p / "manifest.json").exists())

    def manifest(self, run_id: str) -> dict[str, Any]:
        path = self.where / run_id / "manifest.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(f"{self.where / run_id} is not a run folder (no manifest.json)") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"{path} is damaged: {exc}") from None
        if not isinstance(data, dict):
            raise StoreError(f"{path} is damaged: not a table")
        return data

    def manifest_at(self, run_id: str) -> str:
        return str(self.where / run_id / "manifest.json")

    def frame(self, kind: str, run_id: str) -> pa.Table | None:
        return read_table(self.where / run_id / f"{kind}.parquet")  # its manifest lists it: a missing file is damage

    def raw(self, run_id: str) -> dict[str, str]:
        raw = self.where / run_id / "raw"
        return {p.name: p.read_text(errors="replace") for p in sorted(raw.iterdir()) if p.is_file()} if raw.is_dir() else {}


class PackSource:
    """The pack of a campaign folder (``benchlib pack``): every run it holds, read from its files."""

    def __init__(self, pack: Pack, retired: AbstractSet[str] = frozenset()):
        self.pack = pack
        self.where = pack.path
        self.retired = retired  # runs it holds that were run again: not read from it any more

    def holds(self, run_id: str) -> bool:
        return run_id in self.pack.status and run_id not in self.retired

    def run_ids(self) -> list[str]:
        return [r for r in self.pack.run_ids if r not in self.retired]

    def manifest(self, run_id: str) -> dict[str, Any]:
        return self.pack.manifest(run_id)

    def manifest_at(self, run_id: str) -> str:
        return f"{self.where}: {run_id}"

    def frame(self, kind: str, run_id: str) -> pa.Table | None:
        return self.pack.frame(kind, run_id)

    def raw(self, run_id: str) -> dict[str, str]:
        return self.pack.raw(run_id)


class Campaign:
    """A campaign folder's finished runs, from its pack and its run folders (the pack first)."""

    def __init__(self, root: Path, pack: Pack | None):
        self.root = root
        self.pack = pack
        self.sources: list[RunSource] = [*([PackSource(pack, retired(root))] if pack is not None else []),
                                         FolderSource(root)]

    def source_of(self, run_id: str) -> RunSource | None:
        """The source holding run ``run_id`` (None: it is not a finished run of this campaign)."""
        return next((s for s in self.sources if s.holds(run_id)), None)

    def run_ids(self) -> list[str]:
        """Every finished run, once."""
        return sorted({r for s in self.sources for r in s.run_ids()})


_CAMPAIGNS: dict[str, tuple[int, Campaign]] = {}  # campaign folder -> (its mtime when looked at, the campaign)


def campaign_of(root: Path) -> Campaign | None:
    """The campaign folder ``root`` as the readers see it, looked at again only when its entries changed (a run
    written, a pack made); None when there is no such folder."""
    try:
        mtime = root.stat().st_mtime_ns
    except OSError:
        return None
    seen = _CAMPAIGNS.get(str(root))
    if seen is None or seen[0] != mtime:
        seen = _CAMPAIGNS[str(root)] = (mtime, Campaign(root, find_pack(root)))
    return seen[1]


def forget() -> None:
    """Look at every campaign folder afresh (a benchmark timing cold reads)."""
    _CAMPAIGNS.clear()
