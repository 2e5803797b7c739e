"""The history analysis from per-run tables (no lab): rates and bounds per configuration, refusals in words, a
configuration where no write committed said so, what published analyses found set beside what was seen, the chart."""

from __future__ import annotations

import pandas as pd

from benchlib.axes.history.analysis import findings, published, summary
from benchlib.axes.history.charts import anomaly_rates, rates_frame
from benchlib.axes.history.checker import KINDS


def _run(cluster: str, isolation: str, committed: int, wrote: int, refused: str = "", **kinds: int) -> dict:
    counts = {k: 0 for k in KINDS}
    counts.update({k.replace("_", " "): n for k, n in kinds.items()})
    return {"cluster": cluster, "isolation": isolation, "committed": committed, "wrote": wrote, "failed": 0,
            "unknown": 0, "refused": refused, **counts,
            **{f"ex:{k}": f"an example of {k}" for k, n in counts.items() if n}}


RUNS = pd.DataFrame([
    _run("galera", "repeatable-read", 40_000, 30_000, "1213: 900", lost_update=3, **{"G-single-realtime": 120}),
    _run("galera", "repeatable-read", 40_000, 30_000, "1213: 1100", lost_update=5, **{"G-single-realtime": 100}),
    _run("gr", "repeatable-read", 50_000, 35_000, **{"G2-item": 40}),
    _run("grmulti", "serializable", 2_000, 0, "3098: 6000"),
])
SYSTEMS = {"galera": "galera", "gr": "group_replication", "grmulti": "group_replication"}


def test_rates_per_configuration_pool_the_runs_and_a_kind_not_seen_gets_its_upper_bound():
    s = summary(None, RUNS).set_index("cluster")
    assert s.loc["galera", "runs"] == 2 and s.loc["galera", "lost update"] == 8
    assert abs(s.loc["galera", "lost update per_100k"] - 10.0) < 1e-9
    assert s.loc["galera", "lost update low"] < 10 < s.loc["galera", "lost update high"]
    assert 0 < s.loc["gr", "lost update upper"] < 1e5 * 3.7 / 50_000
    assert s.loc["galera", "refused"] == "1213: 2,000 (deadlock; on Galera also a certification failure)"


def test_a_configuration_where_no_write_committed_claims_no_bound_and_names_the_refusal():
    said = findings(summary(None, RUNS))
    multi = next(x for x in said if x.startswith("grmulti"))
    assert "no transaction that appended committed" in multi and "at most" not in multi
    assert "3098: 6,000 (refused by a plug-in: Group Replication's update-everywhere checks refuse SERIALIZABLE" in multi


def test_what_a_published_analysis_found_is_set_beside_what_was_seen_and_what_was_not():
    said = published(summary(None, RUNS), SYSTEMS)
    galera = next(x for x in said if "Galera Cluster 12.1.2" in x)
    assert "on galera, lost update seen (10 per 100,000" in galera
    assert "stale reads (G-single-realtime) seen (275 per 100,000" in galera
    mysql = next(x for x in said if "MySQL 8.0.34" in x)
    assert "on gr, G2-item seen" in mysql and "lost update not seen (at most" in mysql
    assert "grmulti" not in mysql  # serializable, and nothing written: nothing to set beside REPEATABLE READ's


def test_the_chart_draws_a_whisker_where_seen_a_hollow_bound_where_not_and_nothing_where_nothing_was_written():
    frame = rates_frame(summary(None, RUNS))
    fig = anomaly_rates(frame)
    labels = list(fig.layout.yaxis.ticktext)
    assert "grmulti · serializable (no write committed)" in labels
    lost = [t for t in fig.data if t.name == "lost update"]
    filled = next(t for t in lost if t.marker.symbol == "circle")
    hollow = next(t for t in lost if t.marker.symbol == "circle-open")
    assert list(filled.x) == [10.0] and filled.error_x.array is not None
    assert len(hollow.x) == 1 and hollow.x[0] == frame.query("kind == 'lost update' and label == 'gr · repeatable-read'"
                                                              ).upper.iloc[0]
    multi_row = labels.index("grmulti · serializable (no write committed)")
    assert not any(abs(y - multi_row) < 0.5 for t in fig.data for y in t.y)
