"""The on-disk record of a lab: ``<lab dir>/lab.json``, read and written under a lock.

The record holds what cannot be recomputed from the spec: the chosen base port
and network index, node pids, the relay pid, and the runtime settings applied
since the lab came up (so ``heal`` restores them). Writes are atomic (write a
temporary file, rename) and every read-modify-write holds an exclusive
``flock`` on ``<lab dir>/.lock``: parallel updates never lose an entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from benchlib.errors import LabError
from benchlib.lab.layout import PORTS_PER_NODE, lab_root, ports_needed
from benchlib.schema import Cell

FORMAT = 1


@dataclass
class LabRecord:
    name: str
    spec: dict[str, Any]
    base_port: int
    net_index: int | None
    run_as: str | None
    created: float = field(default_factory=time.time)
    pids: dict[str, int] = field(default_factory=dict)
    shaper: str | None = None  # link shaper of the WAN sites (see wan.SHAPERS)
    link_pid: int | None = None  # its helper process (the TUN relay), if it has one
    settings: dict[str, dict[str, Cell]] = field(default_factory=dict)
    promoted: dict[str, str] = field(default_factory=dict)  # cluster -> the replica a fault run promoted
    moved: list[str] = field(default_factory=list)  # clusters whose roles a rejoin under load left moved
    broken: str = ""  # why the last heal failed (empty: it did not); a campaign stops on a broken lab
    format: int = FORMAT

    def lab_spec(self):
        """The validated spec this lab was brought up from."""
        from pydantic import ValidationError

        from benchlib.lab.spec import LabSpec

        try:
            return LabSpec.model_validate(self.spec)
        except ValidationError as exc:
            raise LabError(f"lab {self.name}: stored spec no longer validates ({exc.error_count()} problems)",
                           hint="take the lab down (benchlib lab cleanup --all) and bring it up again") from None

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path) -> "LabRecord":
        version = data.get("format")
        if version != FORMAT:
            raise LabError(
                f"{path}: lab record format {version!r} is not supported by this benchlib (expects {FORMAT})",
                hint="remove the lab with: benchlib lab cleanup",
            )
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (created if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def record_path(lab_dir: Path) -> Path:
    return lab_dir / "lab.json"


def read(lab_dir: Path) -> LabRecord | None:
    path = record_path(lab_dir)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise LabError(f"{path} is damaged ({exc})", hint="remove the lab with: benchlib lab cleanup") from None
    return LabRecord.from_json(data, path)


def write(lab_dir: Path, record: LabRecord) -> None:
    path = record_path(lab_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(record), indent=2))  # key order kept: the spec's cluster order sets ports
    os.replace(tmp, path)


@contextlib.contextmanager
def update(lab_dir: Path) -> Iterator[LabRecord]:
    """Read-modify-write the record of an existing lab under its lock."""
    with locked(lab_dir / ".lock"):
        record = read(lab_dir)
        if record is None:
            raise LabError(f"no lab at {lab_dir}", hint="bring it up with: benchlib lab up SPEC")
        yield record
        write(lab_dir, record)


def list_labs(root: Path | None = None) -> list[str]:
    """The labs that are up under ``root`` (default: ``BENCHLIB_LAB_ROOT``)."""
    root = root or lab_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / "lab.json").exists())


def ports_of_other_labs(root: Path) -> set[int]:
    """Every port the labs under ``root`` have taken. A lab whose stored spec this process cannot validate (a flavour
    another process registered, a spec of an older benchlib) still holds its ports: they are counted from the raw spec,
    generously (at least three nodes a cluster)."""
    taken: set[int] = set()
    for name in list_labs(root):
        rec = read(root / name)
        if rec:
            try:
                needed = ports_needed(rec.lab_spec())
            except LabError:
                clusters = (rec.spec.get("clusters") or {}).values()
                needed = PORTS_PER_NODE * sum(max(int(c.get("nodes") or 0), int(c.get("replicas") or 0) + 1, 3)
                                              for c in clusters if isinstance(c, dict))
            taken.update(range(rec.base_port, rec.base_port + needed))
    return taken


#: every lab root on this machine claims its labs' port blocks here too: two roots (a campaign's and the test suite's)
#: must not pick the same block when a node of one lab is down, its port free for a moment (a heal restarting it then
#: finds it taken)
CLAIMS = Path(os.environ.get("BENCHLIB_PORT_CLAIMS", "/tmp/benchlib-ports"))


def claims_lock() -> contextlib.AbstractContextManager[None]:
    """The machine-wide lock under which port blocks are claimed."""
    _claims_dir()
    return locked(CLAIMS / ".lock")


def _claims_dir() -> Path:
    if not CLAIMS.is_dir():
        CLAIMS.mkdir(parents=True, exist_ok=True)
        os.chmod(CLAIMS, 0o1777)  # every user's labs claim here
    return CLAIMS


def claimed_ports() -> set[int]:
    """The ports of every lab of every root on this machine (a claim whose lab is gone is removed)."""
    out: set[int] = set()
    if not CLAIMS.is_dir():
        return out
    for f in CLAIMS.glob("*.claim"):
        try:
            lab_dir = Path(f.read_text().strip())
            lo, hi = (int(x) for x in f.name.removesuffix(".claim").split("-")[-2:])
        except (OSError, ValueError):
            continue
        if read(lab_dir) is None:  # its lab is down (or crashed and was cleaned up)
            f.unlink(missing_ok=True)
            continue
        out.update(range(lo, hi))
    return out


def claim_ports(lab_dir: Path, lo: int, hi: int) -> None:
    """Claim ``lo``..``hi - 1`` for the lab in ``lab_dir`` (under ``claims_lock``)."""
    tag = hashlib.sha1(str(lab_dir.resolve()).encode()).hexdigest()[:12]
    (_claims_dir() / f"{tag}-{lo}-{hi}.claim").write_text(str(lab_dir.resolve()))


def release_ports(lab_dir: Path) -> None:
    """Drop the claims of the lab in ``lab_dir``."""
    if not CLAIMS.is_dir():
        return
    mine = str(lab_dir.resolve())
    for f in CLAIMS.glob("*.claim"):
        try:
            if f.read_text().strip() == mine:
                f.unlink(missing_ok=True)
        except OSError:
            continue
