"""Publishing: a campaign's charts as PNG (2x), SVG and self-contained HTML, and one report page.

``publish(campaign)`` analyses the campaign, builds every chart that applies (``figures``), exports
each one (one browser kept for all static images), executes the analysis notebooks that apply, and
writes ``report.html``: the warnings at the top, the statistical verdicts, the interactive charts and
links to every file. Output goes to ``CAMPAIGN/report/<UTC time>/``; earlier reports are kept. A report is
written into a hidden folder and renamed when complete, so a publish that fails or is killed leaves none half-made.

Size: about 480 lines; the per-axis findings (consistency, failover) move to their axes with issue 36 (axes as units), the interference words already live in ``benchlib.analysis.interference_findings``.
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from benchlib import catalogue
from benchlib.analysis import views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis, analyze
from benchlib.analysis.problems import problems_html
from benchlib.analysis.interference_findings import events as _events
from benchlib.analysis.interference_findings import interference_findings, noise_line
from benchlib.analysis.staleness import configuration_columns
from benchlib.charts.catalogue import CATALOGUE, figures


@dataclass
class Report:
    folder: Path
    page: Path
    files: list[Path] = field(default_factory=list)
    notebooks: list[Path] = field(default_factory=list)
    image_seconds: list[float] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)  # the throughput ratios in words
    left_out: dict[str, str] = field(default_factory=dict)  # chart -> why it is not drawn
    audit: str = ""  # what the consistency audit after every run found, in one sentence
    consistency: list[str] = field(default_factory=list)  # stale reads per cluster and read consistency, in words
    failover: list[str] = field(default_factory=list)  # unavailability and lost writes per fault configuration
    interference: list[str] = field(default_factory=list)  # what took the host from the lab, in words
    settled: str = ""  # how many headline ratios are settled, and what ended the campaign


def _table(df: pd.DataFrame, columns: list[str]) -> str:
    cols = [c for c in columns if c in df.columns]
    if df.empty or not cols:
        return "<p>none</p>"
    return df[cols].to_html(index=False, border=0, classes="t", float_format=lambda v: f"{v:.4g}", na_rep="")


CSS = """body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:1220px;margin:2em auto;padding:0 16px;color:#222}
table.t{border-collapse:collapse;font-size:12px;margin:1em 0;display:block;max-width:100%;overflow-x:auto}
table.t td,table.t th{padding:3px 6px;border-bottom:1px solid #ddd}
details{margin:.4em 0}summary{cursor:pointer}summary h2{display:inline}
div.invalid{background:#fde0dc;padding:4px 12px;margin:8px 0}
.how{font-size:14px;color:#444}.chart{margin:2em 0;max-width:100%;overflow-x:auto}.files{font-size:13px;color:#555}"""


def publish(campaign: str | Path, *, out: Path | None = None, baseline: str = "async", notebooks: bool = True,
            static: bool = True) -> Report:
    campaign = Path(campaign).resolve()
    a = analyze(campaign, baseline=baseline)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = Path(out) if out else campaign / "report" / stamp
    n = 1
    while folder.exists() and any(folder.iterdir()):  # earlier reports are kept, never overwritten
        n += 1
        folder = folder.with_name(f"{stamp}-{n}") if not out else Path(f"{out}-{n}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    _sweep_unfinished(folder.parent)
    # written into a hidden folder beside it and renamed when complete: a publish that is killed or fails
    # (a full disk) leaves no folder that looks like a report
    work = folder.with_name(f"{UNFINISHED}{folder.name}-{os.getpid()}")
    try:
        report = _write(campaign, a, work, baseline=baseline, notebooks=notebooks, static=static)
        if folder.exists():
            folder.rmdir()  # the empty folder asked for with ``out``
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    report.files = [folder / f.relative_to(work) for f in report.files]
    report.notebooks = [folder / f.relative_to(work) for f in report.notebooks]
    report.folder, report.page = folder, folder / report.page.name
    return report


#: the prefix of a report folder being written (renamed to its final name when complete)
UNFINISHED = ".unfinished-"


def _sweep_unfinished(parent: Path) -> None:
    """Remove what a killed publish left (a hidden folder whose process is gone)."""
    for left in parent.glob(f"{UNFINISHED}*"):
        pid = left.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(left, ignore_errors=True)


def _write(campaign: Path, a: CampaignAnalysis, folder: Path, *, baseline: str, notebooks: bool,
           static: bool) -> Report:
    folder.mkdir(parents=True)
    report = Report(folder, folder / "report.html")
    figs = figures(a, left_out=report.left_out)
    from benchlib.charts.export import Exporter

    formats = ("png", "svg", "html") if static else ("html",)
    exporter = Exporter()
    with (exporter if static else contextlib.nullcontext()):
        for name, fig in figs.items():
            report.files += exporter.write(fig, folder / "charts" / name, formats)
    report.image_seconds = exporter.seconds
    if notebooks:
        from benchlib.notebooks import applicable, execute, output_path

        for name in applicable(campaign):
            report.notebooks.append(execute(name, output_path(folder / "notebooks", name),
                                            {"campaign": str(campaign), "baseline": baseline}, stream=False))
    said = findings(a, campaign)
    report.headline, report.consistency = said["headline"], said["consistency"]
    report.failover, report.interference = said["failover"], said["interference"]
    report.audit, report.settled = "".join(said["audit"]), "".join(said["settled"])
    report.page.write_text(_page(campaign, a, figs, report))
    return report


def _verdict_words(r: pd.Series, within: float | None = None) -> str:
    """The verdict of one ratio in plain words, with why an INCONCLUSIVE one is not settled (or, settled at the
    campaign's precision ``within``, what that precision says), and what an adjustment for interference did."""
    words = _verdict_only(r, within)
    if isinstance(r.get("adjusted_for"), str) and r.adjusted_for and pd.notna(r.get("unadjusted")):
        moved = r.ratio / r.unadjusted - 1
        words += (f" (adjusted for the CPU lost to others, which moved it {moved:+.1%}; unadjusted "
                  f"{r.unadjusted:.2f}, {r.unadjusted_low:.2f}–{r.unadjusted_high:.2f})")
    return words


def _verdict_only(r: pd.Series, within: float | None) -> str:
    margin = f"{r.margin:.0%}" if pd.notna(r.get("margin")) else "the"
    precise = within is not None and bool(r.get("settled", False))
    if precise and r.verdict == "INCONCLUSIVE":
        need = r.get("runs_needed_per_side")
        more = (f"; about {int(need)} rounds in all would settle that" if pd.notna(need) and need and need < 100
                else "")
        return (f"measured to ±{r.half_width_rel:.0%}, within the campaign's ±{within:.0%} target; whether it "
                f"differs by more than the {margin} margin is not settled{more}")
    if r.verdict == "FASTER":
        return f"faster by more than the {margin} margin: the difference is real"
    if r.verdict == "SLOWER":
        return f"slower by more than the {margin} margin: the difference is real"
    if r.verdict == "EQUIVALENT":
        return f"equivalent within ±{margin}"
    if r.verdict == "SIGNIFICANT_BUT_SMALL":
        side = "faster" if r.ratio > 1 else "slower"
        return (f"{side}: the interval excludes 1, but not yet the {margin} margin, so the difference may be "
                "smaller than that")
    noise = (f"run-to-run noise {r.sigma_log:.1%} (round effects removed)" if pd.notna(r.get("sigma_log"))
             else "the noise")
    need = r.get("runs_needed_per_side")
    if pd.notna(need) and need and need < 100:
        return f"not settled yet: at {noise}, about {int(need)} rounds in all would settle it"
    if pd.notna(need) and need:
        return f"not settled: at {noise}, not even 100 rounds would settle it (the ratio sits close to the margin)"
    if pd.notna(r.get("sigma_log")):
        return f"not settled: the ratio sits on the margin, no number of rounds settles it at {noise}"
    return (f"not settled: {int(r.n)} run{'s are' if r.n != 1 else ' is'} too few to measure the noise "
            "(repeat the campaign in rounds)")


def _stopped_on(campaign: Path) -> str:
    """What the campaign's adaptive mode stopped on (its last stop event), or ''."""
    stops = _events(campaign, "adaptive_stop")
    return stops[-1]["reason"] if stops else ""


def _host_noise(campaign: Path) -> str:
    """This host's noise as measured at the campaign's last start (``benchlib doctor`` measures the same)."""
    from benchlib.analysis.interference import noise_words

    noise = _events(campaign, "host_noise")
    if not noise:
        return ""
    items = "".join(f"<li>{'<b>' if bad else ''}{html.escape(what)}{'</b>' if bad else ''}: {html.escape(todo)}</li>"
                    for what, todo, bad in noise_words(noise[-1]))
    return f"<p>This host at the campaign's start ({html.escape(str(noise[-1].get('measured_utc', '')))}):</p><ul>{items}</ul>"


def _interference(report: Report, campaign: Path) -> str:
    if not report.interference and not _events(campaign, "host_noise"):
        return ""
    items = "".join(f"<li>{html.escape(x)}</li>" for x in report.interference)
    return f'<h2 id="interference">Interference</h2><ul>{items}</ul>{_host_noise(campaign)}'



def findings(a: CampaignAnalysis, campaign: Path) -> dict[str, list[str]]:
    """Every sentence the report says of the campaign, by section (what ``publish`` writes, without the charts): the
    throughput ratios, the audit, stale reads, failover, interference and the settlement."""
    return {"headline": headline(a), "audit": [x for x in [_audited(a)] if x],
            "consistency": list(a.consistency_findings), "failover": list(a.failover_findings),
            "interference": list(interference_findings(a, campaign)),
            "settled": [x for x in [settlement(a, campaign)] if x]}


def headline(a: CampaignAnalysis) -> list[str]:
    """Every throughput ratio against the baseline as one plain sentence: how much, its interval, how many runs,
    and whether the difference is real (the report's findings and the main job's last lines)."""
    return [f"{what}: {verdict}." for what, verdict in _ratio_findings(a)]


def _ratio_findings(a: CampaignAnalysis) -> list[tuple[str, str]]:
    """Per throughput ratio: what was measured, and the verdict in words."""
    c = a.comparisons
    if c.empty:
        return []
    t = c[c.metric.isin(["tps", "read_tps"])]  # the writers', and a read-split load's readers
    keys = [k for k in a.param_columns if k in t.columns and k not in ("topology", "config", "cluster")]
    varying = [k for k in keys if t[k].nunique(dropna=True) > 1 or k in ("threads", "workload")]
    varying = [k for k in varying if k == "consistency" or k not in a.set_by_consistency]  # a setting: said once
    sizes = views.cluster_sizes(a)
    lines = []
    for _, r in t.iterrows():
        at = [f"{r[k]:g} client thread{'s' if r[k] != 1 else ''}" for k in varying if k == "threads" and pd.notna(r[k])]
        on = [str(r[k]) for k in varying if k == "workload" and pd.notna(r[k])]
        other = [str(r[k]) if k == "durability" else f"{k} {r[k]:g}" if isinstance(r[k], (int, float)) else
                 f"{k} {r[k]}" for k in varying if k not in ("threads", "workload") and pd.notna(r[k])]
        where = " ".join(filter(None, [f"at {at[0]}" if at else "", f"on {on[0]}" if on else ""]))
        where += "".join(f", {o}" for o in other)
        kind = "" if r.cluster == r.topology else f"{r.topology}, "
        bounded = np.isfinite(float(r.ci_low)) and np.isfinite(float(r.ci_high))
        interval = f"95% interval {r.ci_low:.2f}–{r.ci_high:.2f}" if bounded else "no interval"
        runs = f"{int(r.n)} run{'s' if r.n != 1 else ''}" + (f" against {int(r.n_baseline)}"
                                                            if pd.notna(r.get("n_baseline")) else "")
        what = ("serves {:.2f}× {}'s reads on the nodes besides the write node (read split)" if r.metric == "read_tps"
                else "delivers {:.2f}× {}'s throughput").format(r.ratio, r.baseline)
        lines.append((f"{r.cluster} ({kind}{sizes.get(r.cluster, '?')} nodes) {what} {where} ({interval}; {runs})",
                      _verdict_words(r, a.record.settle_within)))
    return lines


#: a verdict shared by this many ratios or more is said once, over the list of them
SAME_VERDICT = 6


def _findings(a: CampaignAnalysis, campaign: Path) -> list[str]:
    pairs = _ratio_findings(a)
    if not pairs:
        return []
    groups: dict[str, list[str]] = {}
    for what, verdict in pairs:
        groups.setdefault(verdict, []).append(what)
    items = ""
    for verdict, whats in groups.items():  # in the order the ratios come
        if len(whats) < SAME_VERDICT:
            items += "".join(f"<li>{html.escape(w)}: {html.escape(verdict)}.</li>" for w in whats)
        else:
            inner = "".join(f"<li>{html.escape(w)}.</li>" for w in whats)
            items += (f"<li>{html.escape(verdict[:1].upper() + verdict[1:])}, for these {len(whats)} ratios:"
                      f"<ul>{inner}</ul></li>")
    whose = ("the writers', and the read split's readers' on the other nodes"
             if (a.comparisons.metric == "read_tps").any() else "")
    faulted = "" if a.failover.empty else (
        " Every run had a fault inside its load window, so these ratios price the fault and the recovery together "
        "with the replication: the failover section above says what the fault did.")
    lead = [f'<h2 id="findings">Findings</h2><p>Throughput against the baseline{", " + whose if whose else ""} '
            f"(ratio of mean TPS; margin δ = {a.comparisons.margin.iloc[0]:.0%}: a difference smaller than that is "
            f"not called real).{faulted}</p>"
            f"<ul>{items}</ul>"]
    lead.append(f"<p>{html.escape(settlement(a, campaign))}</p>")
    return lead


def settlement(a: CampaignAnalysis, campaign: Path) -> str:
    """How many headline ratios are settled, at which precision, after how many rounds, and which rule ended the
    campaign (the adaptive mode's stop, or its planned rounds)."""
    from benchlib.analysis.campaign import headline_rows

    c = headline_rows(a.comparisons)
    if c.empty:
        return ""
    within = a.record.settle_within
    done = int(c.settled.sum()) if "settled" in c else int((c.verdict != "INCONCLUSIVE").sum())
    ok = a.runs[a.runs.status == "ok"]
    rounds = int(ok.repetition.max()) if "repetition" in ok and ok.repetition.notna().any() else 1
    how = f"95% interval within ±{within:.0%}" if within is not None else "verdict no longer inconclusive"
    widest = c.half_width_rel.replace(np.inf, np.nan).max() if "half_width_rel" in c else np.nan
    out = (f"{done} of {len(c)} headline ratio{'s' if len(c) != 1 else ''} settled ({how}) after {rounds} "
           f"round{'s' if rounds != 1 else ''}" + (f"; the widest interval ±{widest:.0%}" if widest == widest else ""))
    stopped = _stopped_on(campaign)
    return out + (f". Stopped by the adaptive mode: {stopped}." if stopped else ". The planned rounds only (no "
                                                                                   "adaptive mode).")


def _invalid(a: CampaignAnalysis) -> str:
    """Runs that ran but did not measure what they name, first on the page: which, and why."""
    bad = a.runs[a.runs.status == "invalid"]
    if bad.empty:
        return ""
    rows = "".join(f"<li><b>{html.escape(str(r.run_id))}</b>: "
                   f"{html.escape(str(r.reason).removeprefix('INVALID: '))}</li>" for r in bad.itertuples(index=False))
    return (f'<div class="invalid"><h2>{len(bad)} invalid run{"s" if len(bad) > 1 else ""}, left out of every '
            f"statistic and chart</h2><p>The cluster changed mode while {'they were' if len(bad) > 1 else 'it was'} "
            f"measured, so {'they' if len(bad) > 1 else 'it'} did not measure the configuration named:</p>"
            f"<ul>{rows}</ul></div>")


def _audited(a: CampaignAnalysis) -> str:
    """What the consistency audit after every run found, in one sentence ("" when no run was audited)."""
    runs = a.runs
    if "audit_identical" not in runs or runs.audit_identical.isna().all():
        return ""
    done = runs[runs.audit_identical.notna()]
    nodes = sorted({n for ns in done.nodes.dropna() for n in str(ns).split(",") if n})
    cost = f" (the audit took a median {done.audit_s.median():.2f} s a run)"
    every = "every run" if len(done) == len(runs) else f"{len(done)} of {len(runs)} runs"
    if done.audit_identical.astype(bool).all():
        return f"Data identical on all {len(nodes)} nodes after {every}{cost}."
    bad = int((~done.audit_identical.astype(bool)).sum())
    return f"Data differed between nodes after {bad} of {len(done)} audited runs (listed above as invalid){cost}."


def _consistency(a: CampaignAnalysis, report: Report) -> str:
    """What the stale-read probe found, per cluster and read consistency: sentences, then the table folded."""
    if not report.consistency:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in report.consistency)
    how = ("A writer commits a sequence on the write node; a reader on each other node reads it at a fixed rate under "
           "the read consistency named. A read is stale when it returns a value older than one already acknowledged "
           "(or read) before it was sent (Jepsen's definition); staleness is how long the first value it missed had "
           "been known. Intervals take runs as the unit.")
    s = a.stale_reads
    keys = [c for c in configuration_columns(s) if c not in ("cluster", "setting")]
    table = _table(s, ["cluster", "setting", *keys, "runs", "reads", "stale", "fraction", "low", "high",
                       "staleness_ms_p50", "staleness_ms_p99", "staleness_ms_max", "read_ms_p50", "read_ms_p99",
                       "wait_ms_p50", "failed"])
    out = (f"<h2>Stale reads</h2><ul>{items}</ul><p class=\"how\">{html.escape(how)}</p>"
           + _fold("Stale reads by configuration", table))
    costs = a.consistency_costs
    if not costs.empty:
        split = costs.metric.astype(str).str.startswith("read_").any()
        whom = "the writer and the read split's readers" if split else "the writer"
        out += _fold(f"What each setting costs {whom}, against its cluster's weakest setting",
                     _table(costs, ["cluster", "setting", "weakest", *keys, "metric", "ratio", "ci_low", "ci_high",
                                    "verdict", "n", "n_baseline", "method"]))
    return out


def _failover(a: CampaignAnalysis, report: Report) -> str:
    """What each fault did, per configuration: sentences, how it was measured, each system's promise, the tables."""
    if not report.failover:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in report.failover)
    runs = a.runs[a.runs.get("fault_at_s", pd.Series(dtype=float)).notna()]
    promised = runs.drop_duplicates("system")
    promises = ""
    if "failover_how" in runs:
        promises = "".join(f"<li><b>{html.escape(str(r.system))}</b>: {html.escape(catalogue.promise(r.system))}"
                           "</li>" for r in promised.itertuples() if catalogue.promise(r.system))
    how = ("A ledger writer beside sysbench commits one row with its own id per tick on the node that takes the writes, "
           "follows the failover at once, and records each write as acknowledged, failed or unknown. Unavailability: "
           "the longest wait between two acknowledged writes from the last one before the fault on. Lost: "
           "acknowledged, and absent from the surviving primary after the heal. Intervals: order statistics for the "
           "median and p90 (distribution-free), Clopper-Pearson for the share of faults that lose writes. sysbench "
           "cannot follow a failover: it is started again on the new primary, so its throughput is 0 until then.")
    out = (f'<h2 id="failover">Failover</h2><ul>{items}</ul><p class="how">{html.escape(how)}</p>'
           + (f"<p>What each system promises when the node taking writes fails:</p><ul>{promises}</ul>"
              if promises else ""))
    s = a.failover_summary
    from benchlib.analysis.failover import LOAD_KEYS, SETTING_PREFIXES

    keys = [c for c in s.columns if c in ("cluster", "fault", *LOAD_KEYS) or c.startswith(SETTING_PREFIXES)]
    out += _fold("Failover by configuration", _table(s, [*keys, "runs", "unavail_median_s", "unavail_median_low_s",
                                                          "unavail_median_high_s", "unavail_p90_s", "unavail_max_s",
                                                          "new_primary_median_s", "writes_elsewhere_median_s",
                                                          "lost_total", "runs_losing", "losing_share_high",
                                                          "recovered_95_median_s", "heal_median_s", "heal_how"]))
    out += _fold("Failover by run", _table(a.failover, ["run_id", *keys, "unavailability_s", "new_primary_node",
                                                        "new_primary_s", "acked", "failed", "unknown", "lost",
                                                        "phantoms", "tps_before", "tps_lowest", "recovered_95_s",
                                                        "heal_s", "heal_how"]))
    return out


def _fold(title: str, body: str, *, open_: bool = False) -> str:
    """A collapsible section (a table the reader opens when the findings and charts raise a question)."""
    return f"<details{' open' if open_ else ''}><summary><h2>{html.escape(title)}</h2></summary>{body}</details>"


def _method(a: CampaignAnalysis) -> str:
    """How the ratios were computed, in one paragraph (under the findings)."""
    c = a.comparisons
    blocked = c[c.method == "blocks"] if "method" in c else c.iloc[:0]
    noise = "; ".join(
        f"{metric}: residual SD {m.sigma_log.median():.1%} of a run on {int(m.df.median())} df"
        + (f", round effect p = {m.round_p.iloc[0]:.3f}" if pd.notna(m.round_p.iloc[0]) else "")
        for metric, m in blocked.groupby("metric", sort=False))
    how = (f"Ratios and 95% intervals from a two-way model (repetition round + configuration) on log run "
           f"means ({noise}); Fieller's interval is the cross-check. " if not blocked.empty else
           "Ratios of run means with Fieller's 95% interval (one repetition round: no blocks to model). ")
    return how + (f"Margin δ = {c.margin.iloc[0]:.0%}: FASTER/SLOWER when the interval clears 1 ± δ, EQUIVALENT "
                  "when the 90% interval lies inside it; rounds needed: how many would settle an INCONCLUSIVE verdict "
                  "if the ratio stayed where it is.")


def _page(campaign: Path, a: CampaignAnalysis, figs: dict[str, go.Figure], report: Report) -> str:
    """Findings first, then warnings grouped by kind, the study's claims, the charts, the tables (folded), the
    runs and the notebooks."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(campaign.name)} report</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>Campaign {html.escape(campaign.name)}</h1>",
             f"<p>{len(a.runs)} runs, {int((a.runs.status == 'ok').sum())} ok"
             f"{', %d invalid' % int((a.runs.status == 'invalid').sum()) if (a.runs.status == 'invalid').any() else ''}"
             "; baseline for ratios: "
             f"{html.escape(str(a.comparisons.baseline.iloc[0]) if not a.comparisons.empty else 'none')}. "
             f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from {html.escape(str(campaign))}. "
             f"{html.escape(_audited(a))} {html.escape(noise_line(campaign))}</p>",
             _invalid(a), _failover(a, report), *_findings(a, campaign)]
    if not a.comparisons.empty:
        parts.append(f'<p class="how">{html.escape(_method(a))}</p>')
    parts.append(_interference(report, campaign))
    parts.append(_consistency(a, report))
    parts.append(f"<h2>Warnings</h2>{problems_html(a.problems)}")
    from benchlib import studies

    study = studies.study_of(a)
    if study is not None:
        ref = studies.compare_reference(a, study.id)
        parts.append(f"<h2>Study {study.id} against the published figures</h2><p>{html.escape(study.title)}. "
                     f"Needs a remote lab: {html.escape(study.remote)}.</p>"
                     + _table(ref.claims, ["claim", "published", "measured", "holds", "how"]))
    for i, (name, fig) in enumerate(figs.items()):
        title = CATALOGUE[name][0]
        div = pio.to_html(fig, full_html=False, include_plotlyjs=i == 0,  # plotly.js inlined once: works offline
                          div_id=f"chart-{name}")
        links = " · ".join(f'<a href="charts/{name}.{ext}">{ext.upper()}</a>'
                           for ext in ("png", "svg", "html") if (report.folder / "charts" / f"{name}.{ext}").exists())
        parts.append(f'<div class="chart"><h2>{html.escape(title)}</h2>{div}<p class="files">{links}</p></div>')
    for name, why in report.left_out.items():
        parts.append(f'<div class="chart"><h2>{html.escape(CATALOGUE[name][0])}</h2><p class="how">Not drawn: '
                     f"{html.escape(why)}.</p></div>")
    if not a.comparisons.empty:
        parts.append(_fold("Against the baseline", _table(a.comparisons, [
            "cluster", "topology", "durability", "workload", "threads", "metric", "ratio", "ci_low", "ci_high", "p",
            "q", "verdict", "runs_needed_per_side", "mde", "fieller_low", "fieller_high"])))
    searches = views.sustained_or_empty(a)
    if not searches.empty:
        parts.append(_fold("Maximum sustained throughput", _table(searches, [
            "label", "workload", "threads", "peak_tps", "sustained_tps", "first_failing_tps", "bracket_rel",
            "sustained_vs_peak", "fc_limited", "failing_because", "runs", "status"])))
    parts.append(_fold("Configurations", _table(a.configs, [
        "cluster", "durability", "workload", "threads", "fc_limit", "parallel_threads", "runs", "tps_mean", "ci_low",
        "ci_high", "half_width_rel", "cov_runs", "i2", "agreement", "lat_pctl_ms", "lag_p95_ms", "catch_up_s"])))
    try:
        costs = views.costs(a)
    except AnalysisError:
        costs = pd.DataFrame()
    if not costs.empty:
        from benchlib.analysis.resources import cpu_bound

        bound = cpu_bound(a)
        busy = ""
        if not bound.empty:
            busy = (f" Host CPU busy over the load windows: median {bound.busy.median():.0%} of {int(bound.cpus.max())} "
                    f"CPUs (iowait {bound.iowait.median():.0%}); runs over 90% busy are flagged in the warnings.")
        shown = costs[costs.cost.isin(["cpu_ms", "ctx_switches", "write_kb", "innodb_fsyncs", "disk_writes"])]
        wide = shown.pivot_table(index=["label", "role"], columns="cost", values="per_trx", aggfunc="first",
                                 observed=True).reset_index()
        wide.columns = [str(c) for c in wide.columns]
        parts.append(_fold("Resources", "<p>Cost per transaction (a counter's rate over the load window divided by "
                           "the run's throughput), geometric mean over runs (intervals: the resources notebook); "
                           "roles: writer (sysbench's node), replicas and other members summed, host (every process "
                           f"on it).{html.escape(busy)}</p>" + _table(wide, list(wide.columns))))
    parts.append(_fold("Runs", _table(a.runs, [
        "run_id", "status", "rate", "trim_s", "tps_mean", "tps_se", "n_eff", "tps_cov", "stability", "lat_pctl_ms",
        "lag_p95_ms", "lag_verdict", "catch_up_s"])))
    if report.notebooks:
        parts.append("<h2>Notebooks</h2><ul>" + "".join(
            f'<li><a href="notebooks/{p.name}">{html.escape(p.name)}</a></li>' for p in report.notebooks) + "</ul>")
    parts.append("<p class='files'>Statistics: benchlib.analysis (statistics spec); charts: benchlib.charts.</p>"
                 "</body></html>")
    return "\n".join(parts)
