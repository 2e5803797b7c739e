"""docs/results.md from its data: the figures of its paragraphs and tables that name a recorded campaign or a file of
data/measured/ are recomputed here from it and compared at the printed precision; what was not recorded says so.
Every other figure of the page is either one its campaign gives (its findings, each study claim as judged, its spec)
or in a sentence, bullet or section that says it was not recorded."""

from __future__ import annotations

import json
import re
import sys
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


def test_the_causal_read_table_is_its_csv_recomputed():
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and "×10" in line]
    table = pd.read_csv(ROOT / "data" / "measured" / "causal-reads.csv")
    assert len(rows) == len(table) == 7
    for r in table.itertuples():
        b = rate_bounds(r.stale / r.reads, r.reads, int(r.runs), r.design_effect)
        assert (b.low, b.high, b.upper) == pytest.approx((r.low, r.high, r.upper), rel=1e-5), r
        cells = f"| {r.reads:,} | {r.stale} | {_sci(b.low)}–{_sci(b.high)} | {_sci(b.upper)} | {r.read_ms_p50:.2f} ms |"
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
    sentences = [[float(f) for f in _figures(s)]
                 for part in findings(analyze(campaign, baseline="async"), campaign).values() for s in part]
    says = ({270.0}, sentences)  # the campaign's budget, from its spec
    for clause in re.split(r"(?<=\.)\s+(?=[A-Z*(])|;\s", recorded):
        missing = _unsaid(_figures(clause), says) + [" ".join(g) for g in _intervals(clause) if not _in_order(g, says)]
        assert not missing, f"figures of the main job's paragraph its campaign does not give: {missing} in {clause!r}"


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
    from benchlib.axes.fault.measures import quantile_interval, share_interval

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


def isolation_rows(table: pd.DataFrame) -> list[str]:
    """The isolation table's rows as the page prints them, from the per-run table (benchlib's own summary: rates per
    100,000 committed transactions, intervals with runs as the unit)."""
    from benchlib.axes.history.analysis import _n, summary

    names = {"async": "MariaDB async, replicas read", "galera": "Galera, every node writes",
             "gr": "Group Replication single-primary, secondaries read", "grmulti": "Group Replication multi-primary"}
    out = []
    for _, r in summary(None, table).iterrows():
        def cell(k: str) -> str:
            if not r.wrote:
                return "–"
            return (f"{_n(r[f'{k} per_100k'])} ({_n(r[f'{k} low'])}–{_n(r[f'{k} high'])})" if r[k]
                    else f"none (at most {_n(r[f'{k} upper'])})")
        kinds = " | ".join(cell(k) for k in ("lost update", "G-single", "G2-item", "G-single-realtime"))
        out.append(f"| {names[r.cluster]} | {r.isolation.replace('-', ' ').upper()} | {r.committed:,} ({r.runs}) | "
                   f"{re.sub(r' [(][^)]*[)]', '', r.refused)} | {kinds} |")
    return out


def test_the_isolation_table_and_what_it_says_are_its_csv_recomputed():
    from benchlib.axes.history.analysis import published, summary

    table = pd.read_csv(ROOT / "data" / "measured" / "isolation.csv", keep_default_na=False, na_values=[""])
    want = isolation_rows(table)
    assert _isolation_rows_on_the_page(0) == want
    said = published(summary(None, table), dict(zip(table.cluster, table.system)))
    known = {float(f) for text in want + said + ["100,000"] for f in _figures(text)}
    for start in [k for k, test in COVERED.items() if test == "test_the_isolation_table_and_what_it_says_are_its_csv_recomputed"
                  and k.startswith("- ")]:
        bullet = _paragraph(start).split("\n\n")[0]  # the last bullet ends before the next block
        missing = [f for f in _figures(bullet) if not _given(f, known)]
        assert not missing, (start, missing)


def _isolation_rows_on_the_page(block: int) -> list[str]:
    """The rows of the section's first table (``block`` 0: no fault) or of its second (1: a node killed)."""
    section = PAGE.split("## Isolation anomalies")[1].split("\n## ")[0].split("When a node dies:")[block]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| cluster")]


