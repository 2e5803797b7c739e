"""The sustained-throughput search of one configuration: open-loop runs swept up, then bisected (spec F).

A search starts from the configuration's peak (its best closed-loop mean TPS over thread counts),
runs open-loop rates (``search.repetitions`` runs each) judged by ``benchlib.analysis.sustained``,
and ends with the bracket [highest sustained rate, lowest failing rate] within ``search.precision``.
It resumes from the runs an earlier start stored: the rates already started are finished first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from benchlib.campaign.folder import CampaignError, CampaignFolder
from benchlib.campaign.ids import RunId
from benchlib.campaign.progress import Progress
from benchlib.manifest import Manifest
from benchlib.campaign.plan import PlannedRun, PlannedSearch
from benchlib.campaign.spec import CampaignSpec

__all__ = ["SearchDriver"]


@dataclass
class SearchDriver:
    campaign: CampaignSpec
    search: PlannedSearch
    folder: CampaignFolder
    policy: str  # redo | keep: what a failed probe run of an earlier start gets
    plan: list[PlannedRun]  # the campaign's runs so far (probe runs are appended)
    progress: Progress
    run_one: Callable[[PlannedRun, int, int], None]  # measure one run (k of n)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        s = self.search
        return f"{s.cluster} {s.workload} t{s.threads}" + "".join(f" {k}={v}" for k, v in s.settings.items())

    def _probes(self) -> dict[tuple[int, int], Manifest]:
        """The stored runs of this search: (rate, repetition) -> manifest."""
        out: dict[tuple[int, int], Manifest] = {}
        for m in self.folder.manifests().values():
            p = m.params
            rate, repetition = p.get("rate"), p.get("repetition")
            if p.get("search") == self.search.key and isinstance(rate, (int, float)) and isinstance(repetition, int):
                out[(int(rate), repetition)] = m
        return out

    def _state(self):
        """(history {rate: accepted}, the (rate, repetition, run_id or None) to run next or None, the probes)."""
        from benchlib.analysis.sustained import judge_runs, search_history
        from benchlib.store import load_campaign

        probes = self._probes()
        fresh = [m.run_id for m in probes.values() if m.run_id not in self.verdicts]
        if fresh:
            judged = judge_runs(load_campaign(self.folder.path, failed=True, only=fresh))
            self.verdicts.update({r["run_id"]: r for r in judged.to_dict("records")})
        rows = pd.DataFrame([self.verdicts[m.run_id] for m in probes.values() if m.run_id in self.verdicts])
        for (rate, rep), m in sorted(probes.items()):  # first finish the rates already started
            if self.verdicts.get(m.run_id, {}).get("verdict") == "FAILED" and self.policy == "redo":
                return None, (rate, rep, m.run_id), probes
        for rate in sorted({r for r, _ in probes}):
            for rep in range(1, self.campaign.search.repetitions + 1):
                if (rate, rep) not in probes:
                    return None, (rate, rep, None), probes
        history = search_history(rows) if not rows.empty else {}
        return history, None, probes

    def peak(self) -> float | None:
        """The best mean TPS over thread counts of the search's cluster, settings and workload (stored runs)."""
        s = self.search
        by_threads: dict[int, list[float]] = {}
        for r in self.plan:
            if r.search or r.cluster != s.cluster or r.settings != s.settings or r.options.workload != s.workload:
                continue
            m = self.folder.manifest(r.run_id)
            tps = m.summary.get("tps") if m else None
            if m and m.ok and isinstance(tps, (int, float)) and tps:
                by_threads.setdefault(r.options.threads, []).append(float(tps))
        return max((sum(v) / len(v) for v in by_threads.values()), default=None)

    def _plan(self, peak: float):
        from benchlib.analysis.sustained import SearchPlan

        c = self.campaign.search
        return SearchPlan(start=c.start * peak, step=c.step, precision=c.precision)

    def needs_runs(self) -> bool:
        """Whether the search (resumed from its stored probes) has runs left to do: the lab is needed."""
        from benchlib.analysis.sustained import next_rate

        history, todo, probes = self._state()
        if todo is not None:
            return True
        peak = self.peak()
        if peak is None:
            return True  # run() says why it cannot start
        return len(probes) < self.campaign.search.max_runs and next_rate(history, self._plan(peak)) is not None

    def run(self) -> dict[str, Any]:
        """Run the search to its end; returns its row (peak, sustained, first failing rate, runs)."""
        from benchlib.analysis.sustained import bracket, next_rate

        peak = self.peak()
        if peak is None:
            raise CampaignError(f"search {self.label}: no closed-loop run of this configuration succeeded, so there "
                                "is no peak throughput to start the search from",
                                hint="rerun the campaign: failed runs are redone first")
        splan = self._plan(peak)
        while True:
            history, todo, probes = self._state()
            if todo is None:
                if len(probes) >= self.campaign.search.max_runs:
                    self.progress.say(f"search {self.label}: stopped after {len(probes)} runs (search.max_runs)")
                    break
                rate = next_rate(history, splan)
                if rate is None:
                    break
                todo = (rate, 1, None)
            rate, rep, run_id = todo
            index = RunId.parse(run_id).index if run_id else self.folder.next_index([r.index for r in self.plan])
            run = self.search.probe(self.campaign, rate, rep, index)
            if run.run_id not in {r.run_id for r in self.plan}:
                self.plan.append(run)
            self.progress.total(len(self.plan))
            self.run_one(run, len(self.plan), len(self.plan))
            self._state()
            v = self.verdicts.get(run.run_id, {})
            self.folder.event("search", search=self.search.key, rate=rate, repetition=rep, run_id=run.run_id,
                              verdict=v.get("verdict"), reasons=v.get("reasons"))
            self.progress.say(f"search {self.label}: {rate} tps {v.get('verdict', '?')}"
                              + (f" ({v['reasons']})" if v.get("reasons") else ""))
        low, high = bracket(history or {})
        s = self.search
        row = {"search": s.key, "cluster": s.cluster, "workload": s.workload, "threads": s.threads, **s.settings,
               "peak_tps": peak, "sustained_tps": low, "first_failing_tps": high, "runs": len(probes)}
        self.folder.event("search_done", **row)
        self.progress.say(f"search {self.label}: sustained {low if low is not None else 'none'} tps, fails at "
                          f"{high if high is not None else '?'} (peak {peak:.0f})")
        return row
