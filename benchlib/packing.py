"""Packing a campaign folder and writing its runs out again: ``benchlib pack`` and ``benchlib unpack``.

``pack_campaign`` takes a campaign's finished runs (its pack's and its run folders) into a new pack generation
(``benchlib.packed``), written whole before the run folders and the old generation are removed; ``unpack_run`` and
``unpack_campaign`` write runs out as the run store's folders (``benchlib.store``), e.g. for tools that read folders
or for a test that changes a run's files.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pyarrow.parquet as pq

from benchlib.errors import StoreError
from benchlib.manifest import Manifest, upgrade
from benchlib.packed import PACK_PREFIX, PackedRun, write_pack
from benchlib.axis import frame_schemas
from benchlib.run_source import RETIRED, retired
from benchlib.store import TMP_PREFIX, pack_of, pack_holding, list_runs, raw_texts, read_table

__all__ = ["Packing", "pack_campaign", "unpack_campaign", "unpack_run"]


@dataclass
class Packing:
    """What ``pack_campaign`` did."""

    path: Path | None  # the new pack (None: nothing to pack)
    runs: int  # runs in it
    taken: int  # run folders it took in (now removed)
    bytes_before: int
    bytes_after: int

    def words(self) -> str:
        if self.path is None:
            return "nothing to pack"
        return (f"{self.runs} runs in {self.path.name} ({self.taken} run folders taken in): "
                f"{self.bytes_before / 1e6:.2f} MB -> {self.bytes_after / 1e6:.2f} MB")


def _size(paths: Iterable[Path]) -> int:
    return sum(f.stat().st_size for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())


def _folder_run(run_dir: Path) -> PackedRun:
    """A run folder as it is written: its manifest, frames and raw text."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    frames = {k: read_table(run_dir / f"{k}.parquet") for k in manifest.get("frames", [])}
    return PackedRun(run_dir.name, manifest, frames, raw_texts(run_dir))


def _check(record: PackedRun, where: Path) -> None:
    """A run benchlib cannot read is not packed: its typed manifest and its frames' schemas, checked as read."""
    Manifest.model_validate(upgrade(record.manifest, str(where)))
    for kind, table in record.frames.items():
        frame_schemas()[kind].validate(table.to_pandas(), f"{where}/{kind}.parquet")


def pack_campaign(campaign_dir: str | Path, *, attempts: bool = True, again: bool = False) -> Packing:
    """Pack the campaign's finished runs (its pack's and its run folders) into a new pack generation, then remove
    the folders it took in and the old generation (``attempts``: ``attempts/`` too, packed apart); the packed runs
    that were retired (run again: ``benchlib.run_source.RETIRED``) are left out, their redos taken in; ``again``: write a new generation even with nothing new (a pack written by an
    earlier benchlib, in the encoding of today's). Each run is checked first (a damaged one stops the packing,
    naming it); the caller makes sure no campaign writes there."""
    root = Path(campaign_dir)
    old = pack_of(root) if root.is_dir() else None
    gone = retired(root) if old is not None else set()  # packed runs run again: their redos are folders
    runs = list_runs(root)

    def in_pack(name: str) -> bool:
        return old is not None and name in old.status and name not in gone

    folders = [p for p in runs if (p / "manifest.json").exists() and not in_pack(p.name)]
    if attempts and (root / "attempts").is_dir():
        pack_campaign(root / "attempts", attempts=False, again=again)
    if not folders and not gone and not (again and old is not None):
        return Packing(None, len(old.run_ids) if old else 0, 0, 0, 0)
    keep = runs  # a retired run not yet run again is in neither (its copy is in attempts/)
    records = [old.run(p.name) if old is not None and in_pack(p.name) else _folder_run(p) for p in keep]
    for p, record in zip(keep, records):
        _check(record, p)
    before = _size(folders + ([old.path] if old is not None else []))
    path = write_pack(root, records, (old.generation if old else 0) + 1, TMP_PREFIX)
    packed = {r.run_id for r in records}
    for p in root.iterdir():  # the folders it took in, and any an interrupted clean-up left
        if p.is_dir() and p.name in packed and (p / "manifest.json").exists():
            shutil.rmtree(p)
    for stale in root.glob(f"{PACK_PREFIX}*"):
        if stale != path:
            shutil.rmtree(stale, ignore_errors=True)
    (root / RETIRED).unlink(missing_ok=True)  # the new pack holds none of them
    return Packing(path, len(records), len(folders), before, _size([path]))


def unpack_run(run_dir: str | Path, dest: str | Path) -> Path:
    """Write the run ``run_dir`` names (packed or not) as a run folder at ``dest``: its manifest, frames and raw
    text, as the run store writes them (under a temporary name, renamed whole into place)."""
    run_dir, dest = Path(run_dir), Path(dest)
    if dest.exists():
        raise StoreError(f"{dest} exists: runs are never overwritten")
    pack = pack_holding(run_dir)
    record = pack.run(run_dir.name) if pack is not None else _folder_run(run_dir)
    tmp = dest.parent / f"{TMP_PREFIX}{dest.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "raw").mkdir(parents=True)
    for kind, table in record.frames.items():
        pq.write_table(table, tmp / f"{kind}.parquet", compression="zstd")
    for name, text in record.raw.items():
        (tmp / "raw" / name).write_text(text)
    (tmp / "manifest.json").write_text(json.dumps(record.manifest, indent=2, sort_keys=True))
    os.rename(tmp, dest)
    return dest


def unpack_campaign(campaign: str | Path, dest: str | Path) -> list[Path]:
    """Write campaign ``campaign`` out at the new folder ``dest`` with one folder per run (its campaign.json, events
    and the attempts a redo replaced too); returns the runs written."""
    src, dest = Path(campaign), Path(dest)
    if dest.exists():
        raise StoreError(f"{dest} exists: unpack writes a new folder", hint="give a path that does not exist yet")
    runs = list_runs(src)
    dest.mkdir(parents=True)
    for name in ("campaign.json", "events.jsonl"):
        if (src / name).exists():
            shutil.copy2(src / name, dest / name)
    written = [unpack_run(run, dest / run.name) for run in runs]
    if (src / "attempts").is_dir():
        (dest / "attempts").mkdir()
        for run in list_runs(src / "attempts"):
            unpack_run(run, dest / "attempts" / run.name)
    return written
