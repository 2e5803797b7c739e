"""A packed campaign: every finished run of a campaign folder in a few compressed files, written once.

    runs/<campaign>/packed-<generation>/
        pack.json            pack format, when it was written, how many runs, and the manifest facts common to
                             every run (stored once: the campaign's specs, server variables, sysbench options ...)
        runs.parquet         one row per run: run_id, status, where its rows are in each frame file, and its
                             manifest without the common facts (JSON)
        raw.parquet          the runs' raw text (sysbench's output ...): run_id, name, text
        <frame>.parquet      one file per kind of frame (``benchlib.schema``), every run's rows in run order, with
                             a dictionary-encoded ``run_id`` column (a query engine reads them as they are)

Why: a run folder holds a manifest, its raw text and one small parquet file per frame; a campaign of 500 runs
makes thousands of files, each repeating the campaign's facts. Packed, the same campaign is a handful of files,
zstd-compressed, with times stored as integer microseconds (a sampler's clock is read to the microsecond, and finer
digits are noise) split into byte streams, which makes them about a tenth of the size.

Packing is safe as a run is: the new pack is written under a temporary name and renamed into place whole; only then
are the run folders it took in and the previous generation removed. A reader takes the highest generation and
ignores a run folder the pack also holds (what an interrupted clean-up leaves behind). Runs written after the
packing stay run folders beside the pack until the next packing takes them in.

This module reads and writes packs; ``benchlib.store`` decides which runs go in and reads runs from either place.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchlib.errors import StoreError

__all__ = ["PACK_PREFIX", "Pack", "PackedRun", "find_pack", "hoist", "is_time_column", "merge", "write_pack"]

PACK_PREFIX = "packed-"
PACK_FORMAT = 1
TIME = re.compile(r"^t(_[a-z_]+)?_s$")  # t_s, t_sent_s, t_done_s ...: sampler-clock times in seconds
CODEC = {"compression": "zstd", "compression_level": 19}
#: a run's identity and outcome: never hoisted into the common facts, whatever the runs share
OWN = frozenset({"run_id", "status", "reason", "started_utc", "ended_utc", "frames"})


def is_time_column(name: str, dtype: pa.DataType) -> bool:
    return bool(TIME.match(name)) and pa.types.is_floating(dtype)


# -- the facts every run shares, stored once ---------------------------------------------------------------------------
def hoist(manifests: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(common, each manifest without it): a top-level key every manifest has with the same value is common; so is a
    key one level down (``campaign.lab_spec``, ``sysbench.threads``) that every manifest has alike under a top-level
    dict. ``merge(common, stripped)`` gives each manifest back."""
    if not manifests:
        return {"keys": {}, "sub": {}}, []
    first = manifests[0]
    keys = {k: v for k, v in first.items() if k not in OWN and all(k in m and m[k] == v for m in manifests[1:])}
    sub: dict[str, dict[str, Any]] = {}
    for k, v in first.items():
        if k in keys or k in OWN or not isinstance(v, dict) or not all(isinstance(m.get(k), dict) for m in manifests):
            continue
        same = {s: sv for s, sv in v.items() if all(s in m[k] and m[k][s] == sv for m in manifests[1:])}
        if same:
            sub[k] = same
    stripped = []
    for m in manifests:
        out = {k: v for k, v in m.items() if k not in keys}
        for k, same in sub.items():
            out[k] = {s: sv for s, sv in m[k].items() if s not in same}
        stripped.append(out)
    return {"keys": keys, "sub": sub}, stripped


def merge(common: dict[str, Any], stripped: dict[str, Any]) -> dict[str, Any]:
    """A manifest as it was written (keys sorted, as the run store writes them) from its stripped form."""
    out = {**stripped, **common.get("keys", {})}
    for k, same in common.get("sub", {}).items():
        out[k] = dict(sorted({**same, **out.get(k, {})}.items()))
    return dict(sorted(out.items()))


# -- writing -----------------------------------------------------------------------------------------------------------
@dataclass
class PackedRun:
    """One run as a pack holds it: its manifest (as written), frames (pyarrow tables as the run stored them) and raw
    text."""

    run_id: str
    manifest: dict[str, Any]
    frames: dict[str, pa.Table] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)


