"""The ``benchlib`` command line.

User errors print one message (what, where, how to fix) and exit with code 2,
never a traceback.

One typer app, a function per command; the ``lab`` commands are in ``benchlib.cli_lab``, those across campaigns
(``runs``, ``compare``, ``history``) in ``benchlib.cli_across``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from benchlib import cli_across
from benchlib.catalogue import BASELINE
from benchlib.cli_lab import _err, _print_status, _progress, lab_app
from benchlib.errors import BenchlibError, DiskFullError, disk_full

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="benchlib: benchmark MySQL-family replication on real lab clusters.")
app.add_typer(lab_app, name="lab")


def _print_version(value: bool) -> None:
    if value:
        from benchlib import __version__
        from benchlib.environment import git_revision

        rev = git_revision()
        typer.echo(f"benchlib {__version__} ({f'revision {rev}' if rev else 'an installed copy: no git revision'})")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="print benchlib's version and git revision, and exit")) -> None:
    """benchlib: benchmark MySQL-family replication on real lab clusters."""


app.command("runs")(cli_across.runs_cmd)
app.command("compare")(cli_across.compare_cmd)
app.command("history")(cli_across.history_cmd)

DEMO_CAMPAIGN = Path("examples/campaigns/quick.toml")


@app.command()
def doctor(noise: bool = typer.Option(True, help="also measure this host's noise (steal, background CPU, fsync "
                                                  "latency) for a few seconds"),
           seconds: float = typer.Option(3.0, min=0.5, max=600, help="how long the CPU is watched for noise"),
           folder: Path = typer.Option(Path("runs"), help="where fsync latency is measured (the runs folder)")) -> None:
    """Report system packages, versions and WAN capabilities; print the install command for what is missing; measure
    and state this host's noise, with what to do about each kind."""
    from benchlib.doctor import checks, noise_lines, report_lines

    found = checks()
    for line in report_lines(found):
        typer.echo(line)
    if noise:
        for line in noise_lines(folder, seconds):
            typer.echo(line)
    if any(not c.ok and c.required for c in found):
        raise typer.Exit(1)


@app.command()
def run(spec: Path = typer.Argument(..., help="campaign spec (TOML), e.g. examples/campaigns/quick.toml"),
        runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="campaigns are stored in RUNS_DIR/<name>/"),
        failed: str = typer.Option("spec", help="redo | keep the failed runs of an earlier start "
                                                "(spec: the campaign spec's policy)"),
        keep_lab: bool = typer.Option(False, help="leave a lab the campaign brought up running"),
        notebook: bool = typer.Option(True, "--notebook/--no-notebook",
                                      help="execute notebooks/campaign.ipynb through papermill and keep the executed "
                                           "copy in the campaign folder (default), or run in this process")) -> None:
    """Run a campaign (or resume it: stored runs are skipped) and print what it stored."""
    code = _run_campaign(spec, runs_dir, failed=failed, keep_lab=keep_lab, notebook=notebook)
    if code:
        raise typer.Exit(code)


@app.command()
def provision(lab_spec: Path = typer.Argument(..., help="the lab spec (the same TOML a local lab comes up from)"),
              hosts: Path = typer.Argument(..., help="the hosts file: which machine runs which node, how to log in"),
              folder: Optional[Path] = typer.Option(None, "--dir", help="where its state, passwords, log and remote "
                                                                         "lab spec are kept (default "
                                                                         "provisioned/<lab>)")) -> None:
    """Build the lab spec's clusters on real hosts with Ansible (packages, my.cnf, accounts, replication, Galera,
    Group Replication) and write the remote lab spec of what was built. Run again: it changes nothing, or goes on
    where a failed run stopped."""
    from benchlib.provision.build import provision as build

    done = build(lab_spec, hosts, folder)
    typer.echo(done.summary())
    typer.echo(f"next: benchlib lab check {done.remote_spec}")


@app.command()
def unprovision(folder: Path = typer.Argument(..., help="the folder benchlib provision kept (provisioned/<lab>)")
                ) -> None:
    """Stop and remove what benchlib provision built (servers, datadirs, files, the packages it installed, the mysql
    account it made), leaving the hosts as they were; then remove the folder."""
    from benchlib.provision.build import unprovision as undo

    changed, seconds = undo(folder)
    typer.echo(f"unprovisioned {folder}: {changed} changes on the hosts ({seconds:.0f} s)")


