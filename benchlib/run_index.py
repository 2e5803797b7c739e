"""The run index: every run of every campaign under some folders, as one table to query (a catalogue across campaigns).

    from benchlib.run_index import RunIndex
    idx = RunIndex(["runs", "data/campaigns"])
    idx.runs(system="galera", threads=16)                    # every Galera run at 16 threads, across campaigns
    idx.sql("SELECT campaign, median(summary_tps) FROM runs WHERE status = 'ok' GROUP BY 1")

One row per run: the campaign (its name, folder, when and on which host and revision it was made), the run's id,
status and reason, its facts (system, topology, placement, server version, round trip, durability ...), its
parameters (cluster, workload, threads, rate and each setting it swept) and its measures (``summary_*``: sysbench's
mean throughput and latency percentile, catch-up time ...): the ``runs`` table ``benchlib.store.load_campaign`` gives
for one campaign, for all of them.

It is built incrementally: each campaign's rows are kept in a cache file (``~/.cache/benchlib/run-index/``, or
``cache=``) with the campaign's signature (its pack's generation and the names of its run folders, which never
change once written); a campaign whose signature is unchanged is not read again. The query engine is DuckDB, in
process, over those files (``union_by_name``: campaigns that swept other settings add their columns, empty
elsewhere), so a question over hundreds of campaigns takes a fraction of a second and no frame is loaded.

Analysis code: reads run stores, nothing of the lab.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from benchlib.errors import SpecError, StoreError
from benchlib.packed import PACK_PREFIX
from benchlib.store import read_campaign_record, runs_table

__all__ = ["RunIndex", "campaign_folders"]

SIGNATURE = b"benchlib.signature"
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchlib" / "run-index"


def campaign_folders(roots: Iterable[str | Path]) -> list[Path]:
    """The campaign folders under ``roots``: a root that is a campaign folder itself, or the campaign folders in it."""
    found: list[Path] = []
    for root in map(Path, roots):
        if not root.is_dir():
            raise StoreError(f"no folder {root} to index", hint="give folders of campaigns, e.g. runs data/campaigns")
        if _is_campaign(root):
            found.append(root)
        else:
            found += sorted(p for p in root.iterdir() if p.is_dir() and _is_campaign(p))
    return found


def _is_campaign(folder: Path) -> bool:
    return (folder / "campaign.json").exists() or any(folder.glob(f"{PACK_PREFIX}*/pack.json")) \
        or any(folder.glob("*/manifest.json"))


def _signature(folder: Path) -> str:
    """What changes when a campaign's runs change: its pack's generation, its run folders (immutable once written)."""
    entries = sorted(p.name for p in folder.iterdir()
                     if p.is_dir() and (p.name.startswith(PACK_PREFIX) or (p / "manifest.json").exists()))
    record = folder / "campaign.json"
    return json.dumps([ROWS_VERSION, entries, record.stat().st_mtime_ns if record.exists() else None])


#: the shape of a campaign's cached rows: a benchlib that adds columns to the runs table raises it, and every cache
#: made before is read again
ROWS_VERSION = 2


def _arrow_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns parquet can hold: a parameter that mixes numbers and words in one campaign becomes words."""
    import pyarrow as pa

    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            try:
                pa.array(out[c])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                out[c] = out[c].map(lambda v: None if v is None or v != v else str(v))
    return out


