"""What took the host from the lab, in words, for the report and the CLI: the interference over a campaign's runs,
the disturbed runs redone with their evidence, what the ratios' adjustment did, and this host's noise at the
campaign's start (its ``host_noise`` event). Split from ``benchlib.report`` (which renders them) so that the report
module stays about publishing; the figures themselves are ``benchlib.analysis.interference``'s."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchlib.analysis.campaign import CampaignAnalysis
from benchlib.analysis.runs import throughput_runs

__all__ = ["events", "interference_findings", "noise_line"]


def events(campaign: Path, kind: str) -> list[dict]:
    """The campaign's events of one kind (events.jsonl), oldest first."""
    events = campaign / "events.jsonl"
    if not events.exists():
        return []
    return [e for e in map(json.loads, events.read_text().splitlines()) if e.get("event") == kind]


def interference_findings(a: CampaignAnalysis, campaign: Path) -> list[str]:
    """What took the host from the lab, in sentences: over the runs (steal, other processes), the disturbed runs that
    were redone with their evidence, the runs that lost the most and how far they sat from their configuration, and
    what the ratios' adjustment did."""
    from benchlib.analysis import interference

    measured = throughput_runs(a.runs)
    s = interference.summary(measured)
    out = []
    if s:
        foreign = (f"; processes outside the lab and benchlib a median {s['foreign_median']:.1%} (at most "
                   f"{s['foreign_max']:.1%})" if s.get("foreign_median") is not None else
                   "; the CPU of other processes was not sampled (recorded before benchlib did)")
        out.append(f"Interference over {s['runs']} runs: the hypervisor took a median {s['steal_median']:.1%} of the "
                   f"CPU (steal; at most {s['steal_max']:.1%}){foreign}.")
    d = interference.disturbed_runs(campaign)
    if not d.empty:
        redone = d[d.redone]
        left = d[~d.redone]
        if len(redone):
            items = "; ".join(f"{r.run_id} (attempt {int(r.attempt)}): {interference.evidence(r._asdict())}"
                              for r in redone.itertuples())
            many = len(redone) > 1
            out.append(f"{len(redone)} run{'s were' if many else ' was'} disturbed (over the "
                       f"{a.record.redo_above:.0%} of the CPU a run may lose to others), left out and redone in "
                       f"{'their' if many else 'its'} round: {items}.")
        if len(left):
            items = "; ".join(f"{r.run_id}: {interference.evidence(r._asdict())}" for r in left.itertuples())
            out.append(f"{len(left)} run{'s were' if len(left) > 1 else ' was'} disturbed in every attempt and "
                       f"{'are' if len(left) > 1 else 'is'} left out (a round one run short; rerunning the campaign "
                       f"tries again): {items}.")
    worst = interference.in_words(measured)
    if worst:
        out.append("The runs that lost the most CPU: " + "; ".join(worst) + ".")
    c = a.comparisons
    if not c.empty and "adjusted_for" in c:
        adj = c[c.adjusted_for.astype(str) != ""]
        if len(adj):
            moved = (adj.ratio / adj.unadjusted - 1).abs()
            tps = adj[adj.metric == "tps"]
            slope = (f" (the two-way model's covariate: a run that lost 10% of the CPU ran about "
                     f"{-np.expm1(float(tps.covariate_slope.median()) * 0.1):.0%} slower)" if len(tps) else "")
            out.append(f"{len(adj)} of {len(c)} ratios are adjusted for the CPU lost to others{slope}; the adjustment "
                       f"moved them by {moved.median():.1%} (median), at most {moved.max():.1%}.")
        elif s and s.get("lost_max", 0) >= 0.01:
            notes = c.notes.astype(str)
            refused = notes[notes.str.contains("not adjusted for")]
            out.append("The ratios are not adjusted for the CPU lost to others: " + (
                refused.iloc[0].split("not adjusted for ", 1)[1].split(";")[0] if len(refused) else
                "it did not make them more precise") + ".")
    return out


def noise_line(campaign: Path) -> str:
    """This host's noise at the campaign's last start in one sentence (the report's header; details: Interference)."""
    from benchlib.analysis.interference import noise_words

    noise = events(campaign, "host_noise")
    if not noise:
        return ""
    words = noise_words(noise[-1])
    bad = [what for what, _, b in words if b]
    return (f"Host noise at the start: {'; '.join(what.split(' (')[0] for what, _, _ in words)}: "
            + (f"noisy ({len(bad)} of {len(words)}: see Interference)." if bad else "quiet."))
