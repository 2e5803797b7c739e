"""The run store: one immutable, self-describing folder per run.

    runs/<campaign>/<run_id>/
        manifest.json        format version, status (ok | failed | invalid | disturbed), reason, UTC start/end,
                             the run's parameters, environment facts (no secrets)
        raw/                 sysbench output and other raw text, as written
        <frame>.parquet      tidy frames named in ``benchlib.schema`` (intervals, lag, cluster, histogram)

A run is written under a temporary name (``.tmp-<run_id>-<pid>``) and renamed into
place only when finished: a reader never sees half a run, and an interrupted run
leaves only a temporary folder that readers ignore. A run folder is never
overwritten. A failed run is kept, marked, with the frames it had. Frames are
validated against their schema when written and when read. Secrets given to the
writer are refused wherever they would be saved.

A finished campaign can be packed (``benchlib.packing``; ``benchlib pack``): its runs go into a few compressed
files (``benchlib.packed``) and their folders away. Every reader here reads a packed run as it reads a run folder:
``list_runs`` lists both, ``read_manifest`` and ``read_run`` take the same ``<campaign>/<run_id>`` path whether
the folder exists or the pack holds it, ``raw_texts`` gives its raw text.

``load_campaign(path)`` returns the frames of every run of a campaign, concatenated,
each row tagged with its ``run_id`` and the run's parameters (a parameter named like
one of the frame's own columns, e.g. ``threads``, is added as ``param_threads``).

Analysis code: imports nothing from the lab or the runner.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
from pydantic import BaseModel, JsonValue, ValidationError

from benchlib import axis as axes
from benchlib.errors import SecretRefusedError, StoreError
from benchlib.manifest import FORMAT_VERSION, UPGRADERS, AuditRecord, CampaignRecord, Manifest, upgrade
from benchlib.packed import Pack
from benchlib.run_source import PackSource, RunSource, campaign_of, read_table
from benchlib.sysbench.keys import DEFAULT as DEFAULT_KEYS
from benchlib.traits import COLUMNS as TRAIT_COLUMNS
from benchlib.traits import traits
from collections.abc import Mapping

__all__ = ["FORMAT_VERSION", "UPGRADERS", "CampaignRecord", "Manifest", "RUN_FACTS", "Run", "RunWriter",
           "SecretRefusedError", "StoreError", "has_run", "list_runs", "load_campaign", "raw_texts",
           "pack_holding", "pack_of", "read_campaign_record", "read_manifest", "read_run", "read_table", "runs_table"]

TMP_PREFIX = ".tmp-"




def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"


class RunWriter:
    """Write one run atomically: ``raw()``, ``frame()``, then ``finish()`` (or ``fail()``)."""

    def __init__(self, campaign_dir: str | Path, run_id: str, params: Mapping[str, JsonValue], *,
                 secrets: Iterable[str] = ()):
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise StoreError(f"run id {run_id!r} is not a plain folder name")
        self.campaign = Path(campaign_dir)
        self.final = self.campaign / run_id
        if self.final.exists():
            raise StoreError(f"run {self.final} already exists: runs are never overwritten",
                             hint="use another run id, or remove the campaign folder to start over")
        self.run_id, self.params = run_id, params
        self.secrets = [s for s in secrets if s]
        self.tmp = self.campaign / f"{TMP_PREFIX}{run_id}-{os.getpid()}"
        shutil.rmtree(self.tmp, ignore_errors=True)
        (self.tmp / "raw").mkdir(parents=True)
        self.started = time.time()
        self.frames: list[str] = []

    def _check(self, text: str, where: str) -> None:
        for secret in self.secrets:
            if secret in text:
                raise SecretRefusedError(f"refusing to save a secret into {where} of run {self.run_id}",
                                 hint="pass credentials by environment-variable name; redact before saving")

    def raw(self, name: str, text: str) -> None:
        self._check(text, f"raw/{name}")
        (self.tmp / "raw" / name).write_text(text)

    def frame(self, kind: str, df: pd.DataFrame) -> None:
        frames = axes.frame_schemas()
        if kind not in frames:
            raise StoreError(f"unknown frame {kind!r}", hint=f"frames: {', '.join(frames)}")
        df = frames[kind].validate(df, f"run {self.run_id}")
        self._check(df.to_csv(index=False), f"{kind}.parquet")
        df.to_parquet(self.tmp / f"{kind}.parquet", index=False, compression="zstd")
        self.frames.append(kind)

    def _close(self, status: str, reason: str | None, extra: dict[str, object]) -> Path:
        manifest = {
            "format_version": FORMAT_VERSION,
            "run_id": self.run_id,
            "status": status,
            "reason": reason,
            "started_utc": _utc(self.started),
            "ended_utc": _utc(time.time()),
            "params": self.params,
            "frames": sorted(self.frames),
            **extra,
        }
        text = json.dumps(manifest, indent=2, sort_keys=True, default=_recordable)
        # typed before it is written, as it will be read: a record readers would refuse fails here; each axis's entry
        # by its own record
        written = json.loads(text)
        self._validated("", lambda: Manifest.model_validate(written))
        for name in written.get("axes") or {}:
            axis = axes.AXES.get(name)
            if axis is None:
                raise StoreError(f"run {self.run_id}: its manifest has an entry of axis {name!r}, which is not "
                                 "registered", hint=f"axes: {', '.join(axes.AXES)}")
            self._validated(f"axes.{name}.", lambda: axis.recorded(written))
        self._check(text, "manifest.json")
        (self.tmp / "manifest.json").write_text(text)
        if self.final.exists():
            raise StoreError(f"run {self.final} appeared while this one was written: not overwriting it")
        os.rename(self.tmp, self.final)  # atomic: the run appears whole or not at all
        return self.final

    def _validated(self, where: str, validate: Callable[[], Any]) -> None:
        try:
            validate()
        except ValidationError as exc:
            said = "; ".join(f"{where}{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise StoreError(f"run {self.run_id}: its manifest does not validate: {said}") from None

    def finish(self, **extra: Any) -> Path:
        return self._close("ok", None, extra)

    def fail(self, reason: str, **extra: Any) -> Path:
        """Keep a failed run, marked, with whatever frames were written."""
        return self._close("failed", reason, extra)

    def invalid(self, reason: str, **extra: Any) -> Path:
        """Keep a run that completed but did not measure what it names (its cluster changed mode meanwhile:
        ``benchlib.systems.invariants``), marked, with all its frames: statistics leave it out."""
        return self._close("invalid", reason, extra)

    def disturbed(self, reason: str, **extra: Any) -> Path:
        """Keep a run that completed while others took the host's CPU from it (``benchlib.analysis.interference``),
        marked, with all its frames: statistics leave it out, the campaign redoes it."""
        return self._close("disturbed", reason, extra)

    def abandon(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _recordable(obj: Any) -> Any:
    """What JSON has no word for, as a manifest records it: a path as its text, a numpy number as the number, a
    record (a dataclass, a pydantic model) as its fields, a set as a sorted list. Anything else is refused, naming
    its type: no object silently becomes its ``str()``."""
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and type(obj).__module__ == "numpy":
        return obj.item()
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if isinstance(obj, enum.Enum):
        return obj.value
    raise StoreError(f"a manifest cannot record a {type(obj).__module__}.{type(obj).__qualname__} ({obj!r:.80})",
                     hint="convert it to numbers, text, lists or dicts where the run records it")


@dataclass
class Run:
    path: Path
    manifest: Manifest
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def ok(self) -> bool:
        return self.manifest.ok


def pack_of(campaign: Path) -> Pack | None:
    """The campaign folder's newest pack (``benchlib.run_source.campaign_of`` looks again when the folder changed)."""
    found = campaign_of(Path(campaign))
    return found.pack if found is not None else None