class RunIndex:
    """The runs of every campaign under ``roots``, refreshed when made (``refresh()`` again after new runs)."""

    def __init__(self, roots: Iterable[str | Path], *, cache: str | Path | None = None):
        self.roots = [Path(r) for r in roots]
        self.cache = Path(cache) if cache is not None else _default_cache()
        self.cache.mkdir(parents=True, exist_ok=True)
        self.files: dict[Path, Path] = {}
        self.indexed: list[Path] = []  # the campaigns the last refresh (re)read
        self._db: Any = None
        self.refresh()

    # -- building -------------------------------------------------------------------------------------------------------
    def refresh(self) -> list[Path]:
        """Index the campaigns that are new or changed since their cached rows; returns them."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.files, self.indexed = {}, []
        for folder in campaign_folders(self.roots):
            key = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:16]
            file = self.cache / f"{key}.parquet"
            sig = _signature(folder)
            if file.exists():
                meta = pq.read_schema(file).metadata or {}
                if meta.get(SIGNATURE, b"").decode() == sig:
                    self.files[folder] = file
                    continue
            rows = self._rows(folder)
            if rows.empty:
                continue
            table = pa.Table.from_pandas(_arrow_safe(rows), preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), SIGNATURE: sig.encode()})
            tmp = file.with_suffix(f".tmp{os.getpid()}")
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, file)
            self.files[folder] = file
            self.indexed.append(folder)
        self._db = None
        return list(self.indexed)

    @staticmethod
    def _rows(folder: Path) -> pd.DataFrame:
        runs = runs_table(folder)
        if runs.empty:
            return runs
        record = read_campaign_record(folder)
        facts = {"campaign": record.name if record and record.name else folder.name,
                 "campaign_path": str(folder.resolve()),
                 "campaign_created_utc": record.created_utc if record else None,
                 "campaign_git_revision": record.git_revision if record else None,
                 "host_cpu_model": (record.host.get("cpu_model") if record else None),
                 "host_cpus": (record.host.get("cpus") if record else None)}
        return pd.concat([pd.DataFrame([facts] * len(runs)), runs.reset_index(drop=True)], axis=1)

    # -- querying -------------------------------------------------------------------------------------------------------
    @property
    def db(self):
        """A DuckDB connection with the view ``runs`` over every indexed campaign."""
        if self._db is None:
            import duckdb

            self._db = duckdb.connect(":memory:")
            files = [str(f) for f in self.files.values()]
            if files:
                self._db.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet({files!r}, union_by_name = true)")
            else:
                self._db.execute("CREATE VIEW runs AS SELECT NULL::VARCHAR AS campaign, NULL::VARCHAR AS run_id "
                                 "WHERE false")
        return self._db

    @property
    def columns(self) -> list[str]:
        return [r[0] for r in self.db.execute("DESCRIBE runs").fetchall()]

    def sql(self, query: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Any SQL over the view ``runs`` (DuckDB's dialect)."""
        import duckdb

        try:
            return self.db.execute(query, params or []).df()
        except duckdb.Error as exc:
            raise SpecError(f"the run index could not answer: {str(exc).splitlines()[0]}",
                            hint=f"columns: {', '.join(self.columns)}") from None

    def runs(self, where: str | None = None, **equals: Any) -> pd.DataFrame:
        """The runs matching every ``column=value`` (and the SQL condition ``where``), newest campaign first."""
        unknown = [k for k in equals if k not in self.columns]
        if unknown or any(not IDENT.match(k) for k in equals):
            raise SpecError(f"the run index has no column {', '.join(unknown or list(equals))}",
                            hint=f"columns: {', '.join(self.columns)}")
        conds = [f'"{k}" IS NULL' if v is None else f'"{k}" = ?' for k, v in equals.items()]
        if where:
            conds.append(f"({where})")
        query = "SELECT * FROM runs" + (" WHERE " + " AND ".join(conds) if conds else "") \
            + " ORDER BY campaign_created_utc DESC NULLS LAST, campaign, run_id"
        return self.sql(query, [v for v in equals.values() if v is not None])

    def campaigns(self) -> pd.DataFrame:
        """One row per indexed campaign: its name, folder, when it was made, runs and how many were ok."""
        return self.sql("SELECT campaign, campaign_path, campaign_created_utc, count(*) AS runs, "
                        "count(*) FILTER (WHERE status = 'ok') AS ok FROM runs GROUP BY ALL "
                        "ORDER BY campaign_created_utc NULLS LAST, campaign")
