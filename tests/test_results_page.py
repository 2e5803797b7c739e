"""docs/results.md from its data: the figures of its paragraphs and tables that name a recorded campaign or a file of
data/measured/ are recomputed here from it and compared at the printed precision; what was not recorded says so.
(Sections checked so far: the causal-read table, the main job, the disturbed-campaign table.)"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.analysis.staleness import rate_bounds

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "results.md").read_text()
SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
pytestmark = pytest.mark.long


def _sci(x: float) -> str:
    """As the page prints a small share: 2 significant digits times a power of ten (0 as 0)."""
    if x == 0:
        return "0"
    mant, exp = f"{x:.1e}".split("e")
    return f"{mant}×10" + str(int(exp)).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))


def _numbers(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`", "", text)  # names and commands as written
    return [m.replace(",", "") for m in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", text)]


def _matches(figure: str, said: list[str]) -> bool:
    """``figure`` is one of the numbers ``said`` at its printed precision."""
    d = len(figure.split(".")[1]) if "." in figure else 0
    return any(round(float(s), d) == float(figure) for s in said)


def test_the_causal_read_table_is_its_csv_recomputed():
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and "×10" in line]
    table = pd.read_csv(ROOT / "data" / "measured" / "causal-reads.csv")
    assert len(rows) == len(table) == 7
    for r in table.itertuples():
        b = rate_bounds(r.stale / r.reads, r.reads, int(r.runs), r.design_effect)
        assert (b.low, b.high, b.upper) == pytest.approx((r.low, r.high, r.upper), rel=1e-5), r
        cells = f"| {r.reads:,} | {r.stale} | {_sci(b.low)}–{_sci(b.high)} | {_sci(b.upper)} | {r.read_ms_p50:.2f} ms |"
        cells = cells.replace(f"| 0–", "| 0–")
        assert sum(cells in line for line in rows) >= 1, f"no row of the page reads {cells}"


def _paragraph(start: str) -> str:
    i = PAGE.index(start)
    end = PAGE.find("\n- **", i + 1)
    return PAGE[i:end if end > 0 else None].split("\n## ")[0]


def test_the_main_job_is_the_recorded_demo_campaign_s():
    from benchlib.analysis.campaign import analyze
    from benchlib.report import findings

    text = _paragraph("- **The main job** (recorded as `data/campaigns/demo`")
    recorded, _, unrecorded = text.partition("Earlier runs of the main job")
    assert "not recorded" in unrecorded  # the runs before the recorded one are said to be no finding
    campaign = ROOT / "data" / "campaigns" / "demo"
    said = " ".join(s for part in findings(analyze(campaign, baseline="async"), campaign).values() for s in part)
    numbers = _numbers(said) + ["270"]  # the campaign's budget, from its spec
    missing = [f for f in _numbers(recorded) if not _matches(f, numbers)]
    assert not missing, f"figures of the main job's paragraph its campaign does not give: {missing}"


def test_the_recorded_rows_of_the_disturbed_campaign_table_are_their_campaigns():
    from benchlib.analysis.campaign import analyze

    for name in ("quick-disturbed", "quick"):
        row = next(line for line in PAGE.splitlines() if f"(`data/campaigns/{name}`)" in line)
        shown = re.findall(r"(\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]", row)
        c = analyze(ROOT / "data" / "campaigns" / name, baseline="async").comparisons
        c = c[(c.workload == "oltp_read_write") & (c.metric == "tps")].sort_values(["cluster", "threads"])
        got = [(f"{r.ratio:.2f}", f"{r.ci_low:.2f}", f"{r.ci_high:.2f}") for r in c.itertuples()]
        assert shown == got, (name, shown, got)


def test_the_power_cut_table_is_its_campaign_and_another_seed_agrees():
    """The power cut at random moments: the table's rows recomputed from data/campaigns/power-cut; the second seed's
    cuts (data/measured/power-cut-seed48.csv) give a median loss whose 95% interval overlaps the first's."""
    from benchlib.analysis.campaign import analyze
    from benchlib.analysis.failover import quantile_interval, share_interval

    m = analyze(ROOT / "data" / "campaigns" / "power-cut", baseline="async").axis("fault").failover
    assert m.fault_moment_s.between(3, 6).all() and m.fault_moment_s.nunique() > 0.9 * len(m)  # drawn (to the ms)
    rows = {line.split("|")[1].strip(): line.strip() for line in PAGE.splitlines()
            if re.match(r"\s*\| [012] \| \d+ of 20", line)}
    for setting, g in m.groupby("innodb_flush_log_at_trx_commit"):
        lost = g.lost.astype(int)
        k, n = int((lost > 0).sum()), len(lost)
        lo, hi = share_interval(k, n)
        positions = [set(re.findall(r"seqno (\d+)", h.split("recovered positions")[1].split("(most")[0]))
                     for h in g.heal_how]
        same, ist = sum(len(p) == 1 for p in positions), int(g.heal_how.str.contains("IST").sum())
        if lost.sum():
            mlo, mhi = quantile_interval(lost.to_numpy(float), 0.5)
            losses = f"{lost.sum()}, {lost.median():g} ({mlo:g}–{mhi:g}), {lost.max()}"
        else:
            losses = "0"
        want = (f"| {setting} | {k} of {n} ({100 * lo:.0f}–{100 * hi:.0f}%) | {losses} | {same} of {n} | "
                f"{ist} of {n} |")
        assert rows[str(setting)] == want, (rows[str(setting)], want)
    other = pd.read_csv(ROOT / "data" / "measured" / "power-cut-seed48.csv")
    assert other.fault_moment_s.between(3, 6).all() and len(other) == 20
    zero = m[m.innodb_flush_log_at_trx_commit == 0].lost.to_numpy(float)
    a, b = quantile_interval(zero, 0.5), quantile_interval(other.lost.to_numpy(float), 0.5)
    assert a[0] <= b[1] and b[0] <= a[1], (a, b)  # the two seeds' intervals overlap
    said = " ".join(_paragraph("- **A whole Galera cluster losing power**").split())
    assert f"the median was {np.median(other.lost):g} (95% {b[0]:g}–{b[1]:g}), against {np.median(zero):g} " \
           f"({a[0]:g}–{a[1]:g})" in said, said