def _to_micros(table: pa.Table) -> tuple[pa.Table, list[str]]:
    done = []
    for i, f in enumerate(table.schema):
        if is_time_column(f.name, f.type):
            col = table.column(i)
            us = pc.round(pc.multiply(pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col), 1e6))
            table = table.set_column(i, pa.field(f.name, pa.int64()), pc.cast(us, pa.int64()))
            done.append(f.name)
    return table, done


def _write(table: pa.Table, path: Path) -> None:
    """Dictionaries for strings that repeat (node, metric, run_id), integers (times in µs, sequence numbers) split
    into byte streams (17% smaller than delta encoding over the recorded campaigns: zstd finds the high bytes of
    neighbouring values alike), zstd; text that rarely repeats (manifests, raw output) in large pages, so that zstd
    sees runs alike."""
    repeated = [f.name for f in table.schema if pa.types.is_dictionary(f.type) or (
        (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
        and pc.count_distinct(table.column(f.name)).as_py() <= table.num_rows // 2)]
    ints = {f.name: "BYTE_STREAM_SPLIT" for f in table.schema if pa.types.is_integer(f.type)}
    texts = any(pa.types.is_string(f.type) and f.name not in repeated for f in table.schema)
    pq.write_table(table, path, use_dictionary=repeated, column_encoding=ints,
                   data_page_size=(64 << 20) if texts else None, **CODEC)


def write_pack(campaign: Path, runs: list[PackedRun], generation: int, tmp_prefix: str) -> Path:
    """Write ``runs`` as pack ``generation`` of ``campaign``: under a temporary name, renamed whole into place."""
    final = campaign / f"{PACK_PREFIX}{generation}"
    tmp = campaign / f"{tmp_prefix}{PACK_PREFIX}{generation}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        common, stripped = hoist([r.manifest for r in runs])
        at: list[dict[str, list[int]]] = [{} for _ in runs]
        kinds = dict.fromkeys(k for r in runs for k in r.frames)
        time_columns: dict[str, list[str]] = {}
        for kind in kinds:
            tables: list[pa.Table] = []
            start = 0
            for i, r in enumerate(runs):
                t = r.frames.get(kind)
                if t is None:
                    continue
                if tables and not t.schema.equals(tables[0].schema, check_metadata=False):
                    raise StoreError(f"run {r.run_id}: its {kind} frame's columns differ from the campaign's other "
                                     f"runs' ({t.schema.names})", hint="the campaign cannot be packed as it is")
                tables.append(t)
                at[i][kind] = [start, t.num_rows]
                start += t.num_rows
            whole = pa.concat_tables(tables)
            codes = pa.array(np.repeat(np.arange(len(tables), dtype=np.int32), [t.num_rows for t in tables]))
            run_ids = pa.DictionaryArray.from_arrays(codes, pa.array([r.run_id for r in runs if kind in r.frames]))
            whole, time_columns[kind] = _to_micros(whole.append_column("run_id", run_ids))
            _write(whole, tmp / f"{kind}.parquet")
        _write(pa.table({"run_id": [r.run_id for r in runs],
                         "status": [str(r.manifest.get("status")) for r in runs],
                         "frames_at": [json.dumps(a, sort_keys=True) for a in at],
                         "manifest": [json.dumps(m, sort_keys=True) for m in stripped]}),
               tmp / "runs.parquet")
        raws = [(r.run_id, name, text) for r in runs for name, text in sorted(r.raw.items())]
        _write(pa.table({"run_id": pa.array([x[0] for x in raws], pa.string()),
                         "name": pa.array([x[1] for x in raws], pa.string()),
                         "text": pa.array([x[2] for x in raws], pa.string())}), tmp / "raw.parquet")
        (tmp / "pack.json").write_text(json.dumps({
            "pack_format": PACK_FORMAT, "generation": generation, "runs": len(runs),
            "written_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "time_columns": {"unit": "microseconds", **{k: v for k, v in time_columns.items() if v}},
            "common": common}, indent=1, sort_keys=True))
        if final.exists():
            raise StoreError(f"{final} appeared while this pack was written: not overwriting it")
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


# -- reading -----------------------------------------------------------------------------------------------------------
def _generation(p: Path) -> int | None:
    rest = p.name[len(PACK_PREFIX):]
    return int(rest) if p.name.startswith(PACK_PREFIX) and rest.isdigit() and (p / "pack.json").exists() else None


def find_pack(campaign: Path) -> "Pack | None":
    """The campaign folder's newest pack (None: nothing packed)."""
    if not campaign.is_dir():
        return None
    found = [(g, p) for p in campaign.iterdir() if p.is_dir() and (g := _generation(p)) is not None]
    return Pack.open(max(found)[1]) if found else None


_OPEN: "OrderedDict[tuple[str, int, int], Pack]" = OrderedDict()
OPEN_MAX = 8  # packs kept read in a process (their frames with them): the most recently used


class Pack:
    """A pack, read lazily: its manifests at once (small), each frame file when first asked for."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.meta = json.loads((path / "pack.json").read_text())
            runs = pq.read_table(path / "runs.parquet").to_pylist()
        except (OSError, ValueError, pa.ArrowInvalid) as exc:
            raise StoreError(f"{path} is damaged: {exc}") from None
        if self.meta.get("pack_format") != PACK_FORMAT:
            raise StoreError(f"{path}: pack format {self.meta.get('pack_format')!r} cannot be read by this benchlib "
                             f"(it reads format {PACK_FORMAT})", hint="upgrade benchlib")
        self.generation = int(self.meta["generation"])
        self._stripped = {r["run_id"]: r["manifest"] for r in runs}
        self._at = {r["run_id"]: json.loads(r["frames_at"]) for r in runs}
        self.status = {r["run_id"]: r["status"] for r in runs}
        self._tables: dict[str, pa.Table] = {}
        self._raw: dict[str, dict[str, str]] | None = None

    @classmethod
    def open(cls, path: Path) -> "Pack":
        """The pack at ``path``, read once while it is among the last ``OPEN_MAX`` used (packs never change once
        written; a new one is a new generation, so a folder's identity and time name one)."""
        st = (path / "pack.json").stat()
        key = (str(path), st.st_ino, st.st_mtime_ns)
        if key not in _OPEN:
            _OPEN[key] = cls(path)
            while len(_OPEN) > OPEN_MAX:
                _OPEN.popitem(last=False)
        _OPEN.move_to_end(key)
        return _OPEN[key]

    @property
    def run_ids(self) -> list[str]:
        return list(self._stripped)

    def manifest(self, run_id: str) -> dict[str, Any]:
        """The manifest of ``run_id`` as the run wrote it."""
        return merge(self.meta["common"], json.loads(self._stripped[run_id]))

    def table(self, kind: str) -> pa.Table:
        """Every run's rows of ``kind``, times in seconds again, the pandas metadata the runs wrote."""
        if kind not in self._tables:
            try:
                t = pq.read_table(self.path / f"{kind}.parquet")
            except (OSError, pa.ArrowInvalid) as exc:
                raise StoreError(f"{self.path / kind}.parquet is damaged: {exc}") from None
            for name in self.meta["time_columns"].get(kind, []):
                i = t.schema.get_field_index(name)
                t = t.set_column(i, pa.field(name, pa.float64()), pc.divide(t.column(i).cast(pa.float64()), 1e6))
            self._tables[kind] = t.drop_columns(["run_id"]).replace_schema_metadata(t.schema.metadata)
        return self._tables[kind]

    def frame(self, kind: str, run_id: str) -> pa.Table | None:
        """The rows of one run (a zero-copy slice), or None when the run has no such frame."""
        at = self._at[run_id].get(kind)
        return None if at is None else self.table(kind).slice(at[0], at[1])

    def raw(self, run_id: str) -> dict[str, str]:
        if self._raw is None:
            self._raw = {}
            for row in pq.read_table(self.path / "raw.parquet").to_pylist():
                self._raw.setdefault(row["run_id"], {})[row["name"]] = row["text"]
        return dict(self._raw.get(run_id, {}))

    def run(self, run_id: str) -> PackedRun:
        m = self.manifest(run_id)
        return PackedRun(run_id, m, {k: t for k in m.get("frames", []) if (t := self.frame(k, run_id)) is not None},
                         self.raw(run_id))