def test_the_isolation_table_when_a_node_dies_is_its_csv_recomputed():
    """The second table (the write node killed) and what its bullet says: each figure among the two tables' and the
    unknown commits of the killed runs."""
    faults = pd.read_csv(ROOT / "data" / "measured" / "isolation-faults.csv", keep_default_na=False, na_values=[""])
    clean = pd.read_csv(ROOT / "data" / "measured" / "isolation.csv", keep_default_na=False, na_values=[""])
    want = isolation_rows(faults)
    assert _isolation_rows_on_the_page(1) == want
    assert set(faults.system) == {"galera", "group_replication"} and (faults[["G0", "G1c", "G1a", "G1b"]] == 0).all().all()
    known = {float(f) for text in want + isolation_rows(clean) for f in _figures(text)}
    known |= {float(n) for n in faults.groupby("cluster").unknown.sum()}
    bullet = _paragraph("- **A node's death added no kind of anomaly.**")
    missing = [f for f in _figures(bullet) if not _given(f, known)]
    assert not missing, missing


# Figures on the page that are not measurements (each phrase with what it is). Everything else a block of the page
# prints is a figure of the campaign that block names (or, in its section, the last one named before it; an indented
# block adds its own to those), or says that it was "not recorded".
GIVEN = {
    "95%": "the confidence level of every interval",
    "every 15 s": "Group Replication's expel check, MySQL's own period",
    "per 100,000": "the unit of every anomaly rate",
}
# Blocks (a table: by the start of its header) and sentences that a test of their own recomputes
COVERED = {
    "| cluster, read consistency": "test_the_causal_read_table_is_its_csv_recomputed",
    "| innodb_flush_log_at_trx_commit": "test_the_power_cut_table_is_its_campaign_and_another_seed_agrees",
    "- **Where the noise is**": "test_where_the_noise_is_is_what_bench_demo_settle_prints_from_its_campaigns",
    "With another seed": "test_the_power_cut_table_is_its_campaign_and_another_seed_agrees",
    "| cluster | isolation": "test_the_isolation_table_and_what_it_says_are_its_csv_recomputed",
    "- **Beside Jepsen's findings.**": "test_the_isolation_table_and_what_it_says_are_its_csv_recomputed",
    "- **SERIALIZABLE, per system.**": "test_the_isolation_table_and_what_it_says_are_its_csv_recomputed",
    "- **What this campaign does not say.**": "test_the_isolation_table_and_what_it_says_are_its_csv_recomputed",
    "| cluster, write node killed": "test_the_isolation_table_when_a_node_dies_is_its_csv_recomputed",
    "- **A node's death added no kind of anomaly.**": "test_the_isolation_table_when_a_node_dies_is_its_csv_recomputed",
}


def _figures(text: str) -> list[str]:
    """The figures of a text: numbers outside `names`, dates, versions, times of day and published (others') figures,
    a power of ten written out as 1.8e-5."""
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|\d+\.\d+\.\d+|\d+-core|\d+ GiB|"
                  r"(?:MariaDB|MySQL|Percona Server|PXC|Debian|Galera) \d+(?:\.\d+)*", "", text)
    text = re.sub(r"published [^;:)\]]*?(?=[;:)\]]|\.\s|$)", "", text)
    for phrase in GIVEN:
        text = text.replace(phrase, "")
    text = text.replace("×10", "e").translate(SUP)
    return [m.replace(",", "") for m in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e-?\d+)?", text)]


def _given(figure: str, said: set[float]) -> bool:
    """``figure`` is one of ``said`` at its printed precision (two significant digits for a power of ten)."""
    if "e" in figure:
        return any(f"{s:.1e}" == f"{float(figure):.1e}" for s in said)
    d = len(figure.split(".")[1]) if "." in figure else 0
    return any(round(s, d) == float(figure) for s in said)


