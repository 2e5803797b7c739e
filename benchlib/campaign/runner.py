"""Run a campaign: every planned run on its lab, resumable, fault tolerant, with progress.

The story (``run_campaign``): claim the campaign folder (``benchlib.campaign.folder``), skip the
runs it already has, open the lab (the running one of that name, a new one, or a remote lab;
a load a previous start left running is stopped first), then for every run: heal what is down,
apply the run's settings, measure (``benchlib.campaign.run.execute_run``). Then adaptive
repetitions (``adaptive``) and sustained-throughput searches (``search``) if the spec asks.

A run that fails (a node down or silent, sysbench dying, a hung cluster) is kept as failed with
its reason, the lab is healed, and the campaign goes on. Rerunning a campaign skips the runs it
has and redoes the failed ones (``failed = "keep"`` keeps them). Ctrl-C stops sysbench and
sampling, leaves no half-written run (only a temporary folder that readers ignore and the next
start removes), takes down a lab the campaign brought up, and the campaign resumes cleanly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import pandas as pd
import pymysql
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from benchlib.campaign.adaptive import next_round
from benchlib.campaign.folder import CampaignError, CampaignFolder
from benchlib.campaign.progress import Progress
from benchlib.campaign.run import execute_run
from benchlib.campaign.search import SearchDriver
from benchlib.campaign.plan import PlannedRun, plan, plan_searches
from benchlib.campaign.spec import CampaignSpec, load_campaign_spec
from benchlib.environment import git_revision
from benchlib.errors import BenchlibError, DiskFullError, LabSpecMismatch, SpecError, disk_full
from benchlib.labs import AnyLabSpec, open_lab
from benchlib.specs import format_validation
from benchlib.store import RunWriter, SecretRefusedError, has_run, read_manifest

if TYPE_CHECKING:
    from benchlib.lab.base import Lab
    from benchlib.sysbench.output import Interval

__all__ = ["CampaignError", "CampaignParameters", "CampaignResult", "campaign_dir", "run_campaign"]


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
                            detail=format_validation(exc, "parameters", "docs/campaigns/spec.md")) from None


@dataclass
class CampaignResult:
    path: Path
    plan: list[PlannedRun]
    skipped: list[str] = field(default_factory=list)  # complete before this start
    ran: list[str] = field(default_factory=list)
    healed: list[str] = field(default_factory=list)
    searches: list[dict[str, object]] = field(default_factory=list)  # sustained throughput: one row per search
    adaptive: str = ""  # what the adaptive mode stopped on

    def table(self) -> pd.DataFrame:
        """One row per planned run: status, reason, mean TPS, p-th percentile latency, catch-up."""
        rows = []
        for run in self.plan:
            row: dict[str, object] = {"run_id": run.run_id, "cluster": run.cluster, "workload": run.options.workload,
                                   "threads": run.options.threads, "rate": run.options.rate, **run.settings,
                                   "status": "missing"}
            folder = self.path / run.run_id
            if has_run(folder):
                m = read_manifest(folder)
                row.update(status=m.status, reason=m.reason, tps=m.summary.get("tps"),
                           lat_pctl_ms=m.summary.get("lat_pctl_ms"), catch_up_s=m.catch_up_s)
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def counts(self) -> dict[str, int]:
        return self.table()["status"].value_counts().to_dict()


#: what every run of a campaign samples beyond lag and replication state (campaign.json says it: notebooks and
#: reports that need them look for it)
METRICS = ("server_counters", "process", "host")


#: seconds a campaign start watches the host's CPU for noise before its first run (events.jsonl: host_noise)
NOISE_S = 1.5


def campaign_dir(spec: CampaignSpec, runs_dir: str | Path) -> Path:
    return Path(runs_dir) / spec.name


@dataclass
class CampaignSession:
    """What the runs of one campaign start share: its spec, folder, lab, progress, result and hooks."""

    campaign: CampaignSpec
    lab_spec: AnyLabSpec
    folder: CampaignFolder
    progress: Progress
    result: CampaignResult
    policy: str
    before_run: Callable[["Lab", PlannedRun], None] | None = None
    on_interval: Callable[["Lab", PlannedRun, "Interval"], None] | None = None
    lab: "Lab | None" = None
    owned: bool = False  # this campaign brought the lab up (and takes it down)
    pending: list[PlannedRun] = field(default_factory=list)  # disturbed runs to redo before their round closes

    def context(self) -> dict[str, JsonValue]:
        """What every run's manifest records of its campaign (the host facts are in campaign.json, once)."""
        return {"campaign": {"name": self.campaign.name, "spec": self.campaign.model_dump(mode="json"),
                             "lab_spec": self.lab_spec.model_dump(mode="json")},
                "git_revision": git_revision()}

    def need_lab(self) -> "Lab":
        """The campaign's lab, opened on first use (see ``open_lab``); a load a previous start left running
        is stopped before anything is measured."""
        if self.lab is not None:
            return self.lab
        try:
            self.lab, self.owned = open_lab(self.lab_spec, bring_up=True, progress=self.progress.say)
        except LabSpecMismatch:
            raise CampaignError(f"lab {self.lab_spec.name} is up with a different spec than the campaign's",
                                hint=f"benchlib lab down {self.lab_spec.name} (the campaign brings it up as "
                                     "specified), or point the campaign at the running lab's spec") from None
        self.progress.say(f"using {self.lab.health.describe()}")
        self.host_noise()
        stopped = self.lab.hooks.load_driver().stop_strays()
        if stopped:
            self.folder.event("stray_load", stopped=stopped)
            self.progress.say(f"stopped a load a previous start left running: {', '.join(stopped)}")
        return self.lab

    def host_noise(self) -> None:
        """Measure this host's noise for this start (steal, background CPU outside the lab, fsync latency in the
        campaign folder) into the events (the report's header says it); a noisy host is said at once."""
        from benchlib.analysis.interference import noise_words
        from benchlib.sampling.noise import measure

        where = getattr(self.lab, "dir", None)  # a local lab: its servers' command lines hold its directory
        noise = measure(self.folder.path, NOISE_S, markers=(str(where),) if where else ())
        self.folder.event("host_noise", **noise)
        for what, todo, bad in noise_words(noise):
            if bad:
                self.progress.say(f"noisy host: {what}: {todo}")

    def close(self, keep_lab: bool) -> None:
        if self.lab is None:
            return
        if self.owned and not keep_lab:
            self.lab.close(down=True)
        else:
            self.lab.close()

    def one_run(self, run: PlannedRun, k: int, n: int) -> None:
        lab = self.need_lab()
        if self.folder.has(run.run_id) or (self.folder.path / run.run_id).exists():
            kept = self.folder.retire(run.run_id)
            self.folder.event("retry", run_id=run.run_id, previous=str(kept.relative_to(self.folder.path)))
        self.progress.start(k, n, run)
        self.heal(before=run.run_id)
        if run.settings:
            lab.tuning.set(run.settings, cluster=run.cluster)
        if self.before_run:
            self.before_run(lab, run)
        writer = RunWriter(self.folder.path, run.run_id, run.params, secrets=lab.hooks.secrets())
        on_interval = self.on_interval
        hook = (lambda iv: on_interval(lab, run, iv)) if on_interval is not None else None
        spec = self.campaign
        guard = spec.interference
        redos = self.folder.attempts_of(run.run_id, status="disturbed")
        disturbed_above = guard.redo_above if guard.redo_above < 1 and not run.search else None
        try:
            done = execute_run(lab, run.cluster, run.options, writer, warmup_s=spec.load.warmup_s,
                               stall_s=spec.stall_s, catch_up_timeout=spec.catch_up_timeout_s,
                               on_interval=hook, on_second=self.progress.second, context=self.context(),
                               disturbed_above=disturbed_above, axes=run.axes)
        except CampaignError:
            raise  # a lab that could not be healed: stop rather than measure a broken lab
        except (BenchlibError, pymysql.MySQLError, OSError) as exc:
            if isinstance(exc, SecretRefusedError) or disk_full(exc):
                writer.abandon()  # a full disk: the half-written run goes, the campaign stops (run_campaign says so)
                raise
            reason = exc.render() if isinstance(exc, BenchlibError) else f"{type(exc).__name__}: {exc}"
            try:
                done = writer.fail(f"ERROR: {reason}")
            except BaseException:
                writer.abandon()
                raise
        except BaseException:
            writer.abandon()  # Ctrl-C: no half-written run
            raise
        manifest = read_manifest(done)
        self.result.ran.append(run.run_id)
        self.folder.event("run", run_id=run.run_id, status=manifest.status, reason=manifest.reason)
        if manifest.status == "disturbed":
            again = redos < guard.max_redos
            self.folder.event("disturbed", run_id=run.run_id, reason=manifest.reason, attempt=redos + 1,
                              interference=manifest.interference, redo=again)
            self.progress.say(f"run {run.run_id} disturbed: {(manifest.reason or '').removeprefix('DISTURBED: ')}; " + (
                "redone before its round closes" if again else
                f"left out after {redos + 1} attempts (its round is one run short; rerunning the campaign tries "
                "again)"))
            if again:
                self.pending.append(run)
        elif not manifest.ok:
            self.progress.say(f"run {run.run_id} failed: {manifest.reason}")
            self.heal(after=run.run_id)
        self.progress.done()

    def redo_disturbed(self, before: PlannedRun | None = None) -> None:
        """Run again the disturbed runs whose round closes before ``before`` (every one when None): a redo comes at
        the end of its round, after the runs that were planned in it, so the interference has time to pass and the
        round stays a complete block. A redo that is disturbed again is queued again (``max_redos`` at most)."""
        while True:
            due = [r for r in self.pending if before is None or r.repetition < before.repetition]
            if not due:
                return
            run = due[0]
            self.pending.remove(run)
            plan = self.result.plan
            self.progress.one_more()
            self.one_run(run, plan.index(run) + 1 if run in plan else len(plan), len(plan))

    def heal(self, **where: str) -> None:
        lab = self.need_lab()
        lab.tuning.refresh()
        if not lab.health.broken():
            return
        try:
            restarted = lab.health.heal(progress=lambda _: None)
        except BenchlibError as exc:
            raise CampaignError(f"the lab could not be healed ({', '.join(f'{k} {v}' for k, v in where.items())}): "
                                f"{exc.message}", hint="benchlib lab status shows the nodes; the campaign resumes "
                                                       "when rerun", detail=exc.detail) from None
        if restarted:
            self.result.healed += restarted
            self.folder.event("heal", restarted=restarted, **where)
            self.progress.say(f"healed the lab: restarted {', '.join(restarted)}")


