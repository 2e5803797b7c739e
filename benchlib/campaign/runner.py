"""Run a campaign: every planned run on its lab, resumable, fault tolerant, with progress.

    runs/<campaign>/
        campaign.json        the resolved campaign and lab specs and the plan (written once)
        events.jsonl         what happened, one JSON object per line (runs, heals, interrupts)
        <run_id>/            one folder per run (benchlib.store)
        attempts/<run_id>.N  failed runs that a later attempt replaced, kept as they were
        notebooks/           executed copies of the campaign notebook (benchlib run)

The lab named by the campaign is used when it is up (its spec must be the campaign's),
otherwise brought up for the campaign and taken down afterwards. Between runs: nodes
that are down are healed, the run's settings are applied, then ``execute_run`` waits
for every node to be in sync, warms up if asked, and measures. A run that fails (a node
down, sysbench dying, a hung cluster) is kept as failed with its reason, the lab is
healed, and the campaign goes on. Rerunning a campaign skips the runs it has and redoes
the failed ones (``failed = "keep"`` keeps them). Ctrl-C stops sysbench and sampling,
leaves no half-written run (only a temporary folder that readers ignore and the next
start removes), takes down a lab the campaign brought up, and the campaign resumes
cleanly.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import pandas as pd
import pymysql
from pydantic import BaseModel, ConfigDict, ValidationError

from benchlib.campaign.spec import (CampaignSpec, PlannedRun, PlannedSearch, load_campaign_spec, plan,
                                    plan_searches)
from benchlib.campaign.run import execute_run
from benchlib.errors import BenchlibError, SpecError
from benchlib.labs import AnyLabSpec, open_lab
from benchlib.specs import format_validation
from benchlib.store import TMP_PREFIX, RunWriter, SecretRefusedError, read_manifest

if TYPE_CHECKING:
    from benchlib.lab.base import Lab
    from benchlib.sysbench.output import Interval


class CampaignError(BenchlibError):
    """A campaign that cannot be run as asked (folder holds another campaign, already running...)."""


class CampaignParameters(BaseModel):
    """The campaign notebook's parameters, type-checked (papermill passes whatever it is given)."""

    model_config = ConfigDict(extra="forbid")
    spec: str
    runs_dir: str = "runs"
    failed: Literal["redo", "keep", "spec"] = "spec"  # "spec": the campaign spec's policy
    keep_lab: bool = False
    progress: Literal["auto", "text", "none"] = "auto"

    @classmethod
    def check(cls, **values: Any) -> "CampaignParameters":
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SpecError(f"invalid campaign notebook parameters ({exc.error_count()} problems)",
                            detail=format_validation(exc, "parameters")) from None


@dataclass
class CampaignResult:
    path: Path
    plan: list[PlannedRun]
    skipped: list[str] = field(default_factory=list)  # complete before this start
    ran: list[str] = field(default_factory=list)
    healed: list[str] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)  # sustained throughput: one row per search

    def table(self) -> pd.DataFrame:
        """One row per planned run: status, reason, mean TPS, p-th percentile latency, catch-up."""
        rows = []
        for run in self.plan:
            row: dict[str, Any] = {"run_id": run.run_id, "cluster": run.cluster, "workload": run.options.workload,
                                   "threads": run.options.threads, "rate": run.options.rate, **run.settings,
                                   "status": "missing"}
            folder = self.path / run.run_id
            if (folder / "manifest.json").exists():
                m = read_manifest(folder)
                summary = m.get("summary") or {}
                row.update(status=m["status"], reason=m.get("reason"), tps=summary.get("tps"),
                           lat_pctl_ms=summary.get("lat_pctl_ms"), catch_up_s=m.get("catch_up_s"))
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def counts(self) -> dict[str, int]:
        return self.table()["status"].value_counts().to_dict()