def _flat(o) -> list[str]:
    """The numbers of a campaign record's part (a value in ms also in s)."""
    if isinstance(o, dict):
        return [x for k, v in o.items() for x in _flat(v) + (_flat(v / 1000) if k.endswith("_ms") and
                                                              isinstance(v, (int, float)) and v else [])]
    if isinstance(o, list):
        return [x for v in o for x in _flat(v)]
    if isinstance(o, bool) or o is None:
        return []
    return [str(o)] if isinstance(o, (int, float)) else _figures(o) if isinstance(o, str) else []


def _spec_says(record: dict) -> list[str]:
    """A campaign record's spec and lab, and its lab's servers."""
    servers = sum(c.get("nodes") or (c.get("replicas") or 0) + 1 for c in record["lab"]["clusters"].values())
    return _flat(record["campaign"]) + _flat(record["lab"]) + [str(servers), str(len(record.get("plan", [])))]


Says = tuple[set[float], list[list[float]]]  # what is said everywhere (a spec), and each sentence's figures in order


def _campaign_says(name: str) -> Says:
    """What a recorded campaign gives: each sentence of its findings and each study claim as judged on it
    (tests/fixtures/findings, which tests/test_findings_recorded.py recomputes from the campaign); everywhere, its
    spec, its runs and its wall time in minutes."""
    from datetime import datetime

    folder = ROOT / "data" / "campaigns" / name
    sentences = [[float(f) for f in _figures(s)] for part in json.loads(
        (ROOT / "tests" / "fixtures" / "findings" / f"{name}.json").read_text()).values() for s in part]
    record = json.loads((folder / "campaign.json").read_text())
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    when = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (record["created_utc"], events[-1]["utc"])]
    said = _spec_says(record) + [str(sum(e["event"] == "run" and e["status"] == "ok" for e in events)),
                                 str((when[1] - when[0]).total_seconds() / 60)]
    return {float(s) for s in said}, sentences


def _measured_says(name: str) -> Says:
    """A file of data/measured/: each row's numbers and its columns' medians; everywhere, its campaign's spec
    (``<name>.campaign.json``)."""
    file = ROOT / "data" / "measured" / name
    table = pd.read_csv(file).select_dtypes("number")
    sentences = [[float(x) for x in row if x == x] for row in table.to_numpy()] + [list(table.median().dropna())]
    record = file.with_name(file.name.rsplit(".", 1)[0] + ".campaign.json")
    said = _spec_says(json.loads(record.read_text())) if record.exists() else []
    return {float(s) for s in said}, sentences


def _intervals(text: str) -> list[list[str]]:
    """A figure with its interval, as the page prints them: ``1.16 [0.95, 1.41]``, ``5.13 s (5.12–5.18)``,
    ``9.5 (95% 5–21)``."""
    text = re.sub(r"\s+", " ", re.sub(r"`[^`]*`", "", text).replace("95%", ""))
    n = r"(\d[\d,]*(?:\.\d+)?)"
    found = re.findall(n + r"(?: ?(?:%|×|s|ms|RTT|tps))? ?[\[(] ?" + n + r"(?:%| s| ms)?(?:, |–)" + n + r"[%\])]", text)
    return [[x.replace(",", "") for x in g] for g in found if g[1] != "0"]  # (a lower bound of 0: no bound)


def _in_order(group: list[str], says: Says, span: int = 5) -> bool:
    """``group`` is said by one sentence, its figures in that order within ``span`` figures of one another."""
    for s in says[1]:
        for i in range(len(s)):
            if not _given(group[0], [s[i]]):
                continue
            at = i
            for f in group[1:]:
                at = next((j for j in range(at + 1, min(len(s), i + span + 1)) if _given(f, [s[j]])), None)
                if at is None:
                    break
            else:
                return True
    return False