def pack_holding(run_dir: Path) -> Pack | None:
    """The pack holding the run ``run_dir`` names (None: it is not packed)."""
    source = _source(Path(run_dir))
    return source.pack if isinstance(source, PackSource) else None


def _source(run_dir: Path) -> RunSource | None:
    """Where the run ``<campaign>/<run_id>`` is read from (None: it is not a finished run)."""
    found = campaign_of(run_dir.parent)
    return found.source_of(run_dir.name) if found is not None else None


def has_run(run_dir: str | Path) -> bool:
    """Whether the run ``<campaign>/<run_id>`` is finished: its folder written whole, or in the campaign's pack."""
    return _source(Path(run_dir)) is not None


def _found(run_dir: Path) -> RunSource:
    """The source holding the run ``run_dir`` names; a StoreError when it is no finished run."""
    source = _source(run_dir)
    if source is None:
        raise StoreError(f"{run_dir} is not a run folder (no manifest.json)")
    return source


def _manifest(source: RunSource, run_id: str) -> Manifest:
    return Manifest.model_validate(upgrade(source.manifest(run_id), source.manifest_at(run_id)))


def read_manifest(run_dir: Path) -> Manifest:
    """The typed manifest of a run (its folder, or the campaign's pack; upgraded when an older benchlib wrote it)."""
    run_dir = Path(run_dir)
    return _manifest(_found(run_dir), run_dir.name)


