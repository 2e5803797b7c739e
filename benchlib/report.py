"""Publishing: a campaign's charts as PNG (2x), SVG and self-contained HTML, and one report page.

``publish(campaign)`` analyses the campaign, builds every chart that applies (``figures``), exports
each one (one browser kept for all static images), executes the analysis notebooks that apply, and
writes ``report.html``: the warnings at the top, the statistical verdicts, the interactive charts and
links to every file. Output goes to ``CAMPAIGN/report/<UTC time>/``; earlier reports are kept. A report is
written into a hidden folder and renamed when complete, so a publish that fails or is killed leaves none half-made.

Each axis says its own findings and draws its own section (``benchlib.axes``: the probe's stale reads, a fault's
failover); the interference words are in ``benchlib.analysis.interference_findings``.
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

from benchlib.axis import AXES
from benchlib.analysis import likeness, views
from benchlib.analysis.campaign import AnalysisError, CampaignAnalysis, analyze
from benchlib.analysis.headline import headline, ratio_findings as _ratio_findings
from benchlib.analysis.problems import problems_html
from benchlib.analysis.interference_findings import events as _events
from benchlib.analysis.interference_findings import interference_findings, noise_line
from benchlib.analysis.load import load_sentence
from benchlib.catalogue import BASELINE
from benchlib.charts.catalogue import CATALOGUE, figures
from benchlib.page import fold, table


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
    #: each axis's findings in words, by its section (benchlib.axes): "consistency" (stale reads per cluster and read
    #: consistency), "failover" (unavailability and lost writes per fault configuration), an axis of one's own
    axes: dict[str, list[str]] = field(default_factory=dict)
    interference: list[str] = field(default_factory=list)  # what took the host from the lab, in words
    settled: str = ""  # how many headline ratios are settled, and what ended the campaign
    placement: str = ""  # whether the clusters shared the host's CPUs and disk
    load: str = ""  # what the runs ran: workloads, dataset, key distribution
    ratios: list = field(default_factory=list)  # the throughput ratios (benchlib.analysis.headline.RatioFinding)

    def terminal(self) -> list[str]:
        """``lines()`` as a terminal shows them: each ratio's mechanism under it, a clause a line."""
        by_sentence = {f.sentence(): f for f in self.ratios}
        out = []
        for line in self.lines():
            f = by_sentence.get(line)
            if f is None or not f.because:
                out.append(line)
                continue
            out += [f"{f.what}: {f.verdict}.", "  why:", *(f"    - {c}" for c in f.because)]
        return out

    def lines(self) -> list[str]:
        """Every finding in words, in the page's order: the load, the sections that say what the runs were (a
        fault's), the throughput ratios, the other axes' (stale reads), the audit, the interference, the settlement."""
        first = [x for a in AXES.values() if a.report_first for x in self.axes.get(a.section or a.name, [])]
        later = [x for a in AXES.values() if not a.report_first for x in self.axes.get(a.section or a.name, [])]
        return [*([self.load] if self.load else []), *first, *self.headline, *([self.placement] if self.placement else []), *later,
                *([self.audit] if self.audit else []), *self.interference,
                *([self.settled] if self.settled else [])]


CSS = """body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:1220px;margin:2em auto;padding:0 16px;color:#222}
table.t{border-collapse:collapse;font-size:12px;margin:1em 0;display:block;max-width:100%;overflow-x:auto}
table.t td,table.t th{padding:3px 6px;border-bottom:1px solid #ddd}
details{margin:.4em 0}summary{cursor:pointer}summary h2{display:inline}
div.invalid{background:#fde0dc;padding:4px 12px;margin:8px 0}
.how{font-size:14px;color:#444}div.why{font-size:14px;color:#333;margin:.2em 0 .6em}div.why ul{margin:.1em 0}.chart{margin:2em 0;max-width:100%;overflow-x:auto}.files{font-size:13px;color:#555}"""