def campaign_dir(spec: CampaignSpec, runs_dir: str | Path) -> Path:
    return Path(runs_dir) / spec.name


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _git_revision() -> str | None:
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def host_facts() -> dict[str, Any]:
    """The machine a campaign runs on, for every run's manifest."""
    import platform
    import subprocess

    def version(argv: list[str]) -> str | None:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.splitlines()[0] if out else None

    mem_kib = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("MemTotal:")), None)
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), None)
    return {"hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": model,
            "mem_gib": round(mem_kib / 2**20, 1) if mem_kib else None, "python": platform.python_version(),
            "sysbench": version(["sysbench", "--version"]), "mariadbd": version(["mariadbd", "--version"])}


def _describe(spec: CampaignSpec, lab: AnyLabSpec, runs: list[PlannedRun]) -> dict[str, Any]:
    return {"campaign": spec.model_dump(mode="json"), "lab": lab.model_dump(mode="json"),
            "plan": [{"run_id": r.run_id, **r.params} for r in runs]}


def _claim_folder(path: Path, description: dict[str, Any]) -> int:
    """Create or reopen the campaign folder; refuse one that holds another campaign or is in use.
    Returns the descriptor holding the folder's lock (closed when the campaign ends)."""
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CampaignError(f"campaign folder {path} is in use by another benchlib run",
                            hint="wait for it to finish, or stop it (Ctrl-C) first") from None
    record = path / "campaign.json"
    if record.exists():
        old = json.loads(record.read_text())
        if {k: old.get(k) for k in description} != description:
            os.close(fd)
            differs = [k for k in description if old.get(k) != description[k]]
            raise CampaignError(f"{path} holds another campaign (its {', '.join(differs)} differ from this one's)",
                                hint="give the campaign another name, or move the old folder away to start over")
    else:
        tmp = path / ".campaign.json.tmp"
        tmp.write_text(json.dumps({**description, "created_utc": _utc(), "git_revision": _git_revision()},
                                  indent=2, sort_keys=True))
        os.rename(tmp, record)
    for stale in path.glob(f"{TMP_PREFIX}*"):  # a run interrupted by a crash: never part of the campaign
        shutil.rmtree(stale, ignore_errors=True)
    return fd


class _Events:
    def __init__(self, path: Path):
        self.path = path

    def __call__(self, event: str, **fields: Any) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"utc": _utc(), "event": event, **fields}, default=str) + "\n")


