"""The writers axis's analysis: per cluster and configuration of the writers (nodes, keys, retries) and of the load,
the commits a second the clients counted (a transaction given up is no commit), the conflicts per 1,000 commits with
their 95% interval (runs as the unit, ``benchlib.analysis.staleness.rare_rate`` on the share of attempts the server
rolled back), the errors by number, which server counters added up to the clients' errors on every writer node of
every run, the commits a second against one writer node of the same cluster (a ratio with its interval,
``benchlib.analysis.compare.ratio``), and what flow control did on each writer node and its queue
(``benchlib.axes.writers.queues``): in words."""

from __future__ import annotations

import math
import re
from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.analysis import mechanism, why
from benchlib.analysis.compare import ratio
from benchlib.analysis.staleness import rare_rate
from benchlib.axes.writers import queues
from benchlib.axis import AxisAnalysis

__all__ = ["WritersAnalysis", "findings", "per_run", "summary"]

WRITERS = ["writer_nodes", "writer_keys", "retry"]
LOAD = ["workload", "threads", "rate", "distribution"]


def per_run(a: Any) -> pd.DataFrame:
    """One row per ok run of the axis: its keys, commits a second, attempts, errors, given up, and the error numbers'
    counts (``e1213`` ...), from its ``writer_seconds`` and ``writer_errors`` frames."""
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    seconds = a.frames.get("writer_seconds", pd.DataFrame())
    if runs.empty or "writer_nodes" not in runs or seconds.empty:
        return pd.DataFrame()
    errors = a.frames.get("writer_errors", pd.DataFrame())
    rows = []
    for r in runs[runs.writer_nodes.notna()].itertuples():
        s = seconds[seconds.run_id.astype(str) == str(r.run_id)]
        if s.empty:
            continue
        load_s = float(r.load_end_s - r.load_start_s)
        e = errors[errors.run_id.astype(str) == str(r.run_id)] if not errors.empty else errors
        by_code = e.groupby("code")["count"].sum() if not e.empty else pd.Series(dtype=int)
        rows.append({"run_id": r.run_id, "cluster": r.cluster,
                     **{k: getattr(r, k) for k in WRITERS + LOAD + ["repetition"] if hasattr(r, k)},
                     "load_s": load_s, "committed": int(s.committed.sum()), "errors": int(s.errors.sum()),
                     "given_up": int(s.given_up.sum()), "commits_per_s": float(s.committed.sum()) / load_s,
                     "reconciled": getattr(r, "writers_reconciled", None),
                     "server_rollbacks": getattr(r, "writers_server_rollbacks", None),
                     **{f"e{int(c)}": int(n) for c, n in by_code.items()}})
    return pd.DataFrame(rows)


def _keys(m: pd.DataFrame) -> list[str]:
    return (["cluster"] + [k for k in WRITERS if k in m]
            + [k for k in LOAD if k in m and m[k].nunique(dropna=False) > 1])


def summary(a: Any) -> pd.DataFrame:
    """One row per configuration (``per_run`` grouped): runs, commits a second (median), conflicts per 1,000 commits
    with its interval, errors by number, the counters that reconciled in every run, and the ratio of commits a second
    to one writer node of the same cluster and load."""
    m = per_run(a)
    if m.empty:
        return pd.DataFrame()
    keys = _keys(m)
    m = m.assign(retry=m.retry.astype(object).where(m.retry.notna(), "for ever")) if "retry" in m else m
    nodes = queues.per_node(a, m)
    costs: pd.DataFrame | None = None  # what bound the host, per run: read once, when a ratio to one writer needs it
    rows = []
    for key, g in m.groupby(keys, sort=True, dropna=False):
        head = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        mine = nodes[nodes.run_id.isin(g.run_id)] if not nodes.empty else nodes
        rate = rare_rate(g.errors.to_numpy(), (g.committed + g.errors).to_numpy())
        per_k = (lambda p: 1000 * p / (1 - p) if p == p and p < 1 else math.nan)
        codes = {c: int(g[c].sum()) for c in sorted(c for c in g.columns if c.startswith("e") and c[1:].isdigit())}
        agreed = [set(str(x).split(", ")) if isinstance(x, str) and x else set() for x in g.reconciled]
        row = {**head, "runs": len(g), "commits_per_s": float(g.commits_per_s.median()),
               "committed": int(g.committed.sum()), "errors": int(g.errors.sum()), "given_up": int(g.given_up.sum()),
               "conflicts_per_1000": per_k(rate.fraction), "conflicts_low": per_k(rate.low),
               "conflicts_high": per_k(rate.high), "conflicts_upper": per_k(rate.upper),
               "errors_by_code": ", ".join(f"{c[1:]}: {n:,}" for c, n in codes.items() if n),
               "reconciled": ", ".join(sorted(set.intersection(*agreed))) if agreed else "",
               **_rollback_gap(g),
               "queues": queues.queue_words(queues.summary(mine, [])) if not mine.empty else ""}
        one = m[(m.cluster == head["cluster"]) & (m.writer_nodes == 1)]
        for k in LOAD:
            if k in head:
                one = one[one[k] == head[k]]
        if head.get("writer_nodes", 1) != 1 and len(one) and len(g):
            r = ratio(g.commits_per_s.to_numpy(), one.commits_per_s.to_numpy())
            costs = mechanism.per_run(a) if costs is None else costs
            row.update(vs_one=r.ratio, vs_one_low=r.ci_low, vs_one_high=r.ci_high, vs_one_verdict=r.verdict,
                       **_bound(costs, g, ""), **_bound(costs, one, "one_"))
        rows.append(row)
    return pd.DataFrame(rows)


