"""A configuration's history: its measure in every campaign that ran it, in the order the campaigns were made, with
the change points where its level moved (what asv, conbench and Apache Otava do for a benchmark's history).

    from benchlib.analysis.history import history
    h = history(RunIndex(["runs", "data/campaigns"]).runs(system="galera", threads=16, workload="oltp_read_write"))
    h.points       # per campaign: when, runs, mean, 95% interval
    h.changes      # where the level moved: the campaign it moved at, the level before and after, the ratio

Each campaign is one point, its runs' mean with a t interval: runs are the unit, as inside a campaign. Change points
are found by ruptures' PELT on the log of the campaign means (an L2 cost, one campaign at least per segment, so a
single campaign can mark a step), with a penalty of 5 ln(n) x sigma^2 (BIC's for a known noise is
2 ln(n) x sigma^2; ``PENALTY`` says why more), where sigma is what a campaign mean
varies by without a change: from eight campaigns on, the series' own (the median absolute first difference, which
a step moves once, not its spread, which a step inflates), never below what the campaigns' runs say; before that,
the campaigns' standard errors and the day-to-day variation of ``benchlib.analysis.across``. A level shift smaller
than about three sigmas is rarely called. Fewer than four campaigns: no change point is
looked for.

Analysis code: reads the run index's table, nothing of the lab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from benchlib.analysis.across import DAY_COV
from benchlib.analysis.runs import throughput_runs

__all__ = ["History", "MIN_CAMPAIGNS", "PENALTY", "change_points", "history"]

MIN_CAMPAIGNS = 4  # fewer campaigns: no change point is looked for
#: the penalty's factor: BIC's 2 for a known noise raised 32% false changes in 12 steady campaigns (the noise is
#: estimated from few campaigns); 5 raises 7.5% and still finds a 15% step in 99% of histories, a 10% one in 80%
#: (simulated, tests/analysis/test_history.py: 3% day-to-day, 2% run-to-run, 3 runs a campaign)
PENALTY = 5.0
ROBUST_FROM = 8  # from this many campaigns the noise is the series' own (first differences' MAD), not assumed


@dataclass
class History:
    metric: str
    points: pd.DataFrame  # campaign, campaign_path, folder, when, runs, mean, ci_low, ci_high, segment
    changes: pd.DataFrame  # at (campaign), when, before, after, ratio
    sigma: float  # the noise of one campaign's log mean the penalty assumed
    notes: list[str] = field(default_factory=list)

    def words(self) -> str:
        """The history as a terminal shows it."""
        if self.points.empty:
            return "no ok run matches: nothing to follow"
        lines = [f"{self.metric} in {len(self.points)} campaign(s), oldest first:"]
        shown = self.points.assign(when=self.points["when"].astype(str).str[:16],
                                   mean=self.points["mean"].map(lambda m: f"{m:,.4g}"),
                                   interval=[f"[{lo:,.4g}, {hi:,.4g}]" if np.isfinite(lo) else "-"
                                             for lo, hi in zip(self.points.ci_low, self.points.ci_high)])
        lines.append(shown[["when", "campaign", "folder", "runs", "mean", "interval"]].to_string(index=False))
        if self.changes.empty:
            lines.append("no change point" + (f" ({self.notes[0]})" if self.notes else ""))
        for c in self.changes.itertuples():
            lines.append(f"change at {c.at} ({str(c.when)[:10]}): {c.before:,.4g} -> {c.after:,.4g} "
                         f"(x{c.ratio:.3f})")
        return "\n".join(lines)


def change_points(y: np.ndarray, sigma: float, min_size: int = 1) -> list[int]:
    """Indices where a new segment of ``y`` starts (PELT, L2 cost, penalty ``PENALTY`` ln(n) sigma^2)."""
    import ruptures

    n = len(y)
    if n < MIN_CAMPAIGNS or not np.isfinite(sigma) or sigma <= 0:
        return []
    ends = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(np.asarray(y, float).reshape(-1, 1)) \
        .predict(pen=PENALTY * math.log(n) * sigma * sigma)
    return [e for e in ends if e < n]


def history(runs: pd.DataFrame, *, measure: str = "summary_tps", day_cov: float = DAY_COV) -> History:
    """The history of the ok runs in ``runs`` (rows of the run index: one configuration, many campaigns), one point
    per campaign by when it was made, and its change points."""
    ok = throughput_runs(runs) if measure in runs else runs.iloc[0:0]
    ok = ok[ok[measure].notna()]
    rows = []
    for (path, name), g in ok.groupby(["campaign_path", "campaign"], sort=False):
        v = g[measure].to_numpy(float)
        n, m = len(v), float(v.mean())
        se = v.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        half = stats.t.ppf(0.975, n - 1) * se if n > 1 else math.nan
        rows.append({"campaign": name, "campaign_path": path, "folder": Path(path).name,
                     "when": pd.to_datetime(g.campaign_created_utc.iloc[0]), "runs": n, "mean": m,
                     "ci_low": m - half, "ci_high": m + half, "se_rel": se / m if m > 0 else math.nan})
    points = pd.DataFrame(rows, columns=["campaign", "campaign_path", "folder", "when", "runs", "mean", "ci_low",
                                         "ci_high", "se_rel"])
    points = points.sort_values("when", na_position="first", kind="stable").reset_index(drop=True)
    notes: list[str] = []
    se = points.se_rel.dropna()
    own = float((se ** 2).median()) if len(se) else 0.0  # what a campaign's runs say of its mean
    sigma = math.sqrt(own + (day_cov or 0.0) ** 2)
    starts: list[int] = []
    if len(points) < MIN_CAMPAIGNS:
        notes.append(f"{len(points)} campaign(s): change points need {MIN_CAMPAIGNS} or more")
    elif (points["mean"] > 0).all():
        y = np.log(points["mean"].to_numpy(float))
        if len(y) >= ROBUST_FROM:  # the series' own noise, robust to its steps (a step is one large difference)
            sigma = max(1.4826 * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2), math.sqrt(own))
        starts = change_points(y, sigma)
    points["segment"] = np.searchsorted(starts, np.arange(len(points)), side="right")
    changes = []
    for s in starts:
        before = float(points["mean"][points.segment == points.segment[s] - 1].mean())
        after = float(points["mean"][points.segment == points.segment[s]].mean())
        changes.append({"at": points.campaign[s], "when": points["when"][s], "before": before, "after": after,
                        "ratio": after / before})
    return History(measure.removeprefix("summary_"), points.drop(columns="se_rel"),
                   pd.DataFrame(changes, columns=["at", "when", "before", "after", "ratio"]), sigma, notes)
