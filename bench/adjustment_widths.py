"""The ratios' 95% interval widths with and without the adjustment for the CPU lost to others, on recorded campaigns.

For each campaign folder (default: every recorded campaign in data/campaigns/ with repetition rounds and a
baseline), analyses its throughput ratios twice, with the two-way model's covariate (``lost_cpu``: steal plus the CPU of processes
outside the lab, where safe and narrower) and without, and prints per campaign: how many ratios were adjusted, the
median and widest relative 95% half-width both ways, their quotient (adjusted / unadjusted: below 1 is narrower),
how far the adjustment moved the ratios, and the campaign's CPU lost (median, max). The demo-size recordings:
``quick`` (the main job on a quiet host), ``quick-disturbed`` (the same with a CPU hog in half of round 2: those
runs redone) and ``quick-busy`` (a light hog, up to 7% of the CPU, on a random half of the runs: under the redo
threshold, what the adjustment is for); bench/disturbed_campaign.py records them.

    python bench/adjustment_widths.py [CAMPAIGN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import numpy as np  # noqa: E402

from benchlib.analysis.campaign import analyze  # noqa: E402
from benchlib.errors import BenchlibError  # noqa: E402


def main() -> None:
    folders = [Path(p) for p in sys.argv[1:]] or sorted(p for p in (ROOT / "data" / "campaigns").iterdir()
                                                         if (p / "campaign.json").exists())
    print(f"{'campaign':22} {'ratios':>6} {'adjusted':>8} {'median ±':>9} {'(unadj)':>8} {'widest ±':>9} "
          f"{'(unadj)':>8} {'quotient':>8} {'moved med/max':>14} {'lost CPU med/max':>17}")
    for folder in folders:
        try:
            adj = analyze(folder)
            plain = analyze(folder, adjust=False)
        except BenchlibError as exc:
            print(f"{folder.name:22} skipped: {exc.message}")
            continue
        c, p = adj.comparisons, plain.comparisons
        if c.empty or "method" not in c or not (c.method == "blocks").any():
            continue  # no rounds or no baseline: nothing the covariate enters
        c, p = c[(c.method == "blocks") & (c.metric == "tps")], p[(p.method == "blocks") & (p.metric == "tps")]
        if c.empty:
            continue
        w, w0 = c.half_width_rel.replace(np.inf, np.nan), p.half_width_rel.replace(np.inf, np.nan)
        done = c.adjusted_for.astype(str) != ""
        moved = (c.ratio / c.unadjusted - 1).abs()[done]
        lost = adj.runs.lost_cpu.dropna() if "lost_cpu" in adj.runs else []
        print(f"{folder.name:22} {len(c):6d} {int(done.sum()):8d} {w.median():9.1%} {w0.median():8.1%} "
              f"{w.max():9.1%} {w0.max():8.1%} {w.median() / w0.median():8.3f} "
              f"{(f'{moved.median():.1%}/{moved.max():.1%}' if len(moved) else '-'):>14} "
              f"{(f'{np.median(lost):.1%}/{np.max(lost):.1%}' if len(lost) else '-'):>17}")


if __name__ == "__main__":
    main()
