"""Packed campaigns against run folders: size, file count, and how long reading them takes.

For each recorded campaign named (default: the five largest under data/campaigns/), writes it out once as run
folders (benchlib unpack, into /tmp/benchlib-pack-load/) and packs a copy (benchlib pack), then times, in
interleaved rounds, ``load_campaign`` and the whole analysis (``analyze``) on both, and packing itself. Prints each
campaign's figures and the medians with the ratio packed / folders (below 1: packed is faster).

    python bench/pack_load.py [--rounds 5] [CAMPAIGN ...]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib import packed as packed_mod  # noqa: E402
from benchlib import run_source  # noqa: E402
from benchlib.packed import find_pack  # noqa: E402
from benchlib.packing import pack_campaign, unpack_campaign  # noqa: E402
from benchlib.store import list_runs, load_campaign  # noqa: E402

WORK = Path("/tmp/benchlib-pack-load")
DATA = ROOT / "data" / "campaigns"


def _size(folder: Path) -> tuple[int, int]:
    files = [f for f in folder.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files), len(files)


def _folders(name: str) -> Path:
    dest = WORK / "folders" / name
    if not dest.exists():
        tmp = WORK / "folders" / f".{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        unpack_campaign(DATA / name, tmp)
        tmp.rename(dest)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("campaigns", nargs="*")
    args = ap.parse_args()
    names = args.campaigns or [p.parent.parent.name for p in sorted(
        DATA.glob("*/packed-*/pack.json"), key=lambda p: -sum(f.stat().st_size for f in p.parent.iterdir()))[:5]]
    rows = []
    for name in names:
        folders = _folders(name)
        packed = WORK / "packed" / name
        shutil.rmtree(packed, ignore_errors=True)
        shutil.copytree(folders, packed)
        t0 = time.perf_counter()
        pack_campaign(packed)
        pack_s = time.perf_counter() - t0
        assert find_pack(packed) is not None
        times: dict[str, list[float]] = {k: [] for k in ("load folders", "load packed", "analyze folders",
                                                          "analyze packed")}
        for _ in range(args.rounds):  # interleaved: a noisy neighbour slows both alike
            for label, folder in (("folders", folders), ("packed", packed)):
                packed_mod._OPEN.clear()  # every round reads from disk, as a new process does
                run_source.forget()
                t0 = time.perf_counter()
                load_campaign(folder)
                times[f"load {label}"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                analyze(folder, baseline="async")
                times[f"analyze {label}"].append(time.perf_counter() - t0)
        (fb, fn), (pb, pn) = _size(folders), _size(packed)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med))
        print(f"{name}: {len(list_runs(packed))} runs; folders {fb / 1e6:.2f} MB in {fn} files, packed "
              f"{pb / 1e6:.2f} MB in {pn} files ({pb / fb:.0%}); packing {pack_s:.2f} s; median of {args.rounds}: "
              f"load {med['load folders']:.3f} s -> {med['load packed']:.3f} s "
              f"(x{med['load packed'] / med['load folders']:.2f}), analyze {med['analyze folders']:.3f} s -> "
              f"{med['analyze packed']:.3f} s (x{med['analyze packed'] / med['analyze folders']:.2f})")
    load = statistics.median(m["load packed"] / m["load folders"] for _, m in rows)
    whole = statistics.median(m["analyze packed"] / m["analyze folders"] for _, m in rows)
    print(f"median ratio packed / folders over {len(rows)} campaigns: load_campaign x{load:.2f}, analyze x{whole:.2f}")


if __name__ == "__main__":
    main()
