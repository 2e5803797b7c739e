"""The main job's design against the noise of a 2-core VM: where the run-to-run noise of the three demo campaigns
recorded on such a VM comes from (data/campaigns/demo-vm-1..3: ./scripts/demo three times in a row, each stopped by
its 250 s budget after 4 rounds, 0 of 4 headline ratios within +-10%), and how often a design of the demo's campaign
settles every headline ratio within +-10% inside its time budget, by simulation at that noise.

    python bench/demo_settle.py [--campaigns 1000] [--seed 1]

1. **The noise, decomposed** (every number from the three recorded campaigns):
   - the run-to-run noise of the two-way model (round + configuration) on log run means: what the ratios' intervals
     are made of;
   - the per-second variation within runs, and what it would give a 5 s mean if the seconds were independent;
   - the noise of a T-second mean (the first and the last T seconds of each 5 s run, T = 1..5): flat from 3 s on,
     so it is a level each run takes and keeps, not a wobble that a longer run averages out;
   - whether the noise of a run follows the run before it (blocking finer than a round pays only then), or the CPU
     lost to others (the only covariates the configuration cannot move);
   - per-run overhead, the analysis between rounds, and the share of the 30 s stability runs.
2. **Designs, simulated** at that noise with benchlib's own two-way model (``benchlib.analysis.blocks.block_ratio``)
   and the adaptive mode's rules (three planned rounds; another round while a headline ratio's interval is wider
   than +-10% and the round fits in the budget; the cap): the share of campaigns that settle all four headline
   ratios, with its 95% Wilson interval, the rounds and the campaign's seconds (medians).

The demo's design is ``after``, simulated at the per-run cost of a demo campaign of today's benchlib
(``--overhead-from``; the newest ``runs/demo/*/quick`` by default): it settles in at least 90% of campaigns at this
noise. ``after@old`` is the same design at the recorded campaigns' per-run cost (the benchlib of 675a719, whose lab
connections each built a TLS context: 0.55 s a run).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchlib.analysis.blocks import block_ratio, fit  # noqa: E402
from benchlib.analysis.campaign import analyze  # noqa: E402

CAMPAIGNS = [ROOT / "data" / "campaigns" / f"demo-vm-{i}" for i in (1, 2, 3)]
SETTLE = 0.10  # the demo's settle_within
HEADLINE = [("galera", 2), ("galera", 16), ("semisync", 2), ("semisync", 16)]


def _seconds(utc: pd.Series) -> np.ndarray:
    return (pd.to_datetime(utc, utc=True) - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds().to_numpy()


def _runs(path: Path):
    a = analyze(path)
    ok = a.runs[(a.runs.status == "ok")].copy()
    ok["t0"], ok["t1"] = _seconds(ok.started_utc), _seconds(ok.ended_utc)
    ok["length_s"] = ok.summary_total_time_s.round()
    iv = a.frames["intervals"]
    per_second = {rid: g.sort_values("t_s").tps.to_numpy(float) for rid, g in iv.groupby("run_id", observed=True)}
    return a, ok.sort_values("t0"), per_second


def _pooled(fits) -> tuple[float, int]:
    fits = [f for f in fits if f is not None]
    df = sum(f.df for f in fits)
    return float(np.sqrt(sum(f.sigma ** 2 * f.df for f in fits) / df)), df


def decompose(loaded) -> dict:
    """Every figure of part 1, printed, and the model the simulation draws from."""
    out: dict = {}
    print("1. The run-to-run noise of the three demo campaigns of a 2-core VM")
    fits, lag1, prev, lost = [], [], [], []
    for path, (a, ok, _) in zip(CAMPAIGNS, loaded):
        f = fit(ok.config.astype(str), ok.repetition, ok.tps_mean)
        fits.append(f)
        res = pd.Series(np.concatenate([f.residuals[c] for c in f.configs]),
                        index=np.concatenate([ok.index[ok.config.astype(str) == c] for c in f.configs]))
        order = ok.loc[res.index].sort_values("t0")
        r = res[order.index].to_numpy()
        lag1 += list(zip(r[:-1], r[1:]))
        same = order.assign(res=r).groupby("cluster", observed=True).res
        prev += list(zip(same.shift(1).dropna(), order.assign(res=r).res[same.shift(1).notna()]))
        if "lost_cpu" in order:
            lost += list(zip(order.lost_cpu.to_numpy(float), r))
        print(f"   {path.name}: residual SD {f.sigma:.1%} on {f.df} df (round effect p = {f.round_p:.2f}), "
              f"{ok.repetition.max()} rounds")
    sigma, df = _pooled(fits)
    out["sigma5"] = sigma
    print(f"   pooled: {sigma:.1%} on {df} df")
    within = [np.std(np.log(x[1:]), ddof=1) for a, ok, ps in loaded for rid, x in ps.items() if len(x) == 5]
    print(f"   within a 5 s run the seconds vary by a median {np.median(within):.1%}: were they independent, a 5 s mean "
          f"would vary by {np.median(within) / np.sqrt(4):.1%}; it varies by {sigma:.1%}")
    print("   the noise of a T-second mean (the two-way model on the first T, and the last T, seconds of each 5 s run):")
    by_t = {}
    for t in (1, 2, 3, 4, 5):
        first, last = [], []
        for a, ok, ps in loaded:
            short = ok[ok.run_id.astype(str).map(lambda r: len(ps.get(r, [])) == 5)]
            ids = short.run_id.astype(str)
            first.append(fit(short.config.astype(str), short.repetition, [ps[r][:t].mean() for r in ids]))
            last.append(fit(short.config.astype(str), short.repetition, [ps[r][-t:].mean() for r in ids]))
        (s1, d1), (s2, _) = _pooled(first), _pooled(last)
        by_t[t] = (s1 + s2) / 2
        print(f"     T = {t} s: {s1:.1%} (first seconds), {s2:.1%} (last seconds), {d1} df")
    out["sigma_by_t"] = by_t
    a1, b1 = np.array(lag1).T
    a2, b2 = np.array(prev).T
    print(f"   a run's residual against the next run's (adjacent in time, any cluster): r = {np.corrcoef(a1, b1)[0, 1]:+.2f} "
          f"over {len(a1)} pairs; against its own cluster's previous run: r = {np.corrcoef(a2, b2)[0, 1]:+.2f} "
          f"({len(a2)} pairs): nothing carries over from one run to the next, so blocks finer than a round buy "
          "nothing here (they cost residual df)")
    if lost:
        x, y = np.array(lost).T
        keep = np.isfinite(x)
        print(f"   against the CPU lost to others (steal and other processes, a median {np.median(x[keep]):.1%}): "
              f"r = {np.corrcoef(x[keep], y[keep])[0, 1]:+.2f}: no covariate measured before or during a run that the "
              "configuration cannot move explains it")
    hetero = pd.concat([pd.Series(np.concatenate([f.residuals[c] for f in fits if c in f.residuals]), name=c)
                        for c in sorted({c for f in fits for c in f.configs})], axis=1)
    labels = {str(c): f"{k}" for a, ok, _ in loaded for c, k in zip(ok.config.astype(str), ok.cluster.astype(str)
                                                                    + " t" + ok.threads.astype(int).astype(str))}
    spread = hetero.std().rename(index=labels)
    out["spread"] = {k: float(v / np.sqrt((spread ** 2).mean())) for k, v in spread.items()}
    print("   by configuration (residual SD): " + ", ".join(f"{k} {v:.1%}" for k, v in spread.items()))
    overhead, long_share = [], []
    for a, ok, _ in loaded:
        # from the first run's start to the last one's end, less the loads, over the runs (attempts redone included)
        span = ok.t1.max() - ok.t0.min()
        overhead.append((span - ok.length_s.sum()) / len(ok))
        long_runs = ok[ok.length_s >= 25]
        long_share.append((long_runs.t1 - long_runs.t0).sum() / span)
    out["overhead"] = float(np.median(overhead))
    out["step_s"] = took_s = _step_seconds()
    starts = []
    for path, (a, ok, _) in zip(CAMPAIGNS, loaded):
        created = a.record.created_utc
        if created:
            starts.append(float(ok.t0.min() - _seconds(pd.Series([created]))[0]))
    out["startup_s"] = float(np.median(starts)) if starts else 0.0
    print(f"   a campaign spends {out['startup_s']:.1f} s before its first run (the datasets prepared, the sampler "
          "and the host's noise measured)")
    print(f"   a run costs {out['overhead']:.2f} s beside its load (the campaign's span less its loads, a run; median of "
          f"the three); the adaptive mode's analysis between rounds "
          f"{took_s:.1f} s here; the 30 s stability runs took {np.mean(long_share):.0%} of each campaign's run time")
    return out


def _overhead_of(folder: Path) -> float:
    """A campaign's cost a run beside its load: from its first run's start to its last run's end, less the loads,
    over the runs."""
    from benchlib.store import runs_table

    t = runs_table(folder)
    span = _seconds(t.ended_utc).max() - _seconds(t.started_utc).min()
    return float((span - t.summary_total_time_s.round().sum()) / len(t))


def _step_seconds() -> float:
    """What the adaptive mode's look at the campaign costs between rounds: ``analyze`` of a campaign of run folders
    (as one being run is), the median of three."""
    import tempfile

    from benchlib.packing import unpack_campaign

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "c"
        unpack_campaign(CAMPAIGNS[0], folder)
        took = []
        for _ in range(3):
            start = time.perf_counter()
            analyze(folder)
            took.append(time.perf_counter() - start)
    return float(np.median(took))


@dataclass(frozen=True)
class Design:
    name: str
    time_s: int
    budget_s: float
    max_rounds: int
    planned: int = 3
    stability_s: int | None = None  # the last planned round's 16-thread runs this long
    what: str = ""


def simulate(design: Design, noise: dict, campaigns: int, rng: np.random.Generator) -> dict:
    """``campaigns`` simulated campaigns of ``design``: each run's log mean is its configuration's plus a round
    effect plus its own noise (the configuration's share of the noise of a ``time_s`` mean); the adaptive mode's
    rules decide when to stop. Returns the settle count and each campaign's rounds and seconds."""
    sigma = noise["sigma_by_t"].get(design.time_s, noise["sigma5"])
    configs = [f"{c} t{t}" for c in ("async", "semisync", "galera") for t in (2, 16)]
    scale = np.array([noise["spread"].get(c, 1.0) for c in configs])
    true = np.log(np.array([640, 980, 650, 1050, 840, 950], float))  # the levels hardly matter: ratios are differences
    settled, rounds_used, seconds = 0, [], []
    for _ in range(campaigns):
        values, labels, rounds = [], [], []
        elapsed, done = noise.get("startup_s", 0.0), False
        rnd = 0
        while True:
            rnd += 1
            lengths = np.full(len(configs), design.time_s, float)
            if design.stability_s and rnd == design.planned:
                lengths[[1, 3, 5]] = design.stability_s
            values += list(np.exp(true + sigma * scale * rng.standard_normal(len(configs))))
            labels += configs
            rounds += [rnd] * len(configs)
            elapsed += float(np.sum(lengths + noise["overhead"]))
            if rnd < design.planned:
                continue
            elapsed += noise["step_s"]
            widths = []
            for cluster, t in HEADLINE:
                mine = np.array(labels, dtype=object)
                base = f"async t{t}"
                fam = np.where(mine == base, "\0base", mine)
                r = block_ratio(fam, np.array(rounds), np.array(values), f"{cluster} t{t}", "\0base")
                widths.append(max(r.ci_high / r.ratio - 1, 1 - r.ci_low / r.ratio) if r else np.inf)
            if max(widths) <= SETTLE + 1e-12:
                done = True
                break
            next_round = 1.05 * len(configs) * (design.time_s + noise["overhead"])
            if rnd >= design.max_rounds or elapsed + next_round > design.budget_s:
                break
        settled += done
        rounds_used.append(rnd)
        seconds.append(elapsed)
    return {"settled": settled, "rounds": rounds_used, "seconds": seconds}


def wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _demo() -> Design:
    """The main job's campaign as examples/campaigns/quick.toml has it."""
    import tomllib

    spec = tomllib.loads((ROOT / "examples" / "campaigns" / "quick.toml").read_text())
    load = spec["load"]
    return Design("after", load["time_s"], spec["budget_s"], spec["max_repetitions"], spec["repetitions"],
                  load.get("stability_s"), what=f"the demo now (examples/campaigns/quick.toml): {load['time_s']} s runs"
                  f"{', ' + str(load['stability_s']) + ' s stability runs' if load.get('stability_s') else ', no stability runs'}"
                  f", {spec['budget_s']:g} s budget, at most {spec['max_repetitions']} rounds")


DESIGNS = [
    Design("before", 5, 250, 8, stability_s=30,
           what="the demo until now: 5 s runs, 30 s stability runs at 16 threads in round 3, 250 s budget"),
    Design("no-long", 5, 250, 12, what="5 s runs, no stability runs, 250 s budget"),
    Design("2s@old", 2, 240, 16, what="2 s runs, 240 s budget, at the recorded campaigns' cost a run"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", type=int, default=1000, help="simulated campaigns per design")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--overhead-from", type=Path, default=None,
                    help="a campaign folder of today's benchlib (default: the newest runs/demo/*/quick) whose per-run "
                         "cost beside the load the demo's design is also simulated at")
    args = ap.parse_args()
    loaded = [_runs(p) for p in CAMPAIGNS]
    noise = decompose(loaded)
    today = args.overhead_from or max((ROOT / "runs" / "demo").glob("*/quick"), default=None)
    today_overhead = _overhead_of(today) if today is not None else None
    rng = np.random.default_rng(args.seed)
    print(f"\n2. Designs simulated at that noise ({args.campaigns} campaigns each; settled: all four headline ratios "
          f"within +-{SETTLE:.0%}, 95% Wilson interval)")
    demo = _demo()
    runs = [(d, noise) for d in DESIGNS[:2]]
    if today_overhead is not None:  # the demo as it runs today: at today's cost a run
        where = today.relative_to(ROOT) if today.is_relative_to(ROOT) else today
        runs.append((Design("after", demo.time_s, demo.budget_s, demo.max_rounds, demo.planned, demo.stability_s,
                            what=f"{demo.what}; at today's cost a run, {today_overhead:.2f} s beside its load "
                                 f"({where})"), {**noise, "overhead": today_overhead}))
    runs.append((Design("after@old", demo.time_s, demo.budget_s, demo.max_rounds, demo.planned, demo.stability_s,
                        what=f"the same design at the recorded campaigns' cost a run, {noise['overhead']:.2f} s (their "
                             "benchlib built a TLS context for each lab connection)"), noise))
    runs += [(d, noise) for d in DESIGNS[2:]]
    for d, n in runs:
        r = simulate(d, n, args.campaigns, rng)
        lo, hi = wilson(r["settled"], args.campaigns)
        print(f"   {d.name:8s} settles {r['settled'] / args.campaigns:6.1%} [{lo:.1%}, {hi:.1%}] of campaigns, "
              f"median {np.median(r['rounds']):.0f} rounds, {np.median(r['seconds']):.0f} s (90th percentile "
              f"{np.percentile(r['seconds'], 90):.0f} s): {d.what}")


if __name__ == "__main__":
    main()