def _bound(costs: pd.DataFrame, runs: pd.DataFrame, prefix: str) -> dict[str, Any]:
    """What bound the host over ``runs`` (``benchlib.analysis.mechanism``: the commonest limit, the CPUs busy and the
    host's CPU a transaction, medians), keyed with ``prefix``; nothing where the runs have no host metrics."""
    mine = costs[costs.run_id.isin(runs.run_id.astype(str))] if len(costs) else costs
    if mine.empty or mine["limit"].eq("").all():
        return {}
    return {f"{prefix}limit": str(mine["limit"].mode().iloc[0]), f"{prefix}busy": float(mine.busy.median()),
            f"{prefix}host_cpu_ms": float(mine.host_cpu_ms.median())}


def _bound_words(r: pd.Series) -> str:
    """The hosts' limits of a configuration and of one writer node (``_bound``), in words."""
    if not isinstance(r.get("limit"), str) or not isinstance(r.get("one_limit"), str):
        return ""
    n = int(r.writer_nodes)
    if r.limit == r.one_limit == "CPU":
        said = (f"both CPU-bound (the host's CPUs {r.busy:.0%} busy with {n} writer nodes, {r.one_busy:.0%} with "
                "one)")
    else:
        said = (f"{n} writer nodes {why.limit_words(r.limit, {'busy': r.busy})}, one "
                f"{why.limit_words(r.one_limit, {'busy': r.one_busy})}")
    cpu = ""
    if all(math.isfinite(x) for x in (r.get("host_cpu_ms", math.nan), r.get("one_host_cpu_ms", math.nan))):
        cpu = f": a transaction took {r.host_cpu_ms:.2f} ms of the host's CPU against {r.one_host_cpu_ms:.2f}"
    return f"; {said}{cpu}"


def _rollback_gap(g: pd.DataFrame) -> dict[str, float]:
    """Over a configuration's runs with errors, the least and most that the writer nodes' Handler_rollback (summed)
    exceeded the clients' errors by (a run: a conflict's rollback is not always one: a local deadlock's can be two
    or three, a Galera transaction replayed after a brute-force abort one the client never sees)."""
    if "server_rollbacks" not in g:
        return {}
    gap = (g.server_rollbacks - g.errors)[(g.errors > 0) & g.server_rollbacks.notna()]
    return {"rollbacks_over_low": float(gap.min()), "rollbacks_over_high": float(gap.max())} if len(gap) else {}


def _name(r: pd.Series) -> str:
    keys = "each on its own keys" if r.get("writer_keys") == "disjoint" else "on shared keys"
    n = int(r.writer_nodes)
    retry = r.get("retry", "for ever")
    retried = "retried for ever" if retry == "for ever" else f"given up after {int(retry)} retries"
    load = ", ".join(f"{k} {r[k]}" for k in LOAD if k in r.index and r[k] == r[k] and r[k] is not None)
    return (f"{r.cluster}, {n} writer node{'s' if n != 1 else ''} {keys if n > 1 else ''}".rstrip()
            + f" ({retried}{', ' + load if load else ''})")


