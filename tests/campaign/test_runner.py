"""Campaigns on real labs: faults healed mid-campaign, Ctrl-C and resume through the notebook, no secrets saved."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchlib.campaign.runner import CampaignError, run_campaign
from benchlib.lab import procs
from benchlib.lab.lab import LocalLab
from benchlib.lab.state import list_labs
from benchlib.store import load_campaign, read_manifest
from tests.campaigns import campaign_toml
from tests.conftest import LAB_ROOT, ROOT, example_spec, kill9, leftovers, needs_root
from tests.hog import CpuHog


def write_campaign(tmp_path: Path, lab_file: str, lab_name: str, *, clusters: list[str], repetitions: int = 2,
                   time_s: int = 3, threads: list[int] = [2], extra: str = "") -> Path:
    """A campaign file (``extra`` before its [load]) next to a copy of an example lab renamed ``lab_name``; disturbed
    runs kept unless ``extra`` sets [interference] (see ``campaign_toml``)."""
    lab_toml = (ROOT / "examples" / "labs" / lab_file).read_text()
    lab_toml = "\n".join(f'name = "{lab_name}"' if line.startswith("name =") else line for line in lab_toml.splitlines())
    (tmp_path / "lab.toml").write_text(lab_toml)
    path = tmp_path / "campaign.toml"
    path.write_text(campaign_toml("t", "lab.toml", clusters=clusters, repetitions=repetitions, time_s=time_s,
                                  threads=threads, top=extra))
    return path


@pytest.mark.heavy  # fresh labs of their own, a minute in all: the heavy lane balances the phase
@pytest.mark.parametrize("lab_file,cluster,victim", [("async-1p2r.toml", "async", "async-2"),
                                                     ("galera-3.toml", "galera", "galera-2")])
def test_a_node_killed_mid_run_fails_that_run_heals_the_lab_and_the_campaign_goes_on(
        fresh_labs, tmp_path, lab_file, cluster, victim):
    spec = write_campaign(tmp_path, lab_file, f"t-kill-{cluster}", clusters=[cluster], time_s=4)
    lab = fresh_labs.up(example_spec(lab_file, f"t-kill-{cluster}"))
    killed = []

    def kill_in_first_run(lab, run, iv):
        if run.index == 1 and iv.t_s == 2.0 and not killed:
            killed.append(time.monotonic())
            kill9(lab, victim)

    t0 = time.monotonic()
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none", on_interval=kill_in_first_run)
    table = result.table().set_index("run_id")
    first, second = result.plan[0].run_id, result.plan[1].run_id
    assert table.loc[first, "status"] == "failed" and f"{victim} went down during the run" in table.loc[first, "reason"]
    assert table.loc[second, "status"] == "ok"
    assert killed[0] - t0 < 30 and result.healed == [victim]
    lab.tuning.refresh()
    assert not lab.health.broken()  # healed, and the lab was the user's: still up
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    assert {"event": "heal", "restarted": [victim], "after": first}.items() <= next(
        e for e in events if e["event"] == "heal").items()
    failed = read_manifest(result.path / first)
    assert failed.status == "failed" and "intervals" in failed.frames  # partial frames kept
    check = subprocess.run([sys.executable, "-m", "benchlib.cli", "validate", str(result.path)],
                           capture_output=True, text=True)
    assert check.returncode == 1 and f"error    {first}: run failed: FAILED: {victim} went down" in check.stdout

    # resume: "keep" leaves the failed run alone; the default redoes it and keeps the old attempt
    again = run_campaign(spec, runs_dir=tmp_path / "runs", failed="keep", progress="none")
    assert again.ran == [] and len(again.skipped) == 2
    again = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert again.ran == [first] and again.counts == {"ok": 2}
    assert read_manifest(result.path / "attempts" / f"{first}.1").status == "failed"
    assert len(load_campaign(result.path)["runs"]) == 2


def _our_processes() -> list[str]:
    mine = [f"{p.pid}: {' '.join(p.cmdline)[:100]}" for p in procs.find(f"{LAB_ROOT}/")]
    kernels = subprocess.run(["pgrep", "-af", "ipykernel_launcher"], capture_output=True, text=True).stdout
    return mine + [k for k in kernels.splitlines() if k]


@pytest.mark.kernel
@pytest.mark.lab
@pytest.mark.alone  # no Jupyter kernel may be left on the machine
def test_ctrl_c_then_resume_through_the_notebook_and_no_password_anywhere(tmp_path):
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-ctrlc", clusters=["async"], repetitions=3)
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "benchlib.cli", "run", str(spec), "--runs-dir", str(runs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            start_new_session=True)  # as at a terminal: the signal goes to the CLI only
    first = None
    deadline = time.monotonic() + 120
    while first is None and time.monotonic() < deadline and proc.poll() is None:
        done = [p for p in (runs / "t").glob("0*") if (p / "manifest.json").exists()]
        first = done[0] if done else None
        time.sleep(0.2)
    assert first is not None, proc.communicate()[0] if proc.poll() is not None else "no run finished in 120 s"
    time.sleep(1.5)  # into the second run's measured window
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "interrupted" in out and "Traceback" not in out
    folder = runs / "t"
    assert not list(folder.glob(".tmp-*"))  # no half-written run
    assert "t-ctrlc" not in list_labs() and not _our_processes()  # the campaign's lab is down, nothing runs
    stored = {p.name: (p / "manifest.json").stat().st_mtime for p in folder.glob("0*")}
    assert 1 <= len(stored) < 3
    assert len(list((folder / "notebooks").glob("campaign-*.ipynb"))) == 1  # the interrupted execution, kept

    res = subprocess.run([*cmd, "--keep-lab"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 ok" in res.stdout
    assert {p: (folder / p / "manifest.json").stat().st_mtime for p in stored} == stored  # not rerun
    events = [json.loads(line)["event"] for line in (folder / "events.jsonl").read_text().splitlines()]
    assert events.count("interrupted") == 1 and events[-1] == "end"
    assert len(list((folder / "notebooks").glob("campaign-*.ipynb"))) == 2  # earlier copies are kept
    lab = LocalLab.open("t-ctrlc")
    try:
        passwords = [pw.encode() for pw in lab.creds.passwords.values()]
        files = [p for p in runs.rglob("*") if p.is_file()]
        assert any(p.suffix == ".ipynb" for p in files) and any(p.suffix == ".parquet" for p in files)
        leaks = [str(p) for p in files if any(pw in p.read_bytes() for pw in passwords)]
        assert not leaks
    finally:
        lab.close(down=True)
    assert not leftovers(lab)


def test_a_folder_holding_another_campaign_is_refused(tmp_path):
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-never-up", clusters=["async"])
    folder = tmp_path / "runs" / "t"
    folder.mkdir(parents=True)
    (folder / "campaign.json").write_text(json.dumps({"campaign": {"name": "t", "seed": 99}, "lab": {}, "plan": []}))
    with pytest.raises(CampaignError, match=r"holds another campaign \(its campaign, lab, plan differ"):
        run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert "t-never-up" not in list_labs()


@pytest.mark.long
def test_bad_parameters_and_specs_fail_before_any_lab_starts(tmp_path):
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-never-up", clusters=["nope"])
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "run", str(spec), "--runs-dir", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "matrix.clusters names ['nope']" in res.stderr
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "run", str(spec), "--failed", "maybe"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2 and "failed" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "t").exists()


def test_adaptive_mode_adds_rounds_until_the_cap(labs, tmp_path):
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-adapt", clusters=["async"], repetitions=2, time_s=2,
                          extra="adaptive = true\nmax_repetitions = 3\ntarget_halfwidth = 0.00001\n")
    labs.up(example_spec("async-1p2r.toml", "t-adapt"))
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert len(result.plan) == 3 and result.counts == {"ok": 3}  # 2 planned + 1 added, then the cap
    assert [r.repetition for r in result.plan] == [1, 2, 3] and len({r.config_key for r in result.plan}) == 1
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    assert [e["runs"] for e in events if e["event"] == "adaptive"] == [[result.plan[2].run_id]]
    stop = next(e for e in events if e["event"] == "adaptive_stop")
    assert stop["rounds"] == 3 and stop["reason"].startswith("cap of 3 rounds reached; 1 configuration still open")
    assert result.adaptive == stop["reason"]
    again = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")  # resume: nothing more to do
    assert again.ran == [] and len(again.plan) == 3


@pytest.mark.measures  # a search judges the rates the host holds: a busy neighbour moves the peak it starts from
def test_a_sustained_search_brackets_a_rate_and_resumes_where_it_was_interrupted(labs, tmp_path):
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-sust", clusters=["async"], repetitions=1, time_s=3,
                          threads=[4], extra="sustained = true\n[search]\ntime_s = 10\nprecision = 0.25\n"
                                             "max_runs = 4\nstart = 0.6\nstep = 1.6\n")
    labs.up(example_spec("async-1p2r.toml", "t-sust"))
    probes = []

    def interrupt_second_probe(lab, run):
        if run.search:
            probes.append(run.run_id)
            if len(probes) == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_campaign(spec, runs_dir=tmp_path / "runs", progress="none", before_run=interrupt_second_probe)
    first = read_manifest(tmp_path / "runs" / "t" / probes[0])
    assert first.status == "ok" and first.params["rate"] > 0 and first.params["search"]
    result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert probes[0] not in result.ran and result.ran[0] == probes[1]  # resumed at the interrupted probe
    assert read_manifest(tmp_path / "runs" / "t" / probes[0]).started_utc == first.started_utc
    (search,) = result.searches
    assert 2 <= search["runs"] <= 4 and search["peak_tps"] > 0
    assert search["sustained_tps"] is not None or search["first_failing_tps"] is not None
    from benchlib.analysis.campaign import analyze
    from benchlib.analysis.views import sustained

    a = analyze(result.path)
    assert len(a.configs) == 1  # the open-loop runs are not pooled into configurations
    row = sustained(a).iloc[0]
    assert row.runs == search["runs"] and row.threads == 4
    again = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none")
    assert again.ran == []  # a finished search has nothing left to run


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_no_load_outlives_its_campaign_and_resume_stops_a_stray_one(labs, tmp_path):
    """A campaign killed with SIGKILL takes its sysbench with it; a load a previous start left anyway (here: a
    sysbench started without that protection) is stopped before the resumed campaign measures anything."""
    from benchlib.sysbench.options import SysbenchOptions
    from benchlib.sysbench.process import record_pid

    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-sigkill", clusters=["async"], repetitions=1, time_s=8)
    lab = labs.up(example_spec("async-1p2r.toml", "t-sigkill"))
    loads = lab.dir / "loads"
    cli = subprocess.Popen([sys.executable, "-m", "benchlib.cli", "run", str(spec), "--runs-dir",
                            str(tmp_path / "runs"), "--no-notebook"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(loads.glob("*.pid")) and time.monotonic() < deadline:
            time.sleep(0.2)
        (pid_file,) = loads.glob("*.pid")
        load = int(pid_file.read_text().split()[0])
        time.sleep(2)  # well into the measured load
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(10)
        gone = time.monotonic() + 3
        while _alive(load) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not _alive(load), "sysbench outlived the campaign that started it"
    finally:
        if cli.poll() is None:
            cli.kill()

    opts = SysbenchOptions(workload="oltp_write_only", tables=2, table_size=1000, threads=2, time_s=300)
    stray = subprocess.Popen(opts.argv("run", *opts.run_args()), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        stray.stdin.write(lab.hooks.load_driver().endpoint("async-1").config())
        stray.stdin.close()
        record_pid(loads, stray.pid)
        result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none", keep_lab=True)
        assert stray.wait(10) == -signal.SIGKILL
    finally:
        if stray.poll() is None:
            stray.kill()
    assert result.counts == {"ok": 1}
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    stopped = next(e for e in events if e["event"] == "stray_load")
    assert stopped["stopped"] == [f"sysbench pid {stray.pid} (here)"]
    assert events.index(stopped) < next(i for i, e in enumerate(events) if e["event"] == "run")


@contextlib.contextmanager
def small_disk(path: Path, size: str = "8m"):
    """A tmpfs of ``size`` at ``path`` (root only), unmounted afterwards whatever happens."""
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path, leave: int) -> Path:
    """A file that takes the free space of ``path``'s file system but ``leave`` bytes."""
    filler = path / "filler"
    free = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize
    with open(filler, "ab") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