def _with_defaults(old: dict[str, Any]) -> dict[str, Any]:
    """A campaign folder's recorded campaign spec with the fields added since it was written at their defaults (a
    campaign started before ``load.read_threads`` existed resumes)."""
    try:
        return {**old, "campaign": CampaignSpec.model_validate(old.get("campaign") or {}).model_dump(mode="json")}
    except ValidationError:
        return old


def run_campaign(spec: str | Path, *, runs_dir: str | Path = "runs", failed: str = "spec",
                 keep_lab: bool = False, progress: str = "auto",
                 before_run: Callable[["Lab", PlannedRun], None] | None = None,
                 on_interval: Callable[["Lab", PlannedRun, "Interval"], None] | None = None) -> CampaignResult:
    """Run (or resume) the campaign of the spec file ``spec``; returns what it did and where the runs are.

    ``before_run`` and ``on_interval`` are hooks (fault injection in tests, custom displays)."""
    started = time.monotonic()  # the campaign's time budget counts from here (budget_s)
    params = CampaignParameters.check(spec=str(spec), runs_dir=str(runs_dir), failed=failed, keep_lab=keep_lab,
                                      progress=progress)
    campaign, lab_spec = load_campaign_spec(params.spec)
    runs = plan(campaign, lab_spec, params.spec)
    searches = plan_searches(campaign, runs, params.spec)
    policy = campaign.failed if params.failed == "spec" else params.failed
    folder = CampaignFolder(campaign_dir(campaign, params.runs_dir).resolve())
    try:
        folder.claim({"campaign": campaign.model_dump(mode="json"), "lab": lab_spec.model_dump(mode="json"),
                      "plan": [{"run_id": r.run_id, **r.params} for r in runs]}, recorded={"metrics": list(METRICS)},
                     upgrade=_with_defaults)
    except OSError as exc:
        if not disk_full(exc):
            raise
        raise DiskFullError.of(folder.path, f"campaign {campaign.name} did not start") from None
    result = CampaignResult(folder.path, runs)
    todo: list[PlannedRun] = []
    for run in runs:
        m = folder.manifest(run.run_id)
        if m is not None and (m.ok or policy == "keep"):
            result.skipped.append(run.run_id)
        else:
            todo.append(run)
    bar = Progress(params.progress, len(runs), len(result.skipped), campaign.name)
    session = CampaignSession(campaign, lab_spec, folder, bar, result, policy, before_run, on_interval)
    try:
        if result.skipped:
            bar.say(f"resuming {campaign.name}: {len(result.skipped)} of {len(runs)} runs already done")
        if todo:
            lab = session.need_lab()
            folder.event("start", lab=lab.name, todo=len(todo), done=len(result.skipped), owned_lab=session.owned)
        for run in todo:
            session.redo_disturbed(before=run)
            session.one_run(run, runs.index(run) + 1, len(runs))
        session.redo_disturbed()
        while campaign.adaptive:
            step = next_round(campaign, folder, result.plan, elapsed_s=time.monotonic() - started)
            if step.stop:
                result.adaptive = step.reason
                folder.event("adaptive_stop", rounds=step.rounds, reason=step.reason, open=step.open)
                bar.say(f"adaptive: stopped, {step.reason}")
                break
            folder.event("adaptive", runs=[r.run_id for r in step.runs], reason=step.reason, open=step.open)
            bar.say(f"adaptive: {len(step.runs)} more runs, {step.reason}")
            result.plan = result.plan + step.runs
            bar.total(len(result.plan))
            for run in step.runs:
                session.one_run(run, result.plan.index(run) + 1, len(result.plan))
            session.redo_disturbed()
        for search in searches:
            driver = SearchDriver(campaign, search, folder, policy, result.plan, bar, session.one_run)
            if session.lab is None and driver.needs_runs():
                session.need_lab()
            result.searches.append(driver.run())
        folder.event("end", **result.counts)
    except OSError as exc:
        if not disk_full(exc):
            raise
        stored = len(result.skipped) + len(result.ran)
        raise DiskFullError.of(folder.path, f"campaign {campaign.name} stopped; the half-written run was removed "
                                            f"and the {stored} complete runs of {len(runs)} are kept") from None
    except KeyboardInterrupt:
        folder.event("interrupted", ran=len(result.ran))
        bar.say(f"interrupted: {len(result.skipped) + len(result.ran)} of {len(runs)} runs are stored; "
                "rerun the campaign to resume")
        raise
    finally:
        bar.close()
        session.close(keep_lab)
        folder.release()
    return result
