"""A campaign checked: every problem its runs and configurations show, with a severity (error | warning | info),
where, what, and the fix; each said once per configuration where it applies to several runs."""

from __future__ import annotations

from typing import Any

import pandas as pd

from benchlib.analysis import interference
from benchlib.analysis.runs import config_label, throughput_runs

def sorted_problems(problems: pd.DataFrame) -> pd.DataFrame:
    order = {"error": 0, "warning": 1, "info": 2}
    return problems.sort_values("severity", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def bound_problems(a, params: list[str]) -> pd.DataFrame:  # a: the CampaignAnalysis being put together
    """A warning per configuration whose runs were CPU-bound (a host over 90% busy or 20% iowait, or a server
    node using over 90% of the host's CPUs): a saturated host changes what a comparison means."""
    from benchlib.analysis.resources import BUSY, IOWAIT, cpu_bound

    bound = cpu_bound(a)
    rows = []
    if bound.empty:
        return pd.DataFrame(columns=["severity", "where", "what", "fix"])
    configs = a.runs.drop_duplicates("config").set_index("config")
    keys = [k for k in params if k in configs.columns and k not in ("topology", "config")]
    for config, g in bound.groupby("config", sort=True):
        hit = g[g.bound != ""]
        if hit.empty:
            continue
        what = (f"CPU-bound in {hit.run_id.nunique()} of {g.run_id.nunique()} runs ({', '.join(sorted(set(hit.bound)))}; "
                f"host busy {g.busy.median():.0%} median of {int(g.cpus.max())} CPUs, iowait {g.iowait.median():.0%})")
        rows.append(("warning", f"config {config} ({config_label(configs.loc[config], keys)})", what,
                     f"over {BUSY:.0%} busy or {IOWAIT:.0%} iowait the load measures the host's limit as much as the "
                     "replication's: fewer client threads, or a bigger host, to compare the systems themselves"))
    return pd.DataFrame(rows, columns=["severity", "where", "what", "fix"])


SHORT_OF_RATE = 0.05  # an open-loop configuration whose mean throughput is this far below its rate did not hold it


TAIL_WARN = 0.02  # share of a run's transactions sysbench left out of its per-second lines worth a warning


def unreported_tail(table: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Transactions sysbench counted in its summary but in no per-second line (it sometimes omits its last
    report): ``unreported_trx`` and ``unreported_frac`` per run."""
    if intervals.empty or "summary_transactions" not in table:
        return table
    iv = intervals.sort_values(["run_id", "t_s"])
    dt = iv.groupby("run_id", observed=True).t_s.diff().fillna(iv.t_s)
    reported = (iv.tps.astype(float) * dt.astype(float)).groupby(iv.run_id.astype(str)).sum()
    total = pd.to_numeric(table.summary_transactions, errors="coerce")
    out = table.copy()
    out["unreported_trx"] = (total - table.run_id.astype(str).map(reported)).round(0)
    out["unreported_frac"] = out.unreported_trx / total.where(total > 0)
    return out


def validate(table: pd.DataFrame, configs: pd.DataFrame, params: list[str],
             comparisons: pd.DataFrame | None = None, *, disturbed_above: float = interference.DISTURBED
             ) -> pd.DataFrame:
    """Every problem of a campaign, with a severity: error (a result must not be used as is),
    warning (read it with care), info."""
    out: list[dict[str, Any]] = []

    def add(severity: str, where: str, what: str, fix: str = "", kind: str = "") -> None:
        out.append({"severity": severity, "where": where, "what": what, "fix": fix, "kind": kind})

    records = table.to_dict("records")
    for r in records:  # first: runs that ran but did not measure what they name
        if r["status"] == "invalid":
            add("error", r["run_id"], f"run invalid: {str(r['reason']).removeprefix('INVALID: ')}",
                "left out of every statistic; find why the cluster changed mode (the reason names the node and "
                "when), then rerun the campaign: invalid runs are redone")
    for r in records:
        rid = r["run_id"]
        if r["status"] == "invalid":
            continue
        if r["status"] == "disturbed":
            add("warning", rid, f"run disturbed: {str(r['reason']).removeprefix('DISTURBED: ')}",
                "left out of every statistic (redone up to [interference] max_redos times, disturbed every time); "
                "rerun the campaign when the host is quieter: disturbed runs are redone; `benchlib doctor` says what "
                "this host's noise is")
            continue
        if r["status"] != "ok":
            add("error", rid, f"run failed: {r['reason']}", "rerun the campaign: failed runs are redone")
            continue
        if pd.notna(r.get("fault_at_s", float("nan"))):  # a fault run: its gaps and lost sync are the fault's
            if pd.isna(r.get("lost_writes")):
                add("warning", rid, "the ledger was not audited after the heal: lost writes unknown",
                    "see the run's manifest.json (ledger, heal)")
            continue
        if r.get("gaps", 0) > 0:
            add("error", rid, f"{r['gaps']} per-second intervals missing", "rerun this run")
        if r["sampler_errors"]:
            add("warning", rid, f"{r['sampler_errors']} sampler errors: gaps in lag or cluster sampling",
                "see manifest.json sampler.errors", kind="sampler")
        wait = r["in_sync_wait_s"]
        if pd.isna(wait) or wait > 5:
            add("warning", rid, "replicas were not in sync at the start of the load" if pd.isna(wait)
                else f"replicas took {wait:.1f} s to get in sync before the load", kind="in_sync")
        flags = r.get("flags") if isinstance(r.get("flags"), str) else ""
        if r.get("class") in ("NO_STEADY_STATE", "SLOWDOWN"):
            add("warning", rid, f"throughput {r['stability']}", "run longer, or look at the stability chart",
                kind="stability")
        elif any(f in flags for f in ("STALLS", "NOT_SETTLED", "LONG_WARMUP")):
            add("warning", rid, f"throughput {r['stability']}", "run longer, or add warm-up (load.warmup_s)",
                kind="stability")
        elif flags:
            add("info", rid, f"throughput {r['stability']}", kind="stability")
        if r.get("lag_verdict") == "GROWING" and isinstance(r.get("search"), str):
            add("info", rid, f"replica lag grows at rate {r['rate']:.0f} (a sustained-throughput search probes "
                             "past the sustained rate)")
        elif r.get("lag_verdict") == "GROWING":
            add("warning", rid, f"replica lag grows {r['lag_slope_ms_per_s']:.1f} ms/s over the run: "
                                "the replicas do not sustain this load", kind="lag")
        tail = r.get("unreported_frac")
        if isinstance(tail, float) and tail > TAIL_WARN:
            add("warning", rid, f"sysbench left {tail:.1%} of the run's transactions out of its per-second lines "
                                "(its last report is missing)",
                "the per-second figures (and the mean TPS after the warm-up trim) miss that tail; "
                "summary_tps includes it", kind="tail")
        if pd.isna(r["catch_up_s"]):
            add("warning", rid, "no catch-up time recorded", kind="catch_up")
        lost = r.get("lost_cpu")
        if isinstance(lost, float) and lost > disturbed_above and not isinstance(r.get("search"), str):
            add("warning", rid, f"disturbed: {interference.evidence(r)} (over the {disturbed_above:.0%} a run "
                                "may lose), kept: the campaign did not redo disturbed runs when it ran",
                "the ratios are adjusted for the CPU lost to others where that is safe (see the findings); "
                "`benchlib doctor` says what this host's noise is and what to do about it", kind="interference")
    keys = [k for k in params if k in configs.columns and k not in ("topology", "config")]
    labels = {c.config: f"config {c.config} ({config_label(c, keys)})" for _, c in configs.iterrows()}
    out = _once_per_config(out, table, labels) + _error_rates(table, labels)
    # a configuration's own interval wider than target_halfwidth matters for its absolute TPS; when every ratio
    # against the baseline is settled, what the campaign compares is known, and it is information only
    compared = comparisons is not None and not comparisons.empty
    settled = compared and comparisons is not None and not (comparisons.verdict == "INCONCLUSIVE").any()
    for _, c in configs.iterrows():
        rate = c.get("rate")
        if isinstance(rate, (int, float)) and rate > 0 and c.tps_mean < (1 - SHORT_OF_RATE) * rate:
            add("warning", f"config {c.config} ({config_label(c, keys)})",
                f"held {c.tps_mean:.0f} of the {rate:g} transactions/s asked ({c.tps_mean / rate:.0%}): the open-loop "
                "load queued, so its latency measures the backlog, not a transaction",
                "a lower rate (the sustained-throughput search finds the highest it holds), or fewer servers on the "
                "host")
        if c.verdict != "AGREE":
            # only wider than the target: with ratios against a baseline, those are what the campaign is judged
            # on (the findings say which are settled and how many rounds would settle the others)
            quiet = settled or (compared and c.verdict == "ADD_RUNS" and bool(c.get("only_wide", False)))
            add("info" if quiet else "warning", f"config {c.config} ({config_label(c, keys)})",
                f"repetitions: {c.agreement}",
                ("every ratio against the baseline is settled; more rounds would narrow this configuration's own "
                 "interval" if settled else "the ratios against the baseline say what more rounds would settle; "
                 "this configuration's own throughput interval is wider than the target") if quiet
                else "add repetitions (campaign repetitions, or the adaptive mode)", kind="repetitions")
    return sorted_problems(pd.DataFrame(out, columns=["severity", "where", "what", "fix", "kind"]).fillna({"kind": ""}))


OUT_OF_LINE = 5.0


def _measured_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The ok runs judged on throughput (no fault, no rate search): the ones a condition per configuration is
    about."""
    return throughput_runs(table)


def _once_per_config(problems: list[dict[str, Any]], table: pd.DataFrame,
                     labels: dict[str, str]) -> list[dict[str, Any]]:
    """A per-run condition that holds on every run of a configuration (2 runs or more), said once for it."""
    ok = _measured_runs(table)
    config_of = dict(zip(ok.run_id, ok.config)) if "config" in ok else {}
    runs_of = ok.groupby("config").size().to_dict() if "config" in ok else {}
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for p in problems:
        if p["kind"] and p["where"] in config_of:
            groups.setdefault((config_of[p["where"]], p["kind"], p["severity"]), []).append(p)
    out: list[dict[str, Any]] = []
    merged: set[int] = set()
    for (config, kind, severity), ps in groups.items():
        n = runs_of.get(config, 0)
        if n < 2 or len(ps) < n:
            continue
        merged.update(id(p) for p in ps)
        whats = sorted({p["what"] for p in ps})
        what = whats[0] if len(whats) == 1 else f"{whats[0]} (and the like: {len(whats)} variants)"
        out.append({**ps[0], "where": labels.get(config, f"config {config}"), "what": f"every run ({n}): {what}"})
    return [p for p in problems if id(p) not in merged] + out


def _error_rates(table: pd.DataFrame, labels: dict[str, str]) -> list[dict[str, Any]]:
    """sysbench's ignored errors once per configuration, as a rate per 1,000 transactions: information where it is
    in line with the campaign, a warning where it is high or out of line (``ERRORS_WARN_PER_1000``,
    ``OUT_OF_LINE``)."""
    ok = _measured_runs(table)
    need = {"config", "summary_ignored_errors", "summary_transactions"}
    if ok.empty or not need <= set(ok.columns):
        return []
    ok = ok.assign(errs=pd.to_numeric(ok.summary_ignored_errors, errors="coerce").fillna(0),
                   trx=pd.to_numeric(ok.summary_transactions, errors="coerce").fillna(0))
    per = ok.groupby("config").agg(errs=("errs", "sum"), trx=("trx", "sum"), runs=("errs", "size"),
                                   hit=("errs", lambda e: int((e > 0).sum())),
                                   workload=("workload", "first") if "workload" in ok else ("errs", "size"))
    per["rate"] = 1000 * per.errs / per.trx.where(per.trx > 0)
    median = per.groupby("workload").rate.transform("median")
    out = []
    for config, c in per.iterrows():
        if not c.errs or pd.isna(c.rate):
            continue
        high = c.rate > ERRORS_WARN_PER_1000
        odd = c.rate >= ERRORS_NOTE_PER_1000 and c.rate >= OUT_OF_LINE * median[config]
        why = (f" (above {ERRORS_WARN_PER_1000:g} per 1,000)" if high else
               f" ({c.rate / median[config]:.0f}x the campaign's median configuration)" if odd and median[config] > 0
               else " (the other configurations had none)" if odd else "")
        out.append({"severity": "warning" if high or odd else "info", "where": labels.get(config, f"config {config}"),
                    "what": f"sysbench retried {int(c.errs)} transaction{'' if c.errs == 1 else 's'} (deadlocks, certification failures) in "
                            f"{c.hit} of {c.runs} runs: {c.rate:.2g} per 1,000 committed{why}",
                    "fix": "expected where writers conflict (several writers, or hot rows under many threads); "
                           "raw/sysbench.txt of a run shows the errors" if high or odd else "",
                    "kind": "errors"})
    return out


#: sysbench's ignored errors (deadlocks, certification failures, lock wait timeouts: each one a transaction
#: rolled back and retried) per 1,000 committed transactions above which a configuration gets a warning
ERRORS_WARN_PER_1000 = 10.0
#: ... or above which it does when its rate is OUT_OF_LINE times the campaign's median configuration's (of the
#: same workload) or more: a cluster that conflicts where the others do not
ERRORS_NOTE_PER_1000 = 1.0
