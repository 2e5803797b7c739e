"""A configuration's history across campaigns: change points found where the level moved and not where it did not
(simulated campaigns, fixed seeds), and the command on the recorded campaigns."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis.history import history
from tests.recorded import RECORDED


def _campaigns(rng, levels: list[float], day: float = 0.03, cov: float = 0.02, runs: int = 3) -> pd.DataFrame:
    """One campaign per level, made a day apart: each with its day's shift and ``runs`` runs of their own noise."""
    rows = []
    for c, level in enumerate(levels):
        shift = np.exp(rng.normal(0, day))
        for _ in range(runs):
            rows.append({"campaign": f"c{c:02d}", "campaign_path": f"/runs/c{c:02d}", "status": "ok",
                         "campaign_created_utc": f"2026-10-{c + 1:02d}T12:00:00Z",
                         "summary_tps": level * shift * (1 + cov * rng.standard_normal())})
    return pd.DataFrame(rows)


@pytest.mark.long
def test_a_steady_history_rarely_raises_a_change():
    rng = np.random.default_rng(39)
    false = sum(not history(_campaigns(rng, [1000.0] * 12)).changes.empty for _ in range(200))
    assert false / 200 <= 0.10, false  # 7.5% with these seeds


@pytest.mark.long
def test_a_step_of_fifteen_percent_is_found_where_it_happened():
    rng = np.random.default_rng(40)
    found = near = 0
    for _ in range(100):
        h = history(_campaigns(rng, [1000.0] * 6 + [850.0] * 6))
        found += not h.changes.empty
        near += any(abs(int(c.at[1:]) - 6) <= 1 and 0.78 < c.ratio < 0.92 for c in h.changes.itertuples())
    assert found >= 90 and near >= 85, (found, near)


def test_few_campaigns_give_points_and_say_why_there_is_no_change():
    rng = np.random.default_rng(1)
    h = history(_campaigns(rng, [1000.0, 700.0, 700.0]))
    assert len(h.points) == 3 and h.changes.empty and "need 4" in h.notes[0]
    assert (h.points.ci_low < h.points["mean"]).all() and (h.points["mean"] < h.points.ci_high).all()
    assert list(h.points.campaign) == ["c00", "c01", "c02"]  # oldest first
    failed = _campaigns(rng, [1000.0] * 4).assign(status="failed")
    assert history(failed).points.empty and "nothing to follow" in history(failed).words()


@pytest.mark.long
def test_the_history_command_on_the_recorded_campaigns(tmp_path):
    chart = tmp_path / "history.html"
    done = subprocess.run([sys.executable, "-m", "benchlib.cli", "history", str(RECORDED), "-m", "topology=async",
                           "-m", "threads=16", "-m", "workload=oltp_read_write", "-m", "keys=special:1:75",
                           "--chart", str(chart)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # quick x3, demo-vm x3, replica-count, demo, and workloads-keys's runs under sysbench's default keys (chosen there)
    assert "9 campaign(s), oldest first" in done.stdout and "quick-busy" in done.stdout and "workloads-keys" in done.stdout
    assert chart.is_file() and (tmp_path / "plotly.min.js").is_file()
    bad = subprocess.run([sys.executable, "-m", "benchlib.cli", "history", str(RECORDED), "--measure", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no column nope" in bad.stderr and "Traceback" not in bad.stderr
