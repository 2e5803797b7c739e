"""Adaptive repetitions: whole rounds added until every comparison is settled, or the cap.

After the planned rounds, the campaign's analysis says which comparisons against the baseline are still
INCONCLUSIVE (or, in a campaign without a baseline, which configurations have a 95% interval wider than
``target_halfwidth``). While any is, the campaign runs one more round: every configuration again, baseline
included, shuffled, so the rounds stay complete blocks for the two-way model. It stops when nothing is open
(every verdict FASTER, SLOWER, EQUIVALENT or SIGNIFICANT_BUT_SMALL) or at ``max_repetitions`` rounds, and says
which. Runs an earlier start stored are taken into account, never redone; a round it left incomplete is
completed first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchlib.campaign.folder import CampaignFolder
from benchlib.campaign.ids import RunId
from benchlib.campaign.spec import CampaignSpec, PlannedRun

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


def _open(campaign: CampaignSpec, folder: CampaignFolder) -> tuple[list[str], str]:
    """What is not settled yet, and what was judged (comparisons, or configurations without a baseline)."""
    from benchlib.analysis.campaign import analyze
    from benchlib.analysis.views import label

    a = analyze(folder.path, target=campaign.target_halfwidth, margin=campaign.margin)
    c = a.comparisons
    if not c.empty:
        keys = [k for k in a.param_columns if k in c.columns and k not in ("topology", "config")]
        return [f"{label(r, keys)} {METRIC.get(r.metric, r.metric)}" for _, r in c.iterrows() if r.verdict == "INCONCLUSIVE"], "comparison"
    if a.configs.empty:
        return [], "configuration"
    keys = [k for k in a.param_columns if k in a.configs.columns and k not in ("topology", "config")]
    return [label(r, keys) for _, r in a.configs.iterrows() if r.verdict == "ADD_RUNS"], "configuration"


def next_round(campaign: CampaignSpec, folder: CampaignFolder, plan_so_far: list[PlannedRun]) -> Step:
    """The next step of the adaptive mode after the runs of ``plan_so_far`` (which gains the runs an earlier start
    stored): a whole round to run, or a stop with its reason."""
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
    still, what = _open(campaign, folder)
    if not still:
        return Step([], rounds, reason=f"every {what} settled after {rounds} rounds")
    if rounds >= campaign.max_repetitions:
        return Step([], rounds, still, f"cap of {campaign.max_repetitions} rounds reached; {len(still)} "
                                       f"{what}{'s' if len(still) > 1 else ''} still open: {_listed(still)}")
    order = list(configs)
    rng.shuffle(order)
    last = max(measured, key=lambda r: r.index).config_key
    if len(order) > 1 and order[0] == last:  # never the same configuration twice in a row
        order[0], order[1] = order[1], order[0]
    runs = [configs[k].again(index + i, rounds + 1) for i, k in enumerate(order, start=1)]
    return Step(runs, rounds, still, f"round {rounds + 1}: {len(still)} {what}{'s' if len(still) > 1 else ''} "
                                     f"still open ({_listed(still)})")
