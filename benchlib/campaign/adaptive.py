"""Adaptive repetitions: whole rounds added until every headline comparison is settled, the budget is spent, or the
cap.

After the planned rounds, the campaign's analysis says which headline comparisons against the baseline (the
throughput ratios) are not settled yet: their verdict is INCONCLUSIVE or, with ``settle_within``, their 95% interval
is wider than that (``benchlib.analysis.comparisons.settled``); in a campaign without a baseline, which configurations
have a 95% interval wider than ``target_halfwidth``. While any is, the campaign runs one more round: every
configuration again, baseline included, shuffled, so the rounds stay complete blocks for the two-way model. It stops
on the first of three rules, and says which: every headline comparison settled; another round would not fit in
``budget_s`` (its time estimated from each configuration's last run); ``max_repetitions`` rounds. Runs an earlier
start stored are taken into account, never redone; a round it left incomplete is completed first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchlib.campaign.folder import CampaignFolder
from benchlib.campaign.ids import RunId
from benchlib.campaign.plan import PlannedRun
from benchlib.campaign.spec import CampaignSpec

__all__ = ["Step", "next_round"]


@dataclass
class Step:
    """What the adaptive mode decided after the runs so far: the runs to add (none: it stops) and why."""

    runs: list[PlannedRun]
    rounds: int  # complete-or-started rounds so far
    open: list[str] = field(default_factory=list)  # what is not settled yet
    reason: str = ""

    @property
    def stop(self) -> bool:
        return not self.runs


METRIC = {"tps": "throughput", "lat_pctl_ms": "latency"}


def _listed(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def _rebuild(plan_so_far: list[PlannedRun], folder: CampaignFolder) -> None:
    """``plan_so_far`` gains the extra runs an earlier start stored (rebuilt from their configuration)."""
    known = {r.run_id: r for r in plan_so_far}
    for name in set(folder.stored()) - set(known):
        rid = RunId.parse(name)
        base = next((r for r in plan_so_far if r.config_key == rid.config and not r.search), None)
        if base is not None:
            known[name] = base.again(rid.index, rid.repetition)
    plan_so_far[:] = sorted(known.values(), key=lambda r: r.index)


def _open(folder: CampaignFolder) -> tuple[list[str], str]:
    """What is not settled yet, and what was judged (headline comparisons, or configurations without a baseline)."""
    from benchlib.analysis.campaign import analyze, headline_rows, settled
    from benchlib.analysis.views import label

    a = analyze(folder.path)  # its margin and target are the campaign.json's: this spec's
    c = headline_rows(a.comparisons)
    if not c.empty:
        keys = [k for k in a.param_columns if k in c.columns and k not in ("topology", "config")
                and (k == "cluster" or c[k].nunique(dropna=False) > 1)]  # what tells the open ones apart
        done = settled(c, a.record.settle_within)
        return [f"{label(r, keys)} {METRIC.get(r.metric, r.metric)}" for (_, r), ok in zip(c.iterrows(), done)
                if not ok], "headline comparison"
    if a.configs.empty:
        return [], "configuration"
    keys = [k for k in a.param_columns if k in a.configs.columns and k not in ("topology", "config")]
    return [label(r, keys) for _, r in a.configs.iterrows() if r.verdict == "ADD_RUNS"], "configuration"


METRIC.update(read_tps="readers' throughput")


def round_seconds(folder: CampaignFolder, configs: dict[str, PlannedRun]) -> float | None:
    """How long one more round would take: per configuration, its last stored run of the usual length (start to
    end: dataset check, sync, load, catch-up, audit, writing), summed, plus 5%. None when a configuration has no
    such run yet."""
    from benchlib.store import read_manifest

    last: dict[str, tuple[int, float]] = {}
    for name in folder.stored():
        rid = RunId.parse(name)
        run = configs.get(rid.config)
        if run is None:
            continue
        m = read_manifest(folder.path / name)
        if (m.sysbench or {}).get("time_s") != (run.usual_time_s or run.options.time_s):
            continue  # a long stability run says nothing of a usual one
        took = _seconds(m.ended_utc) - _seconds(m.started_utc)
        if rid.index > last.get(rid.config, (-1, 0.0))[0]:
            last[rid.config] = (rid.index, took)
    if set(last) != set(configs):
        return None
    return 1.05 * sum(t for _, t in last.values())


def _seconds(utc: str) -> float:
    import calendar
    import time

    whole, _, frac = utc.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + (float(f"0.{frac}") if frac else 0.0)


def next_round(campaign: CampaignSpec, folder: CampaignFolder, plan_so_far: list[PlannedRun],
               elapsed_s: float | None = None) -> Step:
    """The next step of the adaptive mode after the runs of ``plan_so_far`` (which gains the runs an earlier start
    stored): a whole round to run, or a stop with its reason. ``elapsed_s``: the campaign's time so far, for
    ``budget_s``."""
    _rebuild(plan_so_far, folder)
    measured = [r for r in plan_so_far if not r.search]
    if not measured:
        return Step([], 0, reason="no runs")
    configs: dict[str, PlannedRun] = {}
    for r in measured:
        configs.setdefault(r.config_key, r)
    rounds = max(r.repetition for r in measured)
    have = {(r.config_key, r.repetition) for r in measured}
    index = max(r.index for r in plan_so_far)
    rng = random.Random(campaign.seed * 1_000_003 + rounds)
    missing = [(k, rep) for rep in range(1, rounds + 1) for k in configs if (k, rep) not in have]
    if missing:  # a round an earlier start left incomplete: complete it first
        rng.shuffle(missing)
        runs = [configs[k].again(index + i, rep) for i, (k, rep) in enumerate(missing, start=1)]
        return Step(runs, rounds, reason=f"completing round(s) {sorted({rep for _, rep in missing})}")
    still, what = _open(folder)
    within = f" (95% interval within ±{campaign.settle_within:.0%})" if campaign.settle_within and \
        what.endswith("comparison") else ""
    if not still:
        return Step([], rounds, reason=f"every {what} settled{within} after {rounds} rounds")
    many = f"{len(still)} {what}{'s' if len(still) > 1 else ''}"
    if rounds >= campaign.max_repetitions:
        return Step([], rounds, still, f"cap of {campaign.max_repetitions} rounds reached; {many} still open: "
                                       f"{_listed(still)}")
    if campaign.budget_s is not None and elapsed_s is not None:
        need = round_seconds(folder, configs)
        if need is not None and elapsed_s + need > campaign.budget_s:
            return Step([], rounds, still, f"time budget: another round (about {need:.0f} s) would not fit in the "
                                           f"{campaign.budget_s:.0f} s budget ({elapsed_s:.0f} s used) after {rounds} "
                                           f"rounds; {many} still open: {_listed(still)}")
    order = list(configs)
    rng.shuffle(order)
    last = max(measured, key=lambda r: r.index).config_key
    if len(order) > 1 and order[0] == last:  # never the same configuration twice in a row
        order[0], order[1] = order[1], order[0]
    runs = [configs[k].again(index + i, rounds + 1) for i, k in enumerate(order, start=1)]
    return Step(runs, rounds, still, f"round {rounds + 1}: {len(still)} {what}{'s' if len(still) > 1 else ''} "
                                     f"still open ({_listed(still)})")