@needs_root
@pytest.mark.heavy  # a lab of its own: in phase 2's heavy process, which balances the two
def test_a_full_disk_stops_the_campaign_with_one_message_and_nothing_half_stored(labs, tmp_path):
    """The disk fills up under the campaign folder: the run being written is removed, the complete ones stay,
    the CLI says where and how much is free in one message (no traceback, no cut-short notebook), and the same
    command resumes once there is room."""
    from benchlib.errors import DiskFullError

    spec = write_campaign(tmp_path, "single.toml", "t-full", clusters=["solo"], repetitions=2, time_s=2)
    labs.up(example_spec("single.toml", "t-full"))
    with small_disk(tmp_path / "runs") as runs:
        filled = []

        def fill_before_the_second(lab, run):
            if run.index == 2:
                filled.append(fill(runs, leave=16_384))

        with pytest.raises(DiskFullError) as err:
            run_campaign(spec, runs_dir=runs, progress="none", before_run=fill_before_the_second, keep_lab=True)
        assert f"no space left on the device of {runs / 't'}" in err.value.message
        assert "MiB free" in err.value.message and "the 1 complete runs of 2 are kept" in err.value.message
        folder = runs / "t"
        assert not list(folder.glob(".tmp-*"))
        (first,) = [p for p in folder.glob("0*")]
        assert read_manifest(first).ok

        # the CLI, through the campaign notebook, on the still-full disk: one message, exit 2, no notebook cut short
        cmd = [sys.executable, "-m", "benchlib.cli", "run", str(spec), "--runs-dir", str(runs), "--keep-lab"]
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert res.returncode == 2, res.stdout + res.stderr
        assert "Traceback" not in res.stdout + res.stderr
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "no space left on the device" in errors[0], res.stderr
        assert not list(folder.glob(".tmp-*")) and [p.name for p in folder.glob("0*")] == [first.name]
        for nb in (folder / "notebooks").glob("*.ipynb"):
            json.loads(nb.read_text())  # whole, or not there

        filled[0].unlink()
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert res.returncode == 0 and "2 ok" in res.stdout, res.stdout + res.stderr


