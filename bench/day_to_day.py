"""How much a configuration's campaign mean moves from one campaign to the next (the day-to-day variation that
``benchlib compare`` counts, ``benchlib.analysis.across``): DerSimonian-Laird's estimate over every configuration
the campaigns under the given folders measured more than once, then the same with each campaign left out in turn
(how much the estimate rests on one campaign). ``DAY_COV`` in benchlib.analysis.across is this script's figure over
data/campaigns.

    python bench/day_to_day.py [FOLDER ...]        (default: data/campaigns)
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchlib.analysis.across import DAY_COV, day_to_day, match_keys
from benchlib.analysis.runs import throughput_runs
from benchlib.run_index import RunIndex


def main(folders: list[str]) -> None:
    runs = throughput_runs(RunIndex(folders).sql("SELECT * FROM runs WHERE status = 'ok'"))
    keys = [k for k in match_keys(runs) if not k.startswith(("campaign", "host_"))]
    tau, configs, campaigns = day_to_day(runs, keys)
    print(f"campaigns: {runs.campaign_path.nunique()}, ok runs without a fault or a rate search: {len(runs)}")
    print(f"matched on: {', '.join(keys)}")
    if tau is None:
        print("no configuration measured in two campaigns: nothing to estimate")
        return
    print(f"day-to-day variation: {tau:.2%} of a configuration's campaign mean "
          f"({configs} configurations measured again, across {campaigns} campaigns); benchlib's DAY_COV: {DAY_COV:.1%}")
    for left in sorted(runs.campaign_path.unique()):
        t, c, k = day_to_day(runs[runs.campaign_path != left], keys)
        shown = "-" if t is None else f"{t:.2%}"
        print(f"  without {Path(left).name:<20} {shown:>7}  ({c} configurations, {k} campaigns)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["data/campaigns"])
