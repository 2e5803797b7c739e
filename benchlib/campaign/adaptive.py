"""Adaptive repetitions: more runs for configurations whose runs do not agree yet, up to a cap.

After the planned runs, the campaign's analysis says which configurations need more runs
(``ADD_RUNS``: a 95% interval wider than ``target_halfwidth``); they get them, shuffled, up to
``max_repetitions`` each. Runs an earlier start already stored are taken into account, never redone.
"""

from __future__ import annotations

import random

from benchlib.campaign.folder import CampaignFolder
from benchlib.campaign.ids import RunId
from benchlib.campaign.spec import CampaignSpec, PlannedRun

__all__ = ["more_runs"]


def more_runs(campaign: CampaignSpec, folder: CampaignFolder, plan_so_far: list[PlannedRun]) -> list[PlannedRun]:
    """Extra repetitions for the configurations whose runs do not agree (ADD_RUNS), up to the cap;
    ``plan_so_far`` gains the extra runs an earlier start stored (rebuilt from their configuration)."""
    from benchlib.analysis.campaign import analyze

    known = {r.run_id: r for r in plan_so_far}
    for name in set(folder.stored()) - set(known):  # extra runs of an earlier start
        rid = RunId.parse(name)
        base = next((r for r in plan_so_far if r.config_key == rid.config and not r.search), None)
        if base is not None:
            known[name] = base.again(rid.index, rid.repetition)
    plan_so_far[:] = sorted(known.values(), key=lambda r: r.index)
    configs = analyze(folder.path, target=campaign.target_halfwidth).configs
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
            extra.append((mine[0], max(r.repetition for r in mine) + 1 + k))
    random.Random(campaign.seed + len(plan_so_far)).shuffle(extra)
    out = []
    for base, rep in extra:
        index += 1
        out.append(base.again(index, rep))
    return out
