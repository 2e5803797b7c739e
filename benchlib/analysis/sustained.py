"""Maximum sustained throughput: the highest open-loop rate every member keeps up with (statistics spec F).

A rate lambda is *sustained* by a run (``sysbench --rate=lambda``) when

- the achieved throughput after the warm-up is at least 99% of lambda (less the arrival noise: sysbench
  draws arrivals at random, so a run of T seconds falls short by about sqrt(lambda / T) by chance alone;
  two of those are allowed),
- sysbench's event queue does not grow (the lag-growth test on ``queue_length``, epsilon 0.5% of lambda)
  and never overflowed,
- the worst replica's heartbeat lag does not grow (``lag_growth``: SUSTAINED),
- and flow control did not throttle the writer (paused more than 1% of the load window: FC_LIMITED).

Run verdicts: SUSTAINED, FC_LIMITED, UNSUSTAINED (with the reason), INCONCLUSIVE (the lag or queue test
could not decide: run longer). A rate is accepted when none of its runs is UNSUSTAINED and a majority
is SUSTAINED. ``next_rate`` drives the search: step the rate up from a fraction of the peak (closed-loop)
throughput until a rate fails, step down if the first one fails, then bisect until the bracket
[last sustained, first failing] is within ``precision`` (2%).

``searches(analysis)`` gives one row per search of a campaign (runs tagged with a ``search`` parameter
by the campaign runner): peak, sustained rate, first failing rate, bracket width, FC_LIMITED, status.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchlib import catalogue
from benchlib.analysis.lag import lag_growth
from benchlib.analysis.stability import mser5

if TYPE_CHECKING:
    from benchlib.analysis.campaign import CampaignAnalysis

ACHIEVED_SHARE = 0.99
FC_PAUSED_LIMIT = 0.01  # flow control paused the cluster more than 1% of the load window: FC_LIMITED
SUSTAINED, FC_LIMITED, UNSUSTAINED, INCONCLUSIVE = "SUSTAINED", "FC_LIMITED", "UNSUSTAINED", "INCONCLUSIVE"


@dataclass
class RateVerdict:
    rate: float
    verdict: str
    achieved_tps: float
    achieved_share: float
    queue_verdict: str
    lag_verdict: str
    fc_paused_frac: float
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = "; ".join(self.reasons)
        return d


def rate_verdict(rate: float, tps: Sequence[float], *, t_s: Sequence[float] | None = None,
                 queue: Sequence[float] | None = None, lag_t: Sequence[float] | None = None,
                 lag_ms: Sequence[float] | None = None, fc_paused_frac: float = 0.0,
                 queue_full: bool = False, has_replicas: bool = True) -> RateVerdict:
    """One open-loop run at ``rate``: is the rate sustained? (per-second throughput and queue length,
    the worst node's lag per second of the load, the share of the load flow control paused the cluster)."""
    y = np.asarray(tps, dtype=float)
    t = np.arange(1, len(y) + 1, dtype=float) if t_s is None else np.asarray(t_s, dtype=float)
    reasons: list[str] = []
    if len(y) == 0:
        return RateVerdict(rate, UNSUSTAINED, np.nan, np.nan, INCONCLUSIVE, INCONCLUSIVE, fc_paused_frac,
                           ["no per-second throughput"])
    trim = mser5(y).trim_s if len(y) >= 20 else 0
    steady = y[trim:]
    achieved = float(steady.mean())
    noise = 2 * math.sqrt(rate / max(len(steady), 1))
    floor = ACHIEVED_SHARE * rate - noise
    if achieved < floor:
        reasons.append(f"achieved {achieved:.0f} tps of {rate:.0f} ({achieved / rate:.1%})")
    q_verdict = INCONCLUSIVE
    if queue is not None and len(queue):
        q = np.asarray(queue, dtype=float)
        if np.isfinite(q).any():
            q_verdict = lag_growth(q, t, trim_s=trim, unit="trx", tps=rate).verdict
            if q_verdict == "GROWING":
                reasons.append("sysbench's event queue grows")
    if queue_full:
        q_verdict = "GROWING"
        reasons.append("sysbench's event queue overflowed")
    l_verdict = INCONCLUSIVE
    if lag_ms is not None and len(lag_ms):
        lt = np.asarray(lag_t if lag_t is not None else np.arange(len(lag_ms)), dtype=float)
        l_verdict = lag_growth(np.asarray(lag_ms, dtype=float), lt, trim_s=trim).verdict
        if l_verdict == "GROWING":
            reasons.append("replica lag grows")
    elif not has_replicas:
        l_verdict = SUSTAINED  # a single server has no replica to fall behind
    if reasons:
        verdict = UNSUSTAINED
    elif has_replicas and (lag_ms is None or not len(lag_ms)):  # audit B6: missing lag is not sustained lag
        verdict = INCONCLUSIVE
        reasons.append("no lag samples: whether the replicas keep up could not be judged")
    elif INCONCLUSIVE in (q_verdict, l_verdict):
        verdict = INCONCLUSIVE
        reasons.append(f"{'queue' if q_verdict == INCONCLUSIVE else 'lag'} test inconclusive: run longer")
    elif fc_paused_frac > FC_PAUSED_LIMIT:
        verdict = FC_LIMITED
        reasons.append(f"flow control paused replication {fc_paused_frac:.1%} of the load")
    else:
        verdict = SUSTAINED
    return RateVerdict(rate, verdict, achieved, achieved / rate, q_verdict, l_verdict, fc_paused_frac, reasons)


def accepted(verdicts: Sequence[str]) -> bool:
    """A rate's runs taken together: none UNSUSTAINED and a majority SUSTAINED."""
    return bool(verdicts) and UNSUSTAINED not in verdicts and sum(v == SUSTAINED for v in verdicts) * 2 > len(verdicts)


@dataclass(frozen=True)
class SearchPlan:
    start: float  # first rate, tps
    step: float = 1.5  # the sweep multiplies (or divides) the rate by this
    precision: float = 0.02  # stop when (first failing - last sustained) / last sustained <= this
    max_steps_down: int = 4
    min_rate: int = 1


def bracket(history: Mapping[int, bool]) -> tuple[int | None, int | None]:
    """(highest accepted rate below every failing one, lowest failing rate)."""
    failing = [r for r, ok in history.items() if not ok]
    high = min(failing) if failing else None
    ok = [r for r, good in history.items() if good and (high is None or r < high)]
    return (max(ok) if ok else None), high


def next_rate(history: Mapping[int, bool], plan: SearchPlan) -> int | None:
    """The next rate to try given every rate tried so far (True: accepted), or None when the search is
    done: the bracket is within the precision, or no rate down to ``start / step**max_steps_down`` held."""
    start = max(plan.min_rate, int(round(plan.start)))
    if not history:
        return start
    low, high = bracket(history)
    if high is None:  # everything held so far: sweep up
        nxt = int(math.ceil(max(history) * plan.step))
        return nxt if nxt not in history else nxt + 1
    if low is None:  # nothing held: sweep down, a bounded number of steps
        floor = max(plan.min_rate, int(start / plan.step ** plan.max_steps_down))
        if min(history) <= floor:
            return None
        return max(floor, int(min(history) / plan.step))
    if (high - low) / low <= plan.precision or high - low <= 1:
        return None
    mid = (low + high) // 2
    return mid if mid not in history else None


# ---- a campaign's searches -------------------------------------------------------------------------------------

#: flow-control counters of time held back, ns: Galera's replication paused (one clock for the node); Group
#: Replication's transactions throttled (summed over the writer's sessions: divided by the run's threads)
PAUSED_NS = {"wsrep_flow_control_paused_ns": False, "gr_throttle_time_ns": True}


def fc_paused(cluster: pd.DataFrame, runs: pd.DataFrame) -> pd.Series:
    """Per run: the largest share of its load window that any node spent paused (Galera) or its writer's
    sessions spent throttled (Group Replication) by flow control."""
    if cluster.empty or "metric" not in cluster:
        return pd.Series(dtype=float)
    c = cluster[cluster.metric.isin(list(PAUSED_NS))]
    if c.empty:
        return pd.Series(dtype=float)
    cols = [k for k in ("load_start_s", "load_end_s", "threads") if k in runs and k not in c]
    c = c.join(runs.set_index("run_id")[cols].astype(float), on="run_id")
    c = c[(c.t_s >= c.load_start_s) & (c.t_s <= c.load_end_s) & ~c.reset]
    out = {}
    for rid, g in c.groupby("run_id", observed=True):
        best = 0.0
        for (_, metric), n in g.sort_values("t_s").groupby(["node", "metric"], observed=True):
            if len(n) >= 2 and n.t_s.iloc[-1] > n.t_s.iloc[0]:
                share = (n.value.iloc[-1] - n.value.iloc[0]) / 1e9 / (n.t_s.iloc[-1] - n.t_s.iloc[0])
                if PAUSED_NS[metric] and "threads" in n and pd.notna(n.threads.iloc[0]):
                    share /= max(1.0, float(n.threads.iloc[0]))
                best = max(best, min(1.0, share))
        out[rid] = best
    return pd.Series(out, dtype=float)


def judge_runs(frames: Mapping[str, pd.DataFrame], run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """A rate verdict for every open-loop run (``rate`` set) among ``run_ids`` (default: all)."""
    runs = frames["runs"]
    if "rate" not in runs:
        return pd.DataFrame()
    sel = runs[runs.rate.notna()]
    if run_ids is not None:
        sel = sel[sel.run_id.isin(list(run_ids))]
    iv = frames["intervals"]
    lag = frames["lag"]
    paused = fc_paused(frames.get("cluster", pd.DataFrame()), sel)
    iv_by = {k: g for k, g in iv[iv.run_id.isin(sel.run_id)].groupby("run_id", observed=True)} if not iv.empty else {}
    lag_by = {k: g for k, g in lag[lag.run_id.isin(sel.run_id)].groupby("run_id", observed=True)} if not lag.empty else {}
    rows = []
    for r in sel.itertuples(index=False):
        rate = float(r.rate)
        reason = r.reason if isinstance(r.reason, str) else ""
        if r.status != "ok":
            full = "queue is full" in reason
            v = RateVerdict(rate, UNSUSTAINED if full else "FAILED", np.nan, np.nan, "GROWING" if full else "",
                            "", np.nan, [reason])
        else:
            g = iv_by.get(r.run_id, pd.DataFrame(columns=["t_s", "tps", "queue_length"])).sort_values("t_s")
            lt = lm = None
            lg = lag_by.get(r.run_id)
            if lg is not None and not lg.empty and pd.notna(r.load_start_s):
                sec = np.floor(lg.t_commit_s.to_numpy(float) - float(r.load_start_s))
                w = pd.Series(lg.lag_ms.to_numpy(float)).groupby(sec).max()
                load_s = float(r.load_end_s - r.load_start_s)
                w = w[(w.index >= 0) & (w.index < load_s)]
                lt, lm = w.index.to_numpy(float), w.to_numpy(float)
            q = g.queue_length.astype("float64").to_numpy() if "queue_length" in g else None
            v = rate_verdict(rate, g.tps.to_numpy(float), t_s=g.t_s.to_numpy(float), queue=q, lag_t=lt, lag_ms=lm,
                             fc_paused_frac=float(paused.get(r.run_id, 0.0)),
                             has_replicas=_has_replicas(getattr(r, "topology", None)))
        rows.append({"run_id": r.run_id, **v.as_dict()})
    return pd.DataFrame(rows)


def search_history(verdicts: pd.DataFrame) -> dict[int, bool]:
    """{rate: accepted} from the rate verdicts of one search (failed runs ignored: the runner redoes them)."""
    out: dict[int, bool] = {}
    v = verdicts[verdicts.verdict != "FAILED"] if not verdicts.empty else verdicts
    for rate, g in v.groupby("rate"):
        out[int(rate)] = accepted(list(g.verdict))
    return out


SEARCH_KEYS = ["cluster", "topology", "workload"]


def searches(a: "CampaignAnalysis", *, precision: float = 0.02) -> pd.DataFrame:
    """One row per sustained-throughput search of the campaign: the peak (best closed-loop mean over the
    thread counts of that cluster, settings and workload), the bracket and its verdicts."""
    runs = a.runs
    if "search" not in runs or runs.search.isna().all():
        return pd.DataFrame()
    verdicts = judge_runs(a.frames, runs.loc[runs.search.notna(), "run_id"])
    if verdicts.empty:
        return pd.DataFrame()
    settings = [c for c in a.param_columns if c not in {*SEARCH_KEYS, "threads", "rate", "repetition", "config",
                                                        "search"}]
    closed = runs[runs.search.isna() & runs.rate.isna() & (runs.status == "ok")] if "tps_mean" in runs else runs[:0]
    rows = []
    probe = runs[runs.search.notna()].merge(verdicts, on="run_id", suffixes=("", "_v"))
    for key, g in probe.groupby("search", observed=True, sort=True):
        first = g.iloc[0]
        group = {c: first[c] for c in [*SEARCH_KEYS, *settings] if c in g}
        history = search_history(g)
        low, high = bracket(history)
        peak = np.nan
        if not closed.empty:
            same = closed
            for c, v in group.items():
                same = same[same[c].isna()] if pd.isna(v) else same[same[c] == v]
            if not same.empty:
                peak = float(same.groupby("threads").tps_mean.mean().max())
        at_high = g[g.rate == high] if high is not None else g[:0]
        fc_limited = bool((at_high.verdict == FC_LIMITED).any())
        width = (high - low) / low if low and high else np.nan
        status = ("NONE_SUSTAINED" if low is None else "OPEN" if high is None
                  else "DONE" if width <= precision or high - low <= 1 else "WIDE")
        rows.append({"search": key, **group, "threads": int(first.threads), "peak_tps": peak,
                     "sustained_tps": float(low) if low is not None else np.nan,
                     "first_failing_tps": float(high) if high is not None else np.nan, "bracket_rel": width,
                     "sustained_vs_peak": (low / peak) if low and peak == peak and peak else np.nan,
                     "fc_limited": fc_limited, "failing_because": "; ".join(sorted(set(
                         r for rs in at_high.reasons for r in rs.split("; ") if r))),
                     "rates_tried": len(history), "runs": len(g), "status": status})
    return pd.DataFrame(rows)


def _has_replicas(topology: object) -> bool:
    """A run's cluster has nodes besides the write node (an unknown topology: assumed to have)."""
    facts = catalogue.TOPOLOGIES.get(topology) if isinstance(topology, str) else None
    return facts.replicas if facts else True