class _Progress:
    """tqdm over the runs: run k of n, current TPS and replica lag; events printed above the bar."""

    def __init__(self, mode: str, total: int, done: int, name: str):
        if mode == "auto":
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        self.bar = tqdm(total=total, initial=done, desc=name, unit="run", disable=mode == "none",
                        file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
        self.quiet = mode == "none"
        self.run = ""

    def start(self, k: int, n: int, run: PlannedRun) -> None:
        rate = f" rate {run.options.rate}" if run.options.rate else ""
        self.run = f"{k}/{n} {run.cluster} {run.options.workload} t{run.options.threads}{rate} r{run.repetition}"
        self.bar.set_postfix_str(self.run + " preparing", refresh=True)

    def second(self, iv: "Interval", lag_ms: float | None) -> None:
        lag = f" lag {lag_ms:.0f} ms" if lag_ms is not None else ""
        self.bar.set_postfix_str(f"{self.run} {iv.t_s:.0f}s {iv.tps:.0f} tps{lag}", refresh=False)

    def done(self) -> None:
        self.bar.update(1)

    def say(self, text: str) -> None:
        if not self.quiet:
            self.bar.write(text, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()


def _open_lab(lab_spec: AnyLabSpec, say: Callable[[str], None], events: "_Events") -> tuple["Lab", bool]:
    """The campaign's lab: a remote lab, the running local one of that name, or a new one (True: this
    campaign brought it up and takes it down). A load a previous start left running is stopped first."""
    from benchlib.errors import LabError

    try:
        lab, created = open_lab(lab_spec, bring_up=True, progress=say)
    except LabError as exc:
        if "different spec" not in exc.message:
            raise
        raise CampaignError(f"lab {lab_spec.name} is up with a different spec than the campaign's",
                            hint=f"benchlib lab down {lab_spec.name} (the campaign brings it up as specified), "
                                 "or point the campaign at the running lab's spec") from None
    if lab.kind == "remote":
        say(f"using remote lab {lab.name}")
    stopped = lab.load_driver().stop_strays()
    if stopped:
        events("stray_load", stopped=stopped)
        say(f"stopped a load a previous start left running: {', '.join(stopped)}")
    return lab, created


def _retire_failed(folder: Path) -> Path:
    attempts = folder.parent / "attempts"
    attempts.mkdir(exist_ok=True)
    n = 1
    while (attempts / f"{folder.name}.{n}").exists():
        n += 1
    target = attempts / f"{folder.name}.{n}"
    os.rename(folder, target)
    return target


def run_campaign(spec: str | Path, *, runs_dir: str | Path = "runs", failed: str = "spec",
                 keep_lab: bool = False, progress: str = "auto",
                 before_run: Callable[["Lab", PlannedRun], None] | None = None,
                 on_interval: Callable[["Lab", PlannedRun, "Interval"], None] | None = None) -> CampaignResult:
    """Run (or resume) the campaign of the spec file ``spec``; returns what it did and where the runs are.

    ``before_run`` and ``on_interval`` are hooks (fault injection in tests, custom displays)."""
    params = CampaignParameters.check(spec=str(spec), runs_dir=str(runs_dir), failed=failed, keep_lab=keep_lab,
                                      progress=progress)
    campaign, lab_spec = load_campaign_spec(params.spec)
    runs = plan(campaign, lab_spec, params.spec)
    searches = plan_searches(campaign, runs, params.spec)
    policy = campaign.failed if params.failed == "spec" else params.failed
    path = campaign_dir(campaign, params.runs_dir).resolve()
    lock = _claim_folder(path, _describe(campaign, lab_spec, runs))
    events = _Events(path / "events.jsonl")
    result = CampaignResult(path, runs)
    todo: list[PlannedRun] = []
    for run in runs:
        folder = path / run.run_id
        if (folder / "manifest.json").exists():
            status = read_manifest(folder)["status"]
            if status == "ok" or policy == "keep":
                result.skipped.append(run.run_id)
                continue
        todo.append(run)
    context = {"campaign": {"name": campaign.name, "spec": campaign.model_dump(mode="json"),
                            "lab_spec": lab_spec.model_dump(mode="json")},
               "host": host_facts(), "git_revision": _git_revision()}
    bar = _Progress(params.progress, len(runs), len(result.skipped), campaign.name)
    lab = None
    owned = False
    try:
        if result.skipped:
            bar.say(f"resuming {campaign.name}: {len(result.skipped)} of {len(runs)} runs already done")
        if todo:
            lab, owned = _open_lab(lab_spec, bar.say, events)
            events("start", lab=lab.name, todo=len(todo), done=len(result.skipped), owned_lab=owned)
        for run in todo:
            _one_run(lab, campaign, run, path, bar, events, result, before_run, on_interval, context,
                     k=runs.index(run) + 1, n=len(runs))
        while campaign.adaptive:
            extra = _more_runs(campaign, path, result.plan)
            if not extra:
                break
            if lab is None:
                lab, owned = _open_lab(lab_spec, bar.say, events)
            events("adaptive", runs=[r.run_id for r in extra])
            bar.say(f"adaptive: {len(extra)} more runs for configurations whose runs do not agree yet")
            result.plan = result.plan + extra
            bar.bar.total = len(result.plan)
            for run in extra:
                _one_run(lab, campaign, run, path, bar, events, result, before_run, on_interval, context,
                         k=result.plan.index(run) + 1, n=len(result.plan))
        for search in searches:
            if lab is None and _search_needs_runs(campaign, search, path, policy, result.plan):
                lab, owned = _open_lab(lab_spec, bar.say, events)
            result.searches.append(_search(lab, campaign, search, path, bar, events, result, before_run, on_interval,
                                           context, policy))
        events("end", **result.counts)
    except KeyboardInterrupt:
        events("interrupted", ran=len(result.ran))
        bar.say(f"interrupted: {len(result.skipped) + len(result.ran)} of {len(runs)} runs are stored; "
                "rerun the campaign to resume")
        raise
    finally:
        bar.close()
        if lab is not None:
            if owned and not keep_lab:
                lab.down()
            else:
                lab.close()
        os.close(lock)
    return result


def _more_runs(campaign: CampaignSpec, path: Path, plan_so_far: list[PlannedRun]) -> list[PlannedRun]:
    """Extra repetitions for the configurations whose runs do not agree (ADD_RUNS), up to the cap;
    runs already stored (an earlier start) are taken into account, never redone."""
    import random
    from dataclasses import replace

    from benchlib.analysis.campaign import analyze

    stored = {p.name for p in path.iterdir() if (p / "manifest.json").exists()}
    known = {r.run_id: r for r in plan_so_far}
    for name in stored - set(known):  # extra runs of an earlier start: rebuild them from their configuration
        base = next((r for r in plan_so_far if name.rsplit("-r", 1)[0].endswith(r.config_key)), None)
        if base is not None:
            rep = int(name.rsplit("-r", 1)[1])
            known[name] = replace(base, index=int(name[:4]), run_id=name, repetition=rep)
    plan_so_far[:] = sorted(known.values(), key=lambda r: r.index)
    configs = analyze(path, target=campaign.target_halfwidth).configs
    if configs.empty:
        return []
    extra = []
    index = max(r.index for r in plan_so_far)
    for c in configs.itertuples(index=False):
        if c.verdict != "ADD_RUNS":
            continue
        mine = [r for r in plan_so_far if r.config_key == c.config]
        room = campaign.max_repetitions - len(mine)
        for k in range(min(int(c.add_runs), room)):
            base = mine[0]
            rep = max(r.repetition for r in mine) + 1 + k
            extra.append((base, rep))
    random.Random(campaign.seed + len(plan_so_far)).shuffle(extra)
    out = []
    for base, rep in extra:
        index += 1
        out.append(replace(base, index=index, repetition=rep,
                           run_id=f"{index:04d}-{base.cluster}-{base.options.workload}-t{base.options.threads}-"
                                  f"{base.config_key}-r{rep}"))
    return out


def _probe_runs(path: Path, key: str) -> dict[tuple[int, int], dict[str, Any]]:
    """The stored runs of one search: (rate, repetition) -> manifest."""
    out = {}
    for folder in path.iterdir():
        if folder.is_dir() and (folder / "manifest.json").exists():
            m = read_manifest(folder)
            p = m.get("params") or {}
            if p.get("search") == key:
                out[(int(p["rate"]), int(p["repetition"]))] = m
    return out


def _next_index(path: Path, plan_so_far: list[PlannedRun]) -> int:
    names = [p.name for p in path.iterdir() if p.is_dir() and p.name[:4].isdigit()]
    return max([r.index for r in plan_so_far] + [int(n[:4]) for n in names] + [0]) + 1


def _search_state(campaign: CampaignSpec, search: PlannedSearch, path: Path, policy: str,
                  verdicts: dict[str, dict[str, Any]]):
    """(history {rate: accepted}, the (rate, repetition, run_id or None) to run next or None, the probes)."""
    from benchlib.analysis.sustained import judge_runs, search_history
    from benchlib.store import load_campaign

    probes = _probe_runs(path, search.key)
    fresh = [m["run_id"] for m in probes.values() if m["run_id"] not in verdicts]
    if fresh:
        judged = judge_runs(load_campaign(path, failed=True, only=fresh))
        verdicts.update({r["run_id"]: r for r in judged.to_dict("records")})
    rows = pd.DataFrame([verdicts[m["run_id"]] for m in probes.values() if m["run_id"] in verdicts])
    reps = campaign.search.repetitions
    for (rate, rep), m in sorted(probes.items()):  # first finish the rates already started
        v = verdicts.get(m["run_id"], {}).get("verdict")
        if v == "FAILED" and policy == "redo":
            return None, (rate, rep, m["run_id"]), probes
    for rate in sorted({r for r, _ in probes}):
        for rep in range(1, reps + 1):
            if (rate, rep) not in probes:
                return None, (rate, rep, None), probes
    history = search_history(rows) if not rows.empty else {}
    return history, None, probes


def _peak(path: Path, plan_so_far: list[PlannedRun], search: PlannedSearch) -> float | None:
    """The best mean TPS over thread counts of the search's cluster, settings and workload (stored runs)."""
    by_threads: dict[int, list[float]] = {}
    for r in plan_so_far:
        if (r.search or r.cluster != search.cluster or r.settings != search.settings
                or r.options.workload != search.workload):
            continue
        folder = path / r.run_id
        if (folder / "manifest.json").exists():
            m = read_manifest(folder)
            tps = (m.get("summary") or {}).get("tps")
            if m["status"] == "ok" and tps:
                by_threads.setdefault(r.options.threads, []).append(float(tps))
    return max((sum(v) / len(v) for v in by_threads.values()), default=None)


def _search_plan(campaign: CampaignSpec, peak: float):
    from benchlib.analysis.sustained import SearchPlan

    return SearchPlan(start=campaign.search.start * peak, step=campaign.search.step,
                      precision=campaign.search.precision)


def _search_needs_runs(campaign: CampaignSpec, search: PlannedSearch, path: Path, policy: str,
                       plan_so_far: list[PlannedRun]) -> bool:
    """Whether a search (resumed from its stored probes) has runs left to do: the lab is needed."""
    from benchlib.analysis.sustained import next_rate

    history, todo, probes = _search_state(campaign, search, path, policy, {})
    if todo is not None:
        return True
    peak = _peak(path, plan_so_far, search)
    if peak is None:
        return True  # _search says why it cannot start
    return len(probes) < campaign.search.max_runs and next_rate(history, _search_plan(campaign, peak)) is not None


def _search(lab: "Lab | None", campaign: CampaignSpec, search: PlannedSearch, path: Path, bar: _Progress,
            events: _Events, result: CampaignResult, before_run, on_interval, context: dict[str, Any],
            policy: str) -> dict[str, Any]:
    """Run one sustained-throughput search to its end (resuming from the probes already stored)."""
    from benchlib.analysis.sustained import bracket, next_rate

    label = f"{search.cluster} {search.workload} t{search.threads}" + "".join(
        f" {k}={v}" for k, v in search.settings.items())
    peak = _peak(path, result.plan, search)
    if peak is None:
        raise CampaignError(f"search {label}: no closed-loop run of this configuration succeeded, so there is no "
                            "peak throughput to start the search from", hint="rerun the campaign: failed runs are "
                                                                             "redone first")
    splan = _search_plan(campaign, peak)
    verdicts: dict[str, dict[str, Any]] = {}
    while True:
        history, todo, probes = _search_state(campaign, search, path, policy, verdicts)
        if todo is None:
            if len(probes) >= campaign.search.max_runs:
                bar.say(f"search {label}: stopped after {len(probes)} runs (search.max_runs)")
                break
            rate = next_rate(history, splan)
            if rate is None:
                break
            todo = (rate, 1, None)
        rate, rep, run_id = todo
        if lab is None:
            raise CampaignError("internal: a search needs the lab")
        index = int(run_id[:4]) if run_id else _next_index(path, result.plan)
        run = search.probe(campaign, rate, rep, index)
        if run.run_id not in {r.run_id for r in result.plan}:
            result.plan.append(run)
        bar.bar.total = len(result.plan)
        _one_run(lab, campaign, run, path, bar, events, result, before_run, on_interval, context,
                 k=len(result.plan), n=len(result.plan))
        _, _, after = _search_state(campaign, search, path, policy, verdicts)
        v = verdicts.get(run.run_id, {})
        events("search", search=search.key, rate=rate, repetition=rep, run_id=run.run_id,
               verdict=v.get("verdict"), reasons=v.get("reasons"))
        bar.say(f"search {label}: {rate} tps {v.get('verdict', '?')}"
                + (f" ({v['reasons']})" if v.get("reasons") else ""))
    low, high = bracket(history or {})
    row = {"search": search.key, "cluster": search.cluster, "workload": search.workload, "threads": search.threads,
           **search.settings, "peak_tps": peak, "sustained_tps": low, "first_failing_tps": high,
           "runs": len(probes)}
    events("search_done", **row)
    bar.say(f"search {label}: sustained {low if low is not None else 'none'} tps, fails at "
            f"{high if high is not None else '?'} (peak {peak:.0f})")
    return row


def _one_run(lab: "Lab", spec: CampaignSpec, run: PlannedRun, path: Path, bar: _Progress, events: _Events,
             result: CampaignResult, before_run, on_interval, context: dict[str, Any], *, k: int, n: int) -> None:
    folder = path / run.run_id
    if folder.exists():
        kept = _retire_failed(folder)
        events("retry", run_id=run.run_id, previous=str(kept.relative_to(path)))
    bar.start(k, n, run)
    _heal(lab, bar, events, result, before=run.run_id)
    if run.settings:
        lab.set(run.settings, cluster=run.cluster)
    if before_run:
        before_run(lab, run)
    writer = RunWriter(path, run.run_id, run.params, secrets=lab.secrets())
    hook = (lambda iv: on_interval(lab, run, iv)) if on_interval else None
    try:
        done = execute_run(lab, run.cluster, run.options, writer, warmup_s=spec.load.warmup_s, stall_s=spec.stall_s,
                           catch_up_timeout=spec.catch_up_timeout_s, on_interval=hook, on_second=bar.second,
                           context=context)
    except (BenchlibError, pymysql.MySQLError, OSError) as exc:
        if isinstance(exc, SecretRefusedError):
            writer.abandon()
            raise
        reason = exc.render() if isinstance(exc, BenchlibError) else f"{type(exc).__name__}: {exc}"
        done = writer.fail(f"ERROR: {reason}")
    except BaseException:
        writer.abandon()  # Ctrl-C: no half-written run
        raise
    manifest = read_manifest(done)
    result.ran.append(run.run_id)
    events("run", run_id=run.run_id, status=manifest["status"], reason=manifest.get("reason"))
    if manifest["status"] != "ok":
        bar.say(f"run {run.run_id} failed: {manifest['reason']}")
        _heal(lab, bar, events, result, after=run.run_id)
    bar.done()


def _heal(lab: "Lab", bar: _Progress, events: _Events, result: CampaignResult, **where: str) -> None:
    lab.refresh()
    if not lab.broken():
        return
    try:
        restarted = lab.heal(progress=lambda _: None)
    except BenchlibError as exc:
        raise CampaignError(f"the lab could not be healed ({', '.join(f'{k} {v}' for k, v in where.items())}): "
                            f"{exc.message}", hint="benchlib lab status shows the nodes; the campaign resumes "
                                                   "when rerun", detail=exc.detail) from None
    if restarted:
        result.healed += restarted
        events("heal", restarted=restarted, **where)
        bar.say(f"healed the lab: restarted {', '.join(restarted)}")