def publish(campaign: str | Path, *, out: Path | None = None, baseline: str = BASELINE, notebooks: bool = True,
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
    report.headline, report.interference = said["headline"], said["interference"]
    report.audit, report.settled = "".join(said["audit"]), "".join(said["settled"])
    report.placement, report.load = "".join(said["placement"]), "".join(said["load"])
    report.ratios = _ratio_findings(a)
    report.axes = {k: v for k, v in said.items()
                   if k not in ("load", "headline", "interference", "audit", "settled", "placement")}
    report.page.write_text(_page(campaign, a, figs, report))
    return report


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
    load, the throughput ratios, the audit, stale reads, failover, interference and the settlement."""
    said = {"load": [x for x in [load_sentence(a)] if x], "headline": headline(a), "placement": [x for x in [_placement(a)] if x] if said_ratios(a) else [],
            "audit": [x for x in [_audited(a)] if x]}
    for axis in AXES.values():  # each axis's own findings (the probe's stale reads, a fault's failover)
        said[axis.section or axis.name] = a.findings_of(axis.name)
    return {**said, "interference": list(interference_findings(a, campaign)),
            "settled": [x for x in [settlement(a, campaign)] if x]}


def _why(f) -> str:
    """A ratio's mechanism under it, clause by clause."""
    if not f.because:
        return ""
    return "<div class='why'>Why:<ul>" + "".join(f"<li>{html.escape(c)}</li>" for c in f.because) + "</ul></div>"


def _placement(a: CampaignAnalysis) -> str:
    """Whether the clusters compared shared the host's CPUs and disk (said beside the throughput ratios)."""
    cpus = (a.record.host or {}).get("cpus")
    return likeness.placement_words(a.runs, cpus if isinstance(cpus, int) else None)


def said_ratios(a: CampaignAnalysis) -> bool:
    c = a.comparisons
    return not c.empty and bool(c.metric.isin(["tps", "read_tps"]).any())


#: a verdict shared by this many ratios or more is said once, over the list of them
SAME_VERDICT = 6


def _findings(a: CampaignAnalysis, campaign: Path) -> list[str]:
    found = _ratio_findings(a)
    if not found:
        return []
    groups: dict[str, list] = {}
    for f in found:
        groups.setdefault(f.verdict, []).append(f)
    items = ""
    for verdict, same in groups.items():  # in the order the ratios come
        if len(same) < SAME_VERDICT:
            items += "".join(f"<li>{html.escape(f.what)}: {html.escape(f.verdict)}.{_why(f)}</li>" for f in same)
        else:
            inner = "".join(f"<li>{html.escape(f.what)}.{_why(f)}</li>" for f in same)
            items += (f"<li>{html.escape(verdict[:1].upper() + verdict[1:])}, for these {len(same)} ratios:"
                      f"<ul>{inner}</ul></li>")
    whose = ("the writers', and the read split's readers' on the other nodes"
             if (a.comparisons.metric == "read_tps").any() else "")
    noted = "".join(f" {note}" for axis in AXES.values() if (note := axis.page_notes(a).get("findings")))
    lead = [f'<h2 id="findings">Findings</h2><p>Throughput against the baseline{", " + whose if whose else ""} '
            f"(ratio of mean TPS; margin δ = {a.comparisons.margin.iloc[0]:.0%}: a difference smaller than that is "
            f"not called real).{noted}</p>"
            f"<ul>{items}</ul>"]
    placed = _placement(a)
    if placed:
        lead.append(f"<p>{html.escape(placed)}</p>")
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


def _failed(a: CampaignAnalysis) -> str:
    """Runs that failed (a hung cluster, a node down, a load that did not finish), with the reason each recorded:
    left out of every statistic, said before them."""
    bad = a.runs[a.runs.status == "failed"] if "status" in a.runs else a.runs.iloc[0:0]
    if bad.empty:
        return ""
    rows = "".join(f"<li><b>{html.escape(str(r.run_id))}</b>: {html.escape(str(r.reason))}</li>"
                   for r in bad.itertuples(index=False))
    n = len(bad)
    return (f'<div class="invalid"><h2>{n} failed run{"s" if n > 1 else ""}, left out of every statistic and chart'
            f"</h2><ul>{rows}</ul></div>")


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


def _axis_sections(a: CampaignAnalysis, report: Report, *, first: bool) -> list[str]:
    """Each axis's section of the page (``benchlib.axes``): its own renderer, else its findings as a list; those that
    say what the runs were (a fault's) come before the throughput findings, the others after the interference."""
    out = []
    for axis in AXES.values():
        said = report.axes.get(axis.section or axis.name) or []
        if not said or axis.report_first != first:
            continue
        own = axis.report(a, said)
        if own is not None:
            out.append(own)
        else:
            out.append(f"<h2>{html.escape(axis.title[:1].upper() + axis.title[1:])}</h2><ul>"
                       + "".join(f"<li>{html.escape(x)}</li>" for x in said) + "</ul>")
    return out


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
             f"<p>{html.escape(report.load)}</p>" if report.load else "",
             _invalid(a), _failed(a), *_axis_sections(a, report, first=True), *_findings(a, campaign)]
    if not a.comparisons.empty:
        parts.append(f'<p class="how">{html.escape(_method(a))}</p>')
    parts.append(_interference(report, campaign))
    parts += _axis_sections(a, report, first=False)
    parts.append(f"<h2>Warnings</h2>{problems_html(a.problems)}")
    from benchlib import studies

    study = studies.study_of(a)
    if study is not None:
        ref = studies.compare_reference(a, study.id)
        parts.append(f"<h2>Study {study.id} against the published figures</h2><p>{html.escape(study.title)}. "
                     f"Needs a remote lab: {html.escape(study.remote)}.</p>"
                     + table(ref.claims, ["claim", "published", "measured", "holds", "how"]))
    shared = (report.folder / "charts" / "plotly.min.js").exists()  # the charts' own copy, beside their pages
    for i, (name, fig) in enumerate(figs.items()):
        title = CATALOGUE[name][0]
        # plotly.js once: the charts folder's copy (relative: the folder opens offline, wherever it is moved), or
        # inlined where no chart page was written
        js: bool | str = (i == 0) if not shared else ("charts/plotly.min.js" if i == 0 else False)
        div = pio.to_html(fig, full_html=False, include_plotlyjs=js, div_id=f"chart-{name}")
        links = " · ".join(f'<a href="charts/{name}.{ext}">{ext.upper()}</a>'
                           for ext in ("png", "svg", "html") if (report.folder / "charts" / f"{name}.{ext}").exists())
        parts.append(f'<div class="chart"><h2>{html.escape(title)}</h2>{div}<p class="files">{links}</p></div>')
    for name, why in report.left_out.items():
        parts.append(f'<div class="chart"><h2>{html.escape(CATALOGUE[name][0])}</h2><p class="how">Not drawn: '
                     f"{html.escape(why)}.</p></div>")
    if not a.comparisons.empty:
        parts.append(fold("Against the baseline", table(a.comparisons, [
            "cluster", "topology", "durability", "workload", "threads", "metric", "ratio", "ci_low", "ci_high", "p",
            "q", "verdict", "runs_needed_per_side", "mde", "fieller_low", "fieller_high"])))
    searches = views.sustained_or_empty(a)
    if not searches.empty:
        parts.append(fold("Maximum sustained throughput", table(searches, [
            "label", "workload", "threads", "peak_tps", "sustained_tps", "first_failing_tps", "bracket_rel",
            "sustained_vs_peak", "fc_limited", "failing_because", "runs", "status"])))
    parts.append(fold("Configurations", table(a.configs, [
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
        parts.append(fold("Resources", "<p>Cost per transaction (a counter's rate over the load window divided by "
                           "the run's throughput), geometric mean over runs (intervals: the resources notebook); "
                           "roles: writer (sysbench's node), replicas and other members summed, host (every process "
                           f"on it).{html.escape(busy)}</p>" + table(wide, list(wide.columns))))
    parts.append(fold("Runs", table(a.runs, [
        "run_id", "status", "rate", "trim_s", "tps_mean", "tps_se", "n_eff", "tps_cov", "stability", "lat_pctl_ms",
        "lag_p95_ms", "lag_verdict", "catch_up_s"])))
    if report.notebooks:
        parts.append("<h2>Notebooks</h2><ul>" + "".join(
            f'<li><a href="notebooks/{p.name}">{html.escape(p.name)}</a></li>' for p in report.notebooks) + "</ul>")
    parts.append("<p class='files'>Statistics: benchlib.analysis (statistics spec); charts: benchlib.charts.</p>"
                 "</body></html>")
    return "\n".join(parts)