def _run_campaign(spec: Path, runs_dir: Path, *, failed: str = "spec", keep_lab: bool = False,
                  notebook: bool = True) -> int:
    from benchlib.campaign.runner import CampaignParameters, campaign_dir, run_campaign
    from benchlib.campaign.plan import plan
    from benchlib.campaign.spec import load_campaign_spec

    params = CampaignParameters.check(spec=str(spec.resolve()), runs_dir=str(runs_dir.resolve()), failed=failed,
                                      keep_lab=keep_lab, progress="text")
    campaign, lab_spec = load_campaign_spec(params.spec)  # bad input fails here, before any kernel starts
    runs = plan(campaign, lab_spec, str(spec))
    folder = campaign_dir(campaign, params.runs_dir)
    typer.echo(f"campaign {campaign.name}: {len(runs)} runs on lab {lab_spec.name} -> {folder}"
               + (" (then sustained-throughput searches)" if campaign.sustained else ""))
    if campaign.note:
        typer.echo(f"note: {campaign.note}")
    if notebook:
        from benchlib.notebooks import execute, output_path

        out = output_path(folder / "notebooks", "campaign")
        typer.echo(f"executing notebooks/campaign.ipynb (executed copy: {out})")
        execute("campaign", out, params.model_dump())
    else:
        run_campaign(**params.model_dump())
    counts = _stored_counts(folder, runs)
    typer.echo(f"campaign {campaign.name}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
               + f"; load the runs with benchlib.load_campaign({str(folder)!r})")
    if campaign.sustained:
        from benchlib.analysis.campaign import analyze
        from benchlib.analysis.views import sustained

        for row in sustained(analyze(folder)).itertuples(index=False):
            typer.echo(f"sustained {row.label} {row.workload} t{row.threads}: {row.sustained_tps:.0f} tps "
                       f"(first failing {row.first_failing_tps:.0f}, peak {row.peak_tps:.0f}; {row.status}"
                       f"{', FC_LIMITED' if row.fc_limited else ''})")
    return 1 if counts.get("failed") or counts.get("invalid") else 0


def _print_claims(result) -> None:
    width = max(len(c) for c in result.claims.claim) if len(result.claims) else 10
    typer.echo(f"study {result.study.id}: {result.study.title}")
    for c in result.claims.itertuples(index=False):
        typer.echo(f"  {c.holds:<12} {c.claim:<{min(width, 90)}}  published {c.published}; measured {c.measured}")
    typer.echo("  holds: " + ", ".join(f"{n} {k}" for k, n in sorted(result.summary.items())))


@app.command("compare-reference")
def compare_reference(campaign: Path = typer.Argument(..., help="campaign folder, e.g. runs/study001-quick"),
                      study: Optional[str] = typer.Option(None, help="000 | 001 | 002 | 003 | 004 (default: from "
                                                                     "the campaign's name)"),
                      out: Optional[Path] = typer.Option(None, help="also write claims.csv and figures.csv here")
                      ) -> None:
    """Place a campaign's results next to the published figures of its study (data/reference/): each
    published finding judged on ratios and shapes, every published number with ours beside it."""
    from benchlib import studies

    if not (campaign / "campaign.json").exists():
        raise typer.BadParameter(f"{campaign} is not a campaign folder (no campaign.json)", param_hint="CAMPAIGN")
    result = studies.compare_reference(campaign, study)
    _print_claims(result)
    f = result.figures
    typer.echo(f"  published numbers: {len(f)}, with a local counterpart measured: {int(f.measured.notna().sum())}")
    if out:
        studies.record(result, out)
        typer.echo(f"written: {out / 'claims.csv'}, {out / 'figures.csv'}")


@app.command()
def study(study_id: str = typer.Argument(..., metavar="STUDY", help="000 | 001 | 002 | 003 | 004"),
          full: bool = typer.Option(False, help="the full campaign (hours, for a real lab) instead of the quick one"),
          runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="campaigns are stored in RUNS_DIR/<name>/"),
          publish_report: bool = typer.Option(True, "--publish/--no-publish", help="publish the report afterwards")
          ) -> None:
    """Reproduce one published study: run its campaign on the local lab (resuming if it was started),
    judge the results against the published figures, and publish the report with the study's notebook."""
    from benchlib import studies
    from benchlib.campaign.runner import campaign_dir
    from benchlib.campaign.spec import load_campaign_spec

    s = studies.get(study_id)
    spec = s.full if full else s.quick
    typer.echo(f"study {s.id}: {s.title}\n  reproduces locally: {s.local}\n  needs a remote lab: {s.remote}")
    code = _run_campaign(spec, runs_dir)
    folder = campaign_dir(load_campaign_spec(spec)[0], runs_dir)
    result = studies.compare_reference(folder, s.id)
    studies.record(result, folder / "reference")
    _print_claims(result)
    if publish_report:
        from benchlib.report import publish as publish_campaign

        r = publish_campaign(folder)
        typer.echo(f"report: {r.page}")
    if code:
        raise typer.Exit(code)


