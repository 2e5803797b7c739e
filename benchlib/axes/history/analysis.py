"""The history axis's analysis: each ok run's history checked (``benchlib.axes.history.checker.check``), then per
cluster and configuration (isolation level, and what else the campaign varied): the committed, refused and unknown
transactions, the refusals by error number, and each anomaly's rate per 100,000 committed transactions with its 95%
interval, runs as the unit (``benchlib.analysis.staleness.rare_rate``: exact at a design effect of 1; the one-sided
upper bound when none was seen), with an example of each kind found, in words."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from benchlib.axes.history.checker import KINDS, check
from benchlib.axes.history.checker.words import counted
from benchlib import catalogue
from benchlib.analysis.staleness import rare_rate
from benchlib.error_numbers import said
from benchlib.axis import AxisAnalysis

__all__ = ["HistoryAnalysis", "findings", "per_run", "published", "summary"]

CONFIG = ["isolation", "history_consistency", "workload", "threads", "rate", "distribution"]


def per_run(a: Any) -> pd.DataFrame:
    """One row per ok run with a history: its configuration, the transactions committed, refused (``failed``) and
    unknown, the refusals by error number (``refused``, '1213: 40, 1020: 3'), each kind's count, and its first
    example in words (``ex:KIND``)."""
    runs = a.runs[a.runs.status == "ok"] if "status" in a.runs else a.runs
    history = a.frames.get("history", pd.DataFrame())
    if runs.empty or history.empty:
        return pd.DataFrame()
    by_run = dict(tuple(history.groupby(history.run_id.astype(str), sort=False)))
    rows = []
    for r in runs.itertuples():
        h = by_run.get(str(r.run_id))
        if h is None or h.empty:
            continue
        got = check(h.drop(columns=["run_id"]), examples=1)
        wrote = h[(h.outcome == "ok") & (h.f == "append")].txn.nunique()
        refused = h[h.outcome == "fail"].drop_duplicates("txn").error.astype(str).value_counts()
        rows.append({"run_id": r.run_id, "cluster": r.cluster,
                     **{k: getattr(r, k) for k in CONFIG + ["repetition"] if hasattr(r, k)},
                     "committed": got.committed, "wrote": int(wrote), "failed": got.failed, "unknown": got.unknown,
                     "refused": ", ".join(f"{c}: {n}" for c, n in refused.items()),
                     **{k: got.counts.get(k, 0) for k in KINDS},
                     **{f"ex:{e.kind}": e.words for e in got.examples}})
    return pd.DataFrame(rows)


def _keys(m: pd.DataFrame) -> list[str]:
    return ["cluster"] + [k for k in CONFIG if k in m and (k == "isolation" or m[k].nunique(dropna=False) > 1)]


def summary(a: Any, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per configuration: runs, transactions, refusals by number, and per kind its count, its rate per
    100,000 committed transactions with the 95% interval and one-sided upper bound, and an example (``runs``: the
    ``per_run`` table when the caller has it: each run's history is checked once)."""
    m = per_run(a) if runs is None else runs
    if m.empty:
        return pd.DataFrame()
    keys = _keys(m)
    rows = []
    for key, g in m.groupby(keys, sort=True, dropna=False):
        row: dict[str, Any] = {**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "runs": len(g),
                               "committed": int(g.committed.sum()), "wrote": int(g.wrote.sum()),
                               "failed": int(g.failed.sum()),
                               "unknown": int(g.unknown.sum())}
        refused: dict[str, int] = {}
        for text in g.refused:
            for part in filter(None, str(text).split(", ")):
                code, n = part.split(": ")
                refused[code] = refused.get(code, 0) + int(n)
        row["refused"] = ", ".join(said(c, n) for c, n in sorted(refused.items(), key=lambda x: -x[1]))
        for k in KINDS:
            r = rare_rate(g[k].to_numpy(), g.committed.to_numpy())
            row.update({k: int(g[k].sum()), f"{k} per_100k": 1e5 * r.fraction, f"{k} low": 1e5 * r.low,
                        f"{k} high": 1e5 * r.high, f"{k} upper": 1e5 * r.upper})
            ex = g[f"ex:{k}"].dropna() if f"ex:{k}" in g else pd.Series(dtype=str)
            row[f"{k} example"] = ex.iloc[0] if len(ex) else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _n(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def findings(table: pd.DataFrame) -> list[str]:
    """A sentence per configuration: what was seen (each kind's rate and interval, an example), what was not (the
    upper bound of the commonest kinds), the refusals."""
    out = []
    for _, r in table.iterrows():
        name = ", ".join(str(r[k]) for k in r.index if k in ["cluster"] + CONFIG)
        seen = [k for k in KINDS if r[k] > 0]
        said = [f"{counted(int(r[k]), k)} ({_n(r[f'{k} per_100k'])} per 100,000, 95% {_n(r[f'{k} low'])}–"
                f"{_n(r[f'{k} high'])})" for k in seen]
        unseen = [k for k in ("lost update", "G-single", "G2-item", "G1c", "G-single-realtime") if r[k] == 0]
        bound = (f"no {', '.join(unseen)} (each at most {_n(r[f'{unseen[0]} upper'])} per 100,000, one-sided 95%)"
                 if unseen else "")
        if not r.wrote:
            bound = "no transaction that appended committed: only reads did, so no anomaly could show (no bound)"
        refused = f"; refused by the server, by error number: {r.refused}" if r.refused else ""
        example = f". For example: {r[f'{seen[0]} example']}" if seen and r[f"{seen[0]} example"] else ""
        head = f"{name}: {r.committed:,} committed transactions in {int(r.runs)} run{'s' if r.runs != 1 else ''}"
        out.append(f"{head}: {'; '.join(said + ([bound] if bound else []))}{refused}{example}")
    return out


def _kind(k: str) -> str:
    return f"stale reads ({k})" if k.endswith("-realtime") else k


def published(table: pd.DataFrame, systems: dict[str, str]) -> list[str]:
    """Per system with a published analysis (``catalogue.SystemFacts.published``): what it found, and per cluster of
    that system under REPEATABLE READ (the level those analyses tested) whether each kind it reported was seen here,
    at what rate, or its upper bound when not (``systems``: cluster -> system)."""
    out = []
    rr = table[table.isolation == "repeatable-read"] if "isolation" in table else table.iloc[0:0]
    for system in dict.fromkeys(systems.values()):
        facts = catalogue.get(system)
        rows = rr[rr.cluster.map(systems) == system]
        if facts is None or not facts.published or rows.empty:
            continue
        parts = []
        for _, r in rows.iterrows():
            if not r.wrote:
                continue
            seen = [f"{_kind(k)} seen ({_n(r[f'{k} per_100k'])} per 100,000, 95% {_n(r[f'{k} low'])}–{_n(r[f'{k} high'])})"
                    for k in facts.published_kinds if r[k] > 0]
            unseen = [f"{_kind(k)} not seen (at most {_n(r[f'{k} upper'])} per 100,000)"
                      for k in facts.published_kinds if r[k] == 0]
            parts.append(f"on {r.cluster}, {', '.join(seen + unseen)}")
        if parts:
            out.append(f"{facts.published}. Here, under REPEATABLE READ: {'; '.join(parts)}.")
    return out


class HistoryAnalysis(AxisAnalysis):
    """``a.axis("history")``: ``per_run``, ``summary`` (per configuration), ``findings``, ``published``."""

    axis = "history"

    @cached_property
    def per_run(self) -> pd.DataFrame:
        return per_run(self.a)

    @cached_property
    def summary(self) -> pd.DataFrame:
        return summary(self.a, self.per_run)

    @cached_property
    def measures(self) -> pd.DataFrame:
        return self.summary

    @cached_property
    def findings(self) -> list[str]:
        """A sentence per configuration, then what published analyses found set beside them."""
        return findings(self.summary) + self.published if not self.summary.empty else []

    @cached_property
    def published(self) -> list[str]:
        """What published analyses found against what these histories show (``published``)."""
        if self.summary.empty or "system" not in self.a.runs:
            return []
        return published(self.summary, dict(zip(self.a.runs.cluster.astype(str), self.a.runs.system.astype(str))))


