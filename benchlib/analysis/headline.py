"""Every throughput ratio against the baseline in words: what was measured, its interval and runs, the verdict (or
what confounds it: ``benchlib.analysis.likeness``), and why it is what it is (``benchlib.analysis.why``, from the
counters: ``benchlib.analysis.mechanism``). The report's findings and the main job's last lines."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from benchlib.analysis import likeness, mechanism, views, why
from benchlib.analysis.campaign import CampaignAnalysis
from benchlib.axis import AXES

__all__ = ["RatioFinding", "headline", "ratio_findings"]


class RatioFinding(NamedTuple):
    """One throughput ratio in words: what was measured, the verdict (or what confounds it), and why it is what it
    is ("" when the counters say nothing)."""

    what: str
    verdict: str
    because: tuple[str, ...] = ()  # the mechanism, clause by clause

    @property
    def why(self) -> str:
        return "; ".join(self.because)

    def sentence(self) -> str:
        return f"{self.what}: {self.verdict}." + (f" Why: {self.why}." if self.because else "")


def headline(a: CampaignAnalysis) -> list[str]:
    """Every throughput ratio against the baseline as plain sentences: how much, its interval, how many runs,
    whether the difference is real or what confounds it, and why it is what it is (the report's findings and the
    main job's last lines)."""
    return [f.sentence() for f in ratio_findings(a)]


def ratio_findings(a: CampaignAnalysis) -> list[RatioFinding]:
    """Per throughput ratio: what was measured, the verdict in words, and its mechanism."""
    c = a.comparisons
    if c.empty:
        return []
    t = c[c.metric.isin(["tps", "read_tps"])]  # the writers', and a read-split load's readers
    keys = [k for k in a.param_columns if k in t.columns and k not in ("topology", "config", "cluster")]
    varying = [k for k in keys if t[k].nunique(dropna=True) > 1 or k in ("threads", "workload")]
    varying = [k for k in varying if k not in a.decided]  # decided by a setting (GR's AFTER levels): said once
    sizes = views.cluster_sizes(a)
    topology = a.runs.drop_duplicates("cluster").set_index("cluster").topology.astype(str).to_dict() \
        if "topology" in a.runs else {}
    explained = mechanism.explain(a, t)
    lines = []
    for idx, r in t.iterrows():
        at = [f"{r[k]:g} client thread{'s' if r[k] != 1 else ''}" for k in varying if k == "threads" and pd.notna(r[k])]
        on = [str(r[k]) for k in varying if k == "workload" and pd.notna(r[k])]
        named = {k: w for axis in AXES.values() for k, w in axis.setting_words(r).items()}  # an axis's own words
        said = [k for k in varying if k not in ("threads", "workload") and pd.notna(r[k])]
        said = [k for k in said if k not in named] + [k for k in named if k in said]  # in the axis's order, last
        other = [named[k] if k in named else str(r[k]) if k == "durability" else f"{k} {r[k]:g}"
                 if isinstance(r[k], (int, float)) else f"{k} {r[k]}" for k in said]
        other = [o for o in other if o]
        where = " ".join(filter(None, [f"at {at[0]}" if at else "", f"on {on[0]}" if on else ""]))
        where += "".join(f", {o}" for o in other)
        kind = "" if r.cluster == r.topology else f"{r.topology}, "
        base = str(r.get("baseline_clusters") or r.baseline)
        base = base if "," not in base else str(r.baseline)
        bkind = "" if base == topology.get(base, base) else f"{topology.get(base)}, "
        bsize = f"{bkind}{sizes[base]} nodes" if base in sizes else ""
        bounded = np.isfinite(float(r.ci_low)) and np.isfinite(float(r.ci_high))
        interval = f"95% interval {r.ci_low:.2f}–{r.ci_high:.2f}" if bounded else "no interval"
        runs = f"{int(r.n)} run{'s' if r.n != 1 else ''}" + (f" against {int(r.n_baseline)}"
                                                            if pd.notna(r.get("n_baseline")) else "")
        whose = f"{base} ({bsize})" if bsize else base
        what = (f"serves {r.ratio:.2f}× the reads of {whose} on the nodes besides the write node (read split)"
                if r.metric == "read_tps" else f"delivers {r.ratio:.2f}× the throughput of {whose}")
        differences = list(r.get("unlike") or ()) if isinstance(r.get("unlike"), tuple) else []
        verdict = _verdict_words(r, a.record.settle_within)
        confounded = likeness.words(differences, str(r.cluster), base)
        if confounded:
            verdict = f"{confounded} (as measured: {verdict})"
        e = explained.loc[idx].to_dict() if idx in explained.index else {}
        if e:
            e.update(ratio=r.ratio, ci_low=r.ci_low, ci_high=r.ci_high)
        because = why.mechanism_words(e, str(r.cluster), base, differences) if e else []
        noted = why.noted_words(differences)
        if noted:
            because.append(f"also different: {noted}")
        lines.append(RatioFinding(f"{r.cluster} ({kind}{sizes.get(r.cluster, '?')} nodes) {what} {where} "
                                  f"({interval}; {runs})", verdict, tuple(because)))
    return lines


def _verdict_words(r: pd.Series, within: float | None = None) -> str:
    """The verdict of one ratio in plain words, with why an INCONCLUSIVE one is not settled (or, settled at the
    campaign's precision ``within``, what that precision says), and what an adjustment for interference did."""
    words = _verdict_only(r, within)
    if isinstance(r.get("adjusted_for"), str) and r.adjusted_for and pd.notna(r.get("unadjusted")):
        moved = r.ratio / r.unadjusted - 1
        words += (f" (adjusted for the CPU lost to others, which moved it {moved:+.1%}; unadjusted "
                  f"{r.unadjusted:.2f}, {r.unadjusted_low:.2f}–{r.unadjusted_high:.2f})")
    return words


def _verdict_only(r: pd.Series, within: float | None) -> str:
    margin = f"{r.margin:.0%}" if pd.notna(r.get("margin")) else "the"
    precise = within is not None and bool(r.get("settled", False))
    if precise and r.verdict == "INCONCLUSIVE":
        need = r.get("runs_needed_per_side")
        more = (f"; about {int(need)} rounds in all would settle that" if pd.notna(need) and need and need < 100
                else "")
        return (f"measured to ±{r.half_width_rel:.0%}, within the campaign's ±{within:.0%} target; whether it "
                f"differs by more than the {margin} margin is not settled{more}")
    if r.verdict == "FASTER":
        return f"faster by more than the {margin} margin: the difference is real"
    if r.verdict == "SLOWER":
        return f"slower by more than the {margin} margin: the difference is real"
    if r.verdict == "EQUIVALENT":
        return f"equivalent within ±{margin}"
    if r.verdict == "SIGNIFICANT_BUT_SMALL":
        side = "faster" if r.ratio > 1 else "slower"
        return (f"{side}: the interval excludes 1, but not yet the {margin} margin, so the difference may be "
                "smaller than that")
    noise = (f"run-to-run noise {r.sigma_log:.1%} (round effects removed)" if pd.notna(r.get("sigma_log"))
             else "the noise")
    need = r.get("runs_needed_per_side")
    if pd.notna(need) and need and need < 100:
        return f"not settled yet: at {noise}, about {int(need)} rounds in all would settle it"
    if pd.notna(need) and need:
        return f"not settled: at {noise}, not even 100 rounds would settle it (the ratio sits close to the margin)"
    if pd.notna(r.get("sigma_log")):
        return f"not settled: the ratio sits on the margin, no number of rounds settles it at {noise}"
    return (f"not settled: {int(r.n)} run{'s are' if r.n != 1 else ' is'} too few to measure the noise "
            "(repeat the campaign in rounds)")