@app.command()
def validate(campaign: Path = typer.Argument(..., help="campaign folder, e.g. runs/quick"),
             baseline: str = typer.Option(BASELINE, help="topology or cluster the ratios are against")) -> None:
    """List every problem of a campaign with a severity (failed runs, errors/s, sampling gaps, replicas
    not in sync at start, unstable runs, repetitions that disagree); exit 1 when there are errors."""
    from benchlib.analysis.campaign import analyze

    a = analyze(campaign, baseline=baseline)
    for p in a.problems.itertuples(index=False):
        typer.echo(f"{p.severity:8} {p.where}: {p.what}" + (f"  (fix: {p.fix})" if p.fix else ""))
    counts = a.problems.severity.value_counts().to_dict()
    typer.echo(f"{campaign}: {len(a.runs)} runs; {counts.get('error', 0)} errors, {counts.get('warning', 0)} "
               f"warnings, {counts.get('info', 0)} notes")
    if counts.get("error"):
        raise typer.Exit(1)


@app.command()
def publish(campaign: Path = typer.Argument(..., help="campaign folder, e.g. runs/quick"),
            baseline: str = typer.Option(BASELINE, help="topology or cluster the ratios are against"),
            out: Optional[Path] = typer.Option(None, help="output folder (default: CAMPAIGN/report/<UTC time>/)"),
            notebooks: bool = typer.Option(True, help="also execute the analysis notebooks into the report"),
            static: bool = typer.Option(True, help="PNG and SVG next to the HTML of every chart (needs Chromium)")) -> None:
    """Write every chart as PNG (2x), SVG and interactive HTML, and one report page with the charts, the
    statistical verdicts and the warnings, plus the executed analysis notebooks."""
    import statistics

    from benchlib.report import publish as publish_report

    r = publish_report(campaign, out=out, baseline=baseline, notebooks=notebooks, static=static)
    timing = (f"; static images {statistics.median(r.image_seconds):.2f} s median each"
              if r.image_seconds else "")
    typer.echo(f"{len(r.files)} chart files, {len(r.notebooks)} notebooks{timing}")
    for line in r.terminal():
        typer.echo(line)
    typer.echo(f"report: {r.page}")


@app.command()
def pack(campaigns: list[Path] = typer.Argument(..., help="campaign folders, e.g. runs/quick data/campaigns/*"),
         again: bool = typer.Option(False, "--again", help="rewrite a pack even with no new runs (a pack written "
                                    "by an earlier benchlib, in today's encoding)")) -> None:
    """Pack each finished campaign's runs into a few compressed files (one per kind of frame, the facts common to
    every run stored once) and remove the run folders it took in; every reader reads them as before. Runs added
    later stay folders until the next pack."""
    from benchlib.campaign.folder import CampaignFolder
    from benchlib.packing import pack_campaign

    for campaign in campaigns:
        folder = CampaignFolder(campaign).lock()
        try:
            typer.echo(f"{campaign}: {pack_campaign(campaign, again=again).words()}")
        finally:
            folder.release()


@app.command()
def unpack(campaign: Path = typer.Argument(..., help="a campaign folder, e.g. data/campaigns/quick"),
           to: Path = typer.Option(..., "--to", help="a new folder for the campaign with one folder per run")) -> None:
    """Write a packed campaign out again with one folder per run (manifest.json, raw/, a parquet file per frame),
    as benchlib run writes them, e.g. to read sysbench's raw output or hand the runs to other tools."""
    from benchlib.packing import unpack_campaign

    runs = unpack_campaign(campaign, to)
    typer.echo(f"{len(runs)} runs of {campaign} written to {to}")


@app.command("check-report")
def check_report(page: Path = typer.Argument(..., help="a published report.html (or any page of plotly charts)"),
                 width: int = typer.Option(1280, help="browser window width, px")) -> None:
    """Open a published page in headless Chromium at WIDTH px and say what a reader would stumble on: a page
    wider than the window, overlapping or cut-off text in a chart, a chart without title or subtitle."""
    from benchlib.charts.layout import check_page

    lay = check_page(page, width=width)
    for problem in lay.problems:
        typer.echo(problem)
    typer.echo(f"{len(lay.charts)} charts, {len(lay.finding_items)} findings, page {lay.page_width} px in a "
               f"{lay.viewport} px window: {'ok' if lay.ok else f'{len(lay.problems)} problems'}")
    if not lay.ok:
        raise typer.Exit(1)


