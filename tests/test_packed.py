"""Packed campaigns (benchlib.packed, store.pack_campaign): a recorded campaign packed reads back as it was (manifests,
frames, raw text, the campaign's tables), in a tenth of the files; packing is safe to interrupt, takes in runs added
later, and a packed run can be retired and redone."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.campaign.folder import CampaignFolder
from benchlib.errors import StoreError
from benchlib.packed import find_pack, hoist, merge
from benchlib.packing import pack_campaign, unpack_run
from benchlib.store import has_run, list_runs, load_campaign, raw_texts, read_manifest, read_run
from tests.recorded import ROOT, as_folders



def _folder_copy(tmp_path: Path, name: str = "quick") -> Path:
    """The recorded campaign with a folder per run."""
    return as_folders(name, tmp_path / name)


def _same_frames(a: pd.DataFrame, b: pd.DataFrame, kind: str) -> None:
    assert list(a.columns) == list(b.columns) and len(a) == len(b), kind
    for c in a.columns:
        if c.startswith("t_") and c.endswith("_s") or c == "t_s":  # kept to the microsecond
            assert np.allclose(a[c].to_numpy(float), b[c].to_numpy(float), atol=5e-7, equal_nan=True), (kind, c)
        else:
            pd.testing.assert_series_equal(a[c], b[c], check_names=False, obj=f"{kind}.{c}")


@pytest.mark.long
def test_a_packed_campaign_reads_as_its_run_folders_did(tmp_path):
    folders = _folder_copy(tmp_path)
    names = [p.name for p in list_runs(folders)]
    before = load_campaign(folders, failed=True)
    manifests = {n: read_manifest(folders / n).as_dict() for n in names}
    raws = {n: raw_texts(folders / n) for n in names}
    one = read_run(folders / names[0])
    files = sum(1 for f in folders.rglob("*") if f.is_file())

    done = pack_campaign(folders)
    assert done.runs == done.taken == len(names) and done.bytes_after < done.bytes_before / 3, done.words()
    assert not any((folders / n).exists() for n in names)  # the folders it took in are gone
    assert sum(1 for f in folders.rglob("*") if f.is_file()) < files / 10
    assert [p.name for p in list_runs(folders)] == names and all(has_run(folders / n) for n in names)
    assert CampaignFolder(folders).stored() == names  # what a resumed campaign skips
    assert {n: read_manifest(folders / n).as_dict() for n in names} == manifests
    assert {n: raw_texts(folders / n) for n in names} == raws and raws[names[0]]["sysbench.txt"]
    after = load_campaign(folders, failed=True)
    assert after.keys() == before.keys()
    pd.testing.assert_frame_equal(after["runs"], before["runs"])
    for kind in before:
        if kind != "runs":
            _same_frames(after[kind], before[kind], kind)
    again = read_run(folders / names[0])
    assert again.frames.keys() == one.frames.keys()
    for kind in one.frames:
        _same_frames(again.frames[kind], one.frames[kind], kind)
    # the common facts are stored once: the campaign's specs are in pack.json, not in each run's row
    pack = find_pack(folders)
    assert "campaign" in json.loads((pack.path / "pack.json").read_text())["common"]["keys"]


@pytest.mark.long
def test_packing_again_takes_in_new_runs_and_an_interrupted_clean_up_counts_once(tmp_path):
    folders = _folder_copy(tmp_path)
    names = [p.name for p in list_runs(folders)]
    keep = tmp_path / "late"
    shutil.move(folders / names[-1], keep)  # a run that comes after the first packing
    first = pack_campaign(folders)
    assert first.path.name == "packed-1" and first.runs == len(names) - 1
    shutil.move(keep, folders / names[-1])
    # a clean-up interrupted after the rename: a run folder the pack also holds is read once, from the pack
    unpack_run(folders / names[0], tmp_path / "leftover")
    shutil.move(tmp_path / "leftover", folders / names[0])
    assert [p.name for p in list_runs(folders)] == names
    second = pack_campaign(folders)
    assert second.path.name == "packed-2" and second.runs == len(names) and second.taken == 1
    assert not (folders / "packed-1").exists() and not (folders / names[0]).exists()
    assert [p.name for p in list_runs(folders)] == names
    assert pack_campaign(folders).words() == "nothing to pack"
    third = pack_campaign(folders, again=True)  # a pack rewritten in today's encoding, nothing new
    assert third.path.name == "packed-3" and third.runs == len(names) and third.taken == 0
    assert [p.name for p in list_runs(folders)] == names and not (folders / "packed-2").exists()


def test_the_recorded_data_stays_small():
    """data/ (recorded campaigns, reference figures) is at most 15.5 MB: campaigns are kept packed. (10 MB until the
    four campaigns of a 2-core VM came in: demo-vm-1..3 and replica-count, 1.1 MB; 11 MB until the four of what loses
    acknowledged writes and planned switchover came in, 1.8 MB; 12.5 MB until the workloads' campaigns and the several
    writers' came in, at most 3 MB together. The causal-read campaign's per-read frames,
    9.5 MB packed, stay out: its summary is in data/measured/; so do the isolation campaign's histories, 13 MB packed:
    what the checker found in each run is data/measured/isolation.csv.)"""
    weight = sum(f.stat().st_size for f in (ROOT / "data").rglob("*") if f.is_file())
    assert weight <= 15_500_000, f"data/ holds {weight / 1e6:.2f} MB: pack new campaigns (benchlib pack)"


@pytest.mark.long
def test_a_packed_run_is_retired_into_attempts_beside_a_pack_left_as_it_is(tmp_path):
    """Running a packed run again does not rewrite the pack: the run's copy goes to attempts/, the pack's copy is
    masked (retired.json), the redo is a run folder read instead, and only benchlib pack writes a new pack (without
    the retired copy, with the redo)."""
    folders = _folder_copy(tmp_path)
    names = [p.name for p in list_runs(folders)]
    pack_campaign(folders)
    pack = find_pack(folders).path
    before = {f.name: f.stat().st_mtime_ns for f in pack.iterdir()}
    folder = CampaignFolder(folders)
    target = folder.retire(names[1])
    assert target == folders / "attempts" / f"{names[1]}.1" and (target / "manifest.json").exists()
    assert read_manifest(target).run_id == names[1] and (target / "raw" / "sysbench.txt").exists()
    assert not folder.has(names[1]) and names[1] not in folder.stored() and folder.has(names[0])
    assert find_pack(folders).path == pack and {f.name: f.stat().st_mtime_ns for f in pack.iterdir()} == before
    assert json.loads((folders / "retired.json").read_text()) == [names[1]]
    # the redo: a run folder, read instead of the pack's copy; retiring it again keeps both earlier attempts
    redo = unpack_run(target, folders / names[1])
    manifest = json.loads((redo / "manifest.json").read_text())
    (redo / "manifest.json").write_text(json.dumps({**manifest, "reason": "the redo"}))
    assert folder.has(names[1]) and read_manifest(folders / names[1]).reason == "the redo"
    assert len(list_runs(folders)) == len(names)
    # benchlib pack: a new pack with the redo in it, the retired copy out, the mask gone
    done = pack_campaign(folders)
    assert done.path.name == "packed-2" and done.runs == len(names) and not (folders / "retired.json").exists()
    assert not (folders / names[1]).exists() and read_manifest(folders / names[1]).reason == "the redo"
    assert folder.attempts_of(names[1]) == 1


def test_the_manifest_facts_every_run_shares_go_out_and_come_back():
    rng = random.Random(7)
    for _ in range(200):
        shared = {"campaign": {"spec": {"a": 1}, "lab_spec": {"b": [1, 2]}}, "git": "abc"}
        runs = []
        for i in range(rng.randint(1, 5)):
            m = json.loads(json.dumps(shared))
            m.update(run_id=f"r{i}", status=rng.choice(["ok", "failed"]), params={"t": rng.randint(1, 3)})
            if rng.random() < 0.5:
                m["campaign"]["name"] = rng.choice(["x", "y"])
            if rng.random() < 0.3:
                m["only_some"] = i
            runs.append(dict(sorted(m.items())))
        common, stripped = hoist(runs)
        assert [merge(common, s) for s in stripped] == [json.loads(json.dumps(m, sort_keys=True)) for m in runs]
        assert "git" in common["keys"] and "run_id" not in common["keys"]


def test_a_damaged_pack_is_named(tmp_path):
    folders = _folder_copy(tmp_path)
    pack_campaign(folders)
    (folders / "packed-1" / "runs.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match="packed-1 is damaged"):
        list_runs(folders)


def test_the_attempts_a_redo_replaced_are_packed_too_and_still_named(tmp_path):
    from benchlib.analysis.interference import disturbed_runs

    folders = as_folders("quick-disturbed", tmp_path / "qd")
    before = disturbed_runs(folders)
    assert before.redone.any()
    pack_campaign(folders)
    assert find_pack(folders / "attempts") is not None and not any((folders / "attempts").glob("*/manifest.json"))
    pd.testing.assert_frame_equal(disturbed_runs(folders), before)
    assert CampaignFolder(folders).attempts_of(before[before.redone].run_id.iloc[0], status="disturbed") >= 1


@pytest.mark.long
def test_pack_and_unpack_on_the_command_line(tmp_path):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "benchlib.cli", *args], capture_output=True, text=True)

    out = tmp_path / "wan"
    res = cli("unpack", str(ROOT / "data" / "campaigns" / "wan"), "--to", str(out))
    assert res.returncode == 0 and "12 runs" in res.stdout, res.stderr
    assert len(list(out.glob("*/manifest.json"))) == 12 and (out / "campaign.json").exists()
    res = cli("pack", str(out))
    assert res.returncode == 0 and "12 runs in packed-1 (12 run folders taken in)" in res.stdout, res.stderr
    for args in (["pack", str(tmp_path / "none")], ["unpack", str(out), "--to", str(out)]):
        res = cli(*args)  # one message with its fix, exit 2, no traceback
        assert res.returncode == 2 and res.stderr.startswith("error: ") and "fix: " in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
