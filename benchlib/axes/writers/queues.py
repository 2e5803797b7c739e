"""Flow control and queues on each writer node of a writers run, from what the sampler records every second on every
node (the ``cluster`` frame): on Galera, the share of the load the node was paused by flow control
(``wsrep_flow_control_paused_ns``), the flow-control messages it sent (it asked the others to pause: its receive
queue was past the limit) and its receive queue; on Group Replication, the time its transactions spent throttled by
the group's flow control a second of load (``Gr_flow_control_throttle_time_sum``, summed over its transactions: it
can exceed 1 s) and its backlog (certifier and applier queues). Per run and writer node, then per configuration and
node (medians over the runs), and in words: which writer node the cluster waited for."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["per_node", "queue_words", "summary"]

#: metric -> (column, kind): a counter's increase over the load (per second of it, or as a share of it), a gauge's mean
COUNTERS = {"wsrep_flow_control_paused_ns": "paused", "wsrep_flow_control_sent": "fc_sent",
            "gr_throttle_time_ns": "throttled"}
GAUGES = {"wsrep_local_recv_queue": "queue", "gr_backlog": "queue"}
COLUMNS = ["paused", "fc_sent", "throttled", "queue_mean", "queue_max"]


def _increase(g: pd.DataFrame) -> float | None:
    """A counter's increase over ``g`` (its rows in the load window, in time order); None across a reset."""
    if len(g) < 2 or bool(g.reset.iloc[1:].any()):
        return None
    return float(g.value.iloc[-1] - g.value.iloc[0])


def per_node(a: Any, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run of ``runs`` (the writers axis's ``per_run``) and writer node: ``paused`` (share of the load,
    Galera), ``fc_sent`` (messages), ``throttled`` (s a second of load, Group Replication), ``queue_mean`` and
    ``queue_max``; NaN where the node's system has no such counter."""
    cl = a.frames.get("cluster", pd.DataFrame())
    seconds = a.frames.get("writer_seconds", pd.DataFrame())
    if runs.empty or cl.empty or seconds.empty:
        return pd.DataFrame()
    cl = cl[cl.metric.isin(list(COUNTERS) + list(GAUGES))]
    window = a.runs.set_index(a.runs.run_id.astype(str))[["load_start_s", "load_end_s"]]
    rows = []
    for r in runs.itertuples():
        start, end = (float(x) for x in window.loc[str(r.run_id)])
        nodes = sorted(seconds[seconds.run_id.astype(str) == str(r.run_id)].node.unique())
        d = cl[(cl.run_id.astype(str) == str(r.run_id)) & (cl.t_s >= start) & (cl.t_s <= end)]
        for node in nodes:
            mine = d[d.node == node].sort_values("t_s")
            row: dict[str, Any] = {"run_id": r.run_id, "node": node, **{c: float("nan") for c in COLUMNS}}
            for metric, column in COUNTERS.items():
                up = _increase(mine[mine.metric == metric])
                if up is not None:
                    row[column] = up / 1e9 / (end - start) if metric.endswith("_ns") else up
            for metric in GAUGES:
                g = mine[mine.metric == metric].value
                if len(g):
                    row["queue_mean"], row["queue_max"] = float(g.mean()), float(g.max())
            rows.append(row)
    out = pd.DataFrame(rows)
    return out if out.empty else runs.drop(columns=[c for c in COLUMNS if c in runs]).merge(out, on="run_id")


def summary(nodes: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per configuration (``keys``) and writer node: the medians over its runs of ``per_node``'s columns."""
    if nodes.empty:
        return pd.DataFrame()
    return nodes.groupby([*keys, "node"], dropna=False)[COLUMNS].median().reset_index()


def queue_words(rows: pd.DataFrame) -> str:
    """One configuration's writer nodes (``summary``'s rows), in words: what flow control did on each, and the queue
    each had ('' when the sampler recorded neither)."""
    rows = rows.sort_values("node")
    names = ", ".join(rows.node)
    said = []
    if rows.paused.notna().any():
        said.append("flow control paused them " + ", ".join(f"{100 * p:.0f}%" for p in rows.paused.fillna(0))
                    + " of the load (" + names + "; messages sent " + ", ".join(f"{s:,.0f}" for s in
                                                                               rows.fc_sent.fillna(0)) + ")")
    if rows.throttled.notna().any():
        said.append("their transactions spent " + ", ".join(f"{t:.2f}" for t in rows.throttled.fillna(0))
                    + " s throttled by the group's flow control a second of load (" + names + ")")
    if rows.queue_mean.notna().any():
        said.append("their queues held a mean " + ", ".join(f"{q:.1f}" for q in rows.queue_mean.fillna(0))
                    + f" transactions (at most {rows.queue_max.max():,.0f})")
    return "; ".join(said)