def read_campaign_record(folder: str | Path) -> CampaignRecord | None:
    """A campaign folder's campaign.json, typed (None: a folder without one, such as a bare set of runs)."""
    path = Path(folder) / "campaign.json"
    try:
        return CampaignRecord.model_validate(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise StoreError(f"{path} is damaged: {exc}") from None


def read_run(run_dir: str | Path) -> Run:
    run_dir = Path(run_dir)
    source = _found(run_dir)
    manifest = _manifest(source, run_dir.name)
    frames, schemas = {}, axes.frame_schemas()
    for kind in manifest.frames:
        table = source.frame(kind, run_dir.name)
        df = table.to_pandas() if table is not None else schemas[kind].empty()
        frames[kind] = schemas[kind].validate(df, str(run_dir / f"{kind}.parquet"))
    return Run(run_dir, manifest, frames)


def raw_texts(run_dir: str | Path) -> dict[str, str]:
    """A run's raw text files (sysbench's output ...), by name."""
    run_dir = Path(run_dir)
    source = _source(run_dir)
    return source.raw(run_dir.name) if source is not None else {}


def list_runs(campaign_dir: str | Path) -> list[Path]:
    """Finished runs of a campaign: run folders and the runs of its pack, each as ``<campaign>/<run_id>``
    (temporary folders of interrupted runs are skipped; a folder its pack also holds counts once)."""
    root = Path(campaign_dir)
    found = campaign_of(root) if root.is_dir() else None
    if found is None:
        raise StoreError(f"no campaign folder at {root}")
    return [root / r for r in found.run_ids()]


def _flat(params: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


#: the columns of the ``runs`` table that are facts of a run, not its parameters (plus ``summary_*``)
RUN_FACTS = ("run_id", "status", "reason", "started_utc", "ended_utc", "load_start_s", "load_end_s", "catch_up_s",
             "catch_up_low_s", "in_sync_wait_s", "sampler_errors", "sampler_warnings", "nodes", "system", "placement",
             "server_version", "rtt_ms", "lab_durability", "binlog", "audit_nodes", "audit_identical", "audit_s",
             "keys", "keys_chosen", "data_mb", "data_vs_buffer_pool_measured", *TRAIT_COLUMNS, *axes.fact_columns())  # each axis's own (benchlib.axes): the probe's read consistency, a fault's


def _count(value: object) -> int:
    """How many entries a recorded list (or table) has; 0 for none."""
    return len(value) if isinstance(value, (list, dict)) else 0


def _run_facts(m: Manifest) -> dict[str, object]:
    """What the ``runs`` table carries from a manifest besides the parameters: outcome, times, sampling,
    and the cluster's run facts (system, placement, largest round trip, the lab's durability, binary log)."""
    window = m.load_window_s or [None, None]
    summary = {f"summary_{k}": v for k, v in m.summary.items()}
    facts = m.lab.facts
    return {"status": m.status, "reason": m.reason, "started_utc": m.started_utc,
            "ended_utc": m.ended_utc, "load_start_s": window[0], "load_end_s": window[1],
            "catch_up_s": m.catch_up_s, "catch_up_low_s": m.catch_up_low_s,
            "in_sync_wait_s": m.in_sync_wait_s,
            "sampler_errors": _count(m.sampler.get("errors")),
            "sampler_warnings": _count(m.sampler.get("warnings")),
            "nodes": ",".join(m.lab.nodes), "system": facts.system, "placement": facts.placement,
            "server_version": facts.version,
            "rtt_ms": facts.rtt_ms, "lab_durability": facts.durability, "binlog": facts.binlog,
            **_audit_facts(m.audit), **_keys(m), **traits(m), **axes.run_facts(m), **summary}


def _keys(m: Manifest) -> dict[str, object]:
    """The key distribution a run's rows were drawn from (``benchlib.sysbench.keys``): ``keys``, its canonical name,
    and ``keys_chosen``, whether the campaign chose it (False: sysbench's default, as in every run recorded before the
    choice existed, which passed no option); for a dataset sized against the buffer pool, its measured size
    (``data_mb``) and that over the write node's buffer pool (``data_vs_buffer_pool_measured``)."""
    load = m.sysbench or {}
    if not load:
        return {"keys": None, "keys_chosen": None, "data_mb": None, "data_vs_buffer_pool_measured": None}
    chosen = load.get("distribution")
    data = load.get("data_bytes")
    pool = (m.server_variables or {}).get(m.lab.nodes[0] if m.lab.nodes else "", {}).get("innodb_buffer_pool_size")
    return {"keys": str(load.get("keys") or chosen or DEFAULT_KEYS.name), "keys_chosen": chosen is not None,
            "data_mb": data / 2**20 if isinstance(data, (int, float)) else None,
            "data_vs_buffer_pool_measured": data / float(pool) if isinstance(data, (int, float))
            and isinstance(pool, (int, float, str)) and float(pool) > 0 else None}


def _run_row(m: Manifest) -> dict[str, object]:
    """A run's row of the ``runs`` table: its id, facts and parameters."""
    return {"run_id": m.run_id, **_run_facts(m), **_flat(m.params)}


def runs_table(campaign_dir: str | Path) -> pd.DataFrame:
    """The ``runs`` table of ``load_campaign`` alone (manifests only, no frame read): one row per run."""
    return pd.DataFrame([_run_row(read_manifest(p)) for p in list_runs(campaign_dir)])


def _audit_facts(audit: AuditRecord | None) -> dict[str, object]:
    """The consistency audit of a run in the ``runs`` table: how many nodes it compared, whether they held the same
    data, what it cost (None: not audited)."""
    if audit is None or audit.skipped:
        return {"audit_nodes": None, "audit_identical": None, "audit_s": None}
    return {"audit_nodes": len(audit.nodes), "audit_identical": audit.identical,
            "audit_s": float(audit.wait_s or 0) + float(audit.check_s or 0)}


def load_campaign(path: str | Path, *, failed: bool = False, only: Iterable[str] | None = None
                  ) -> dict[str, pd.DataFrame]:
    """Every frame of every (ok, or also failed) run of a campaign, tagged with ``run_id`` and the
    run's parameters; plus ``runs``: one row per run (status, reason, times, parameters). ``only``:
    the run ids to load (default: all).

    Each kind of frame is read with pyarrow and concatenated once; ``run_id`` and the parameters are
    categorical columns (one code per row), so a campaign of millions of rows loads in seconds."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import pyarrow as pa

    folders = list_runs(path)
    if only is not None:
        wanted = set(only)
        folders = [p for p in folders if p.name in wanted]
    campaign = campaign_of(Path(path))
    assert campaign is not None  # list_runs found it
    sources = [campaign.source_of(p.name) or _found(p) for p in folders]  # each run's source, looked up once
    manifests = [_manifest(s, p.name) for s, p in zip(sources, folders)]
    rows = []
    params_of = []
    for m in manifests:
        params_of.append(_flat(m.params))
        rows.append(_run_row(m))
    runs_table = pd.DataFrame(rows)
    result: dict[str, pd.DataFrame] = {}
    keep = [i for i, m in enumerate(manifests) if m.ok or failed]
    for kind, schema in axes.frame_schemas().items():
        present = [i for i in keep if kind in manifests[i].frames]
        files = [folders[i] / f"{kind}.parquet" for i in present]

        def table_of(i: int):
            t = sources[i].frame(kind, folders[i].name)
            return t if t is not None else pa.Table.from_pandas(schema.empty(), preserve_index=False)

        with ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 1) + 1)) as pool:  # pyarrow frees the GIL
            tables = list(pool.map(table_of, present))
        for file, t in zip(files, tables):
            if not t.schema.equals(tables[0].schema, check_metadata=False):
                read_run(file.parent)  # the schema check names the file and the column
                raise StoreError(f"{file}: columns differ from the campaign's other {kind} frames")
        codes = [np.full(t.num_rows, j, dtype=np.int32) for j, t in enumerate(tables)]
        if not tables:
            result[kind] = schema.empty().assign(run_id=pd.Series(dtype="str"))
            continue
        df = schema.validate(pa.concat_tables(tables).to_pandas(), f"campaign {path}")
        code = np.concatenate(codes)
        df["run_id"] = pd.Categorical.from_codes(code, categories=[manifests[i].run_id for i in present])
        names = dict.fromkeys(k for i in present for k in params_of[i])
        for k in names:
            values = [params_of[i].get(k) for i in present]
            column = f"param_{k}" if k in df.columns else k
            uniq = list(dict.fromkeys(v for v in values if v is not None and v == v))
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in uniq):
                df[column] = np.array([np.nan if v is None else v for v in values], dtype=float)[code]
                if uniq and all(isinstance(v, (int, float)) and float(v).is_integer() for v in uniq) and None not in values:
                    df[column] = df[column].astype("int64")
            else:
                index = {v: j for j, v in enumerate(uniq)}
                df[column] = pd.Categorical.from_codes(
                    np.array([index.get(v, -1) for v in values], dtype=np.int32)[code], categories=uniq)
        result[kind] = df
    result["runs"] = runs_table
    return result