def _unsaid(figures: list[str], says: Says) -> list[str]:
    """The ``figures`` (of one clause or table row) that neither the spec nor a few sentences say together (at most 3,
    or one for two figures): the sentences that say the most of them are taken, one after another."""
    left = [f for f in figures if not _given(f, says[0])]
    for _ in range(max(3, (len(figures) + 1) // 2)):
        if not left:
            break
        best = max(says[1], key=lambda s: sum(_given(f, s) for f in left), default=[])
        left = [f for f in left if not _given(f, best)]
    return left


def _blocks() -> list[tuple[str, str]]:
    """The page as (section, block): a block is a paragraph, a bullet or a table row."""
    out, section, block = [], "", []
    for line in PAGE.splitlines() + [""]:
        starts = line.startswith(("#", "|", "- ", "  - ", "  |")) or not line.strip()
        if starts and block:
            out.append((section, "\n".join(block)))
            block = []
        if line.startswith("#"):
            section = line
        elif line.strip() and not re.match(r"\s*\|[-| ]+\|\s*$", line):
            block.append(line)
    return out


def _unrecorded(text: str) -> str:
    """``text`` without its sentences that say they are not recorded."""
    return " ".join(s for s in re.split(r"(?<=[.;])\s+(?=[A-Z*(])", text) if "not recorded" not in s)


def test_every_figure_of_the_page_is_its_campaign_s_or_says_it_was_not_recorded():
    said_by: dict[str, Says] = {}
    problems, section, names, exempt, table = [], None, [], False, ""
    for sec, text in _blocks():
        if sec != section:  # a section whose first paragraph says "not recorded" is not recorded as a whole
            section, names, exempt = sec, [], "not recorded" in text or sec == "# Results"  # (the machine, versions)
        if exempt:
            continue
        row = text.lstrip().startswith("|")
        table = (table or text.strip()) if row else ""
        if any(table.startswith(k) or text.lstrip().startswith(k) for k in COVERED):
            continue
        named = re.findall(r"data/(campaigns|measured)/([\w.-]+)", text)
        if named and not row:
            names = (names if text.startswith(" ") else []) + named
        if text.lstrip().startswith("- ") and "not recorded" in re.split(r"(?<=[.:])\s", text, maxsplit=1)[0]:
            continue  # a bullet that says first that it was not recorded
        clauses = [text] if row else re.split(r"(?<=\.)\s+(?=[A-Z*(])|;\s", _unrecorded(text))
        clauses = [(c, _figures(c)) for c in clauses if not c.lstrip().startswith(tuple(COVERED))]
        if not any(f for _, f in clauses):
            continue
        if not names:
            problems.append(f"{section}: figures with no campaign named: {text[:80]!r}")
            continue
        for kind, name in names:
            if f"{kind}/{name}" not in said_by:
                said_by[f"{kind}/{name}"] = _campaign_says(name) if kind == "campaigns" else _measured_says(name)
        says = (set().union(*(said_by[f"{k}/{n}"][0] for k, n in names)),
                [s for k, n in names for s in said_by[f"{k}/{n}"][1]])
        for clause, figures in clauses:
            missing = _unsaid(figures, says) + [" ".join(g) for g in _intervals(clause) if not _in_order(g, says)]
            if missing:
                problems.append(f"{section} ({', '.join(n for _, n in names)}): {missing} in {clause[:110]!r}")
    assert not problems, "\n".join(problems)


def test_where_the_noise_is_is_what_bench_demo_settle_prints_from_its_campaigns(capsys):
    """The noise of the three demo-vm campaigns, decomposed by bench/demo_settle.py (its part 1, not its simulation)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_settle", ROOT / "bench" / "demo_settle.py")
    settle = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = settle  # (its dataclasses look their module up)
    spec.loader.exec_module(settle)
    settle.decompose([settle._runs(p) for p in settle.CAMPAIGNS])
    printed = {float(f) for f in _figures(capsys.readouterr().out)}
    text = _paragraph("- **Where the noise is**").split(").", 1)[1]  # the figures after the opening parenthesis
    missing = [f for f in _figures(text) if not _given(f, printed)]
    assert not missing, f"figures of the noise paragraph that bench/demo_settle.py does not print: {missing}"