def _counted(reconciled: str, by_code: str, over: tuple[float, float] | None = None) -> str:
    """Which server counters added up to the clients' errors (``summary``'s ``reconciled``), in words; the error
    numbers none counted; with none, by how much Handler_rollback exceeded them (``over``: least and most a run)."""
    names = [x for x in reconciled.split(", ") if x]
    plain = [x for x in names if " = " not in x]
    if plain:
        return f"; the servers' {', '.join(plain)} equalled the clients' errors on every writer node of every run"
    pairs = [x.split(" = ", 1) for x in names if " = " in x]
    if not pairs:
        gap = ""
        if over is not None and all(x == x for x in over):
            signed = over[0] < 0
            low, high = (f"{x:+,.0f}" if signed else f"{x:,.0f}" for x in over)
            by = low if low == high else f"{low} to {high}"
            gap = (f" (Handler_rollback, summed over the writer nodes, {'differed from' if signed else 'exceeded'} "
                   f"them by {by} a run)")
        return f"; no server counter equalled the clients' errors on every writer node of every run{gap}"
    covered = {code for p in pairs for code in re.findall(r"\d{4}", p[1])}
    rest = [c.split(":")[0] for c in by_code.split(", ") if c and c.split(":")[0] not in covered]
    each = [f"{c} equalled {what}" for c, what in pairs]
    said = each[0] if len(each) == 1 else ", ".join(each[:-1]) + ", and " + each[-1]
    unseen = f" (no server counter counted the {' and '.join(rest)} errors)" if rest else ""
    return f"; on every writer node of every run, {said}{unseen}"


def findings(a: Any, table: pd.DataFrame | None = None) -> list[str]:
    """``summary`` (``table``, when the caller has it already) in words, a sentence per configuration."""
    out = []
    for _, r in (summary(a) if table is None else table).iterrows():
        # on one writer node nothing else writes: what the server rolls back is its own transactions' deadlocks
        several = r.writer_nodes > 1
        what = "conflicts" if several else "transactions rolled back (deadlocks among its own)"
        if r.errors == 0:
            conflicts = (f"no {'conflict' if several else 'transaction rolled back'} in {r.committed:,} commits (95% "
                         f"bound: at most {r.conflicts_upper:.2g} per 1,000 commits)")
        else:
            conflicts = (f"{r.conflicts_per_1000:.3g} {what} per 1,000 commits (95% {r.conflicts_low:.3g}–"
                         f"{r.conflicts_high:.3g}; errors {r.errors_by_code})")
        given = f"; {r.given_up:,} transactions given up after their retries" if r.given_up else ""
        vs = ""
        if r.get("vs_one") == r.get("vs_one"):
            ci = (f"95% {r.vs_one_low:.2f}–{r.vs_one_high:.2f}: {r.vs_one_verdict.lower().replace('_', ' ')}"
                  if math.isfinite(r.vs_one_low) and math.isfinite(r.vs_one_high) else
                  "no interval: two runs a side give one")
            vs = f"; {r.vs_one:.2f}× the commits a second of one writer node ({ci}){_bound_words(r)}"
        counted = _counted(r.reconciled, r.errors_by_code, (r.get("rollbacks_over_low", math.nan),
                                                              r.get("rollbacks_over_high", math.nan)))
        waits = f"; {r.queues}" if r.get("queues") else ""
        out.append(f"{_name(r)}: {r.commits_per_s:,.0f} commits a second (median of {int(r.runs)} run"
                   f"{'s' if r.runs != 1 else ''}){vs}; {conflicts}{given}{counted if r.errors else ''}{waits}")
    return out


class WritersAnalysis(AxisAnalysis):
    """``a.axis("writers")``: ``per_run``, ``summary`` (per configuration), ``queues`` (per configuration and writer
    node), ``findings``."""

    axis = "writers"

    @cached_property
    def per_run(self) -> pd.DataFrame:
        return per_run(self.a)

    @cached_property
    def summary(self) -> pd.DataFrame:
        return summary(self.a)

    @cached_property
    def measures(self) -> pd.DataFrame:
        return self.summary

    @cached_property
    def queues(self) -> pd.DataFrame:
        """Flow control and queues per configuration and writer node (``benchlib.axes.writers.queues``)."""
        m = self.per_run
        return queues.summary(queues.per_node(self.a, m), _keys(m)) if not m.empty else pd.DataFrame()

    @cached_property
    def findings(self) -> list[str]:
        return findings(self.a, self.summary)  # the summary once, queues and all