@app.command()
def rerun(campaigns: list[Path] = typer.Argument(..., help="campaign folders, e.g. runs/quick data/campaigns/*"),
          notebook: list[str] = typer.Option([], "--notebook", "-n",
                                             help="only these notebooks (default: every one that applies)"),
          param: list[str] = typer.Option([], "--param", "-p", help="notebook parameter name=value (value as JSON, "
                                                                    "else text), e.g. -p baseline=galera")) -> None:
    """Re-execute the analysis notebooks of one or many campaigns through papermill (after an upgrade, or
    with new parameters). Executed copies go to CAMPAIGN/notebooks/; earlier copies are kept."""
    from benchlib.errors import SpecError
    from benchlib.notebooks import rerun as rerun_notebooks

    params: dict[str, Any] = {}
    for p in param:
        key, eq, value = p.partition("=")
        if not eq or not key.isidentifier():
            raise SpecError(f"--param {p!r} is not name=value", hint="e.g. -p baseline=galera -p 'runs=[\"0001-...\"]'")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    for campaign in campaigns:
        for out in rerun_notebooks(campaign, notebook or None, params):
            typer.echo(f"{campaign}: {out.name}")


@app.command()
def demo(spec: Path = typer.Option(DEMO_CAMPAIGN, help="campaign to run on its lab"),
         runs_dir: Path = typer.Option(Path("runs/demo"), "--runs-dir",
                                       help="each demo stores a new campaign folder under RUNS_DIR/<UTC time>/"),
         keep: bool = typer.Option(False, help="leave the lab up afterwards")) -> None:
    """The main job: bring up the demo lab, check it, run the quick campaign through its notebook, tear the
    lab down, publish the campaign's report and print where it is."""
    import time

    from benchlib.campaign.spec import load_campaign_spec
    from benchlib.lab.lab import LocalLab

    _, lab_spec = load_campaign_spec(spec)
    started = time.monotonic()
    typer.echo(f"bringing up lab {lab_spec.name} ...")
    lab = LocalLab.up(lab_spec, progress=_progress)
    try:
        _print_status(lab)
        for line in lab.health.check().lines():
            typer.echo(line)
        folder = runs_dir / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        campaign_started = time.monotonic()
        code = _run_campaign(spec, folder)
        campaign_s = time.monotonic() - campaign_started
    finally:
        if not keep:
            lab.close(down=True)
            typer.echo(f"lab {lab.name} is down")
    from benchlib.report import publish as publish_report

    (campaign_folder,) = [p.parent for p in folder.glob("*/campaign.json")]
    typer.echo(f"publishing {campaign_folder} ...")
    r = publish_report(campaign_folder)
    for line in r.terminal():
        typer.echo(line)
    typer.echo(f"campaign {_minutes(campaign_s)}, the main job {_minutes(time.monotonic() - started)} "
               "(lab, check, campaign, report)")
    typer.echo(f"report: {r.page}")
    if code:
        raise typer.Exit(code)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _stored_counts(folder: Path, planned: list) -> dict[str, int]:
    """Runs by status as stored: the planned ones and those the adaptive mode added; a planned run not stored is
    missing."""
    from collections import Counter

    from benchlib.store import list_runs, read_manifest

    stored = list_runs(folder)
    counts = Counter(read_manifest(r).status for r in stored)
    missing = len({r.run_id for r in planned} - {r.name for r in stored})
    if missing:
        counts["missing"] = missing
    return dict(counts)


def _terminated(signum, frame):
    raise KeyboardInterrupt  # a bring-up in progress rolls back, as on Ctrl-C


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    try:
        # standalone_mode=False: typer returns the exit code (130 after Ctrl-C/SIGTERM, N for Exit(N))
        # and lets benchlib's own errors through, so they print as one message without a traceback.
        rc = app(standalone_mode=False)
    except BenchlibError as exc:
        _err(f"error: {exc.render()}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        rc = 130
    except OSError as exc:
        if not disk_full(exc):
            raise
        where = Path(exc.filename).parent if exc.filename else Path.cwd()
        err = DiskFullError.of(where, f"could not write {exc.filename or 'a file'}")
        _err(f"error: {err.render()}")
        sys.exit(err.exit_code)
    except Exception as exc:
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # typer's usage errors (its own vendored click)
            exc.show()
            sys.exit(exc.exit_code)
        raise
    if rc == 130:
        _err("interrupted")
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