@pytest.mark.measures  # the hog's share of the CPU against the threshold: the other worker would be a second hog
def test_a_run_a_cpu_hog_disturbed_is_redone_in_its_round_and_named(labs, tmp_path):
    """A CPU hog outside benchlib (tests/hog.py: another job on the host) during the first run: that run lost about a
    third of the CPU, so it is kept as DISTURBED with the evidence, left out, and redone before its round closes;
    the report names it. The hog is gone by the redo."""
    spec = write_campaign(tmp_path, "async-1p2r.toml", "t-hog", clusters=["async"], repetitions=2, time_s=3,
                          threads=[2, 4], extra="[interference]\nredo_above = 0.10\nmax_redos = 2\n")
    labs.up(example_spec("async-1p2r.toml", "t-hog"))
    hogs: list[CpuHog] = []
    seen: list[str] = []

    def hog_in_the_first_run(lab, run):
        seen.append(run.run_id)
        for h in hogs:
            h.stop()
        if len(seen) == 1:
            hogs.append(CpuHog(2, 1.0, seconds=60).start())

    try:
        result = run_campaign(spec, runs_dir=tmp_path / "runs", progress="none", before_run=hog_in_the_first_run)
    finally:
        for h in hogs:
            h.stop()
    first = result.plan[0]
    # the redo comes after the rest of round 1, before round 2
    round1 = [r.run_id for r in result.plan if r.repetition == 1]
    assert seen[: len(round1) + 1] == round1 + [first.run_id], seen
    assert result.counts == {"ok": 4}
    kept = read_manifest(result.path / "attempts" / f"{first.run_id}.1")
    assert kept.status == "disturbed" and kept.reason.startswith("DISTURBED: processes outside the lab took")
    assert "mostly python" in kept.reason and kept.interference["foreign"] > 0.2
    assert read_manifest(result.path / first.run_id).interference["foreign"] < 0.1
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    disturbed = [e for e in events if e["event"] == "disturbed"]
    assert disturbed[0]["run_id"] == first.run_id and disturbed[0]["attempt"] == 1 and disturbed[0]["redo"]
    assert any(e["event"] == "host_noise" for e in events)
    from benchlib.analysis.campaign import analyze
    from benchlib.report import interference_findings

    a = analyze(result.path)
    assert (a.runs.status == "ok").all() and a.runs.foreign.notna().all() and a.errors.empty
    said = " ".join(interference_findings(a, result.path))
    assert f"1 run was disturbed (over the 10% of the CPU a run may lose to others), left out and redone in its " \
           f"round: {first.run_id} (attempt 1): processes outside the lab took" in said
