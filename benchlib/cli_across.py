"""The commands across campaigns: ``runs`` (the run index), ``compare`` (two campaigns) and ``history`` (one
configuration over many campaigns, with its change points). ``benchlib.cli`` registers them on its app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from benchlib.errors import SpecError

__all__ = ["compare_cmd", "history_cmd", "runs_cmd"]

ROOTS_HELP = "campaign folders or folders of them (default: runs data/campaigns)"
MATCH_HELP = "column=value, e.g. -m system=galera -m threads=16 (value as JSON, else text)"


def _matching(roots: list[Path] | None, match: list[str], where: str | None):
    """The run index over ``roots`` and its runs matching every ``column=value`` of ``match`` and ``where``."""
    from benchlib.run_index import RunIndex

    equals: dict[str, Any] = {}
    for m in match:
        key, eq, value = m.partition("=")
        if not eq:
            raise SpecError(f"--match {m!r} is not column=value", hint="e.g. -m system=galera -m threads=16")
        try:
            equals[key] = json.loads(value)
        except json.JSONDecodeError:
            equals[key] = value
    idx = RunIndex([p for p in (roots or [Path("runs"), Path("data/campaigns")]) if roots or p.is_dir()])
    return idx, idx.runs(where, **equals)


def runs_cmd(roots: list[Path] = typer.Argument(None, help=ROOTS_HELP),
             match: list[str] = typer.Option([], "--match", "-m", help=MATCH_HELP),
             where: Optional[str] = typer.Option(None, help="an SQL condition on the runs, e.g. \"summary_tps > 500\""),
             columns: str = typer.Option("campaign,run_id,status,system,cluster,workload,threads,summary_tps",
                                         help="the columns to print, comma-separated (all: *)")) -> None:
    """Every run of every campaign under ROOTS that matches, from the run index (benchlib.run_index): one table
    across campaigns, built incrementally and cached."""
    idx, found = _matching(roots, match, where)
    keep = list(found.columns) if columns.strip() == "*" else [c.strip() for c in columns.split(",") if c.strip()]
    missing = [c for c in keep if c not in found.columns]
    if missing:
        raise SpecError(f"no column {', '.join(missing)} in the run index", hint=f"columns: {', '.join(idx.columns)}")
    typer.echo(found[keep].to_string(index=False) if len(found) else "no run matches")
    typer.echo(f"{len(found)} runs in {found.campaign.nunique() if len(found) else 0} campaigns "
               f"(of {len(idx.files)} indexed)")


def compare_cmd(a: Path = typer.Argument(..., metavar="A", help="campaign folder A, the reference, e.g. "
                                         "data/campaigns/quick"),
                b: Path = typer.Argument(..., metavar="B", help="campaign folder B, compared with A, e.g. runs/quick"),
                metric: str = typer.Option("tps", help="tps | latency | lag"),
                day_cov: Optional[float] = typer.Option(None, help="day-to-day variation of a campaign's mean, "
                                                        "relative (0.03 = 3%); default: estimated from the history"),
                history: Optional[list[Path]] = typer.Option(None, help="folders of earlier campaigns to estimate "
                                                             "it from (default: the folders A and B are in)"),
                margin: float = typer.Option(0.02, help="ratios within 1 +- margin are EQUIVALENT")) -> None:
    """Campaign B against campaign A: each configuration both measured, its ratio B/A with a 95% interval that
    counts the day-to-day variation two campaigns add, a verdict, and what differs between the campaigns."""
    from benchlib.analysis.across import compare_campaigns

    for side, folder in (("A", a), ("B", b)):
        if not (folder / "campaign.json").exists():
            raise typer.BadParameter(f"{folder} is not a campaign folder (no campaign.json)", param_hint=side)
    typer.echo(compare_campaigns(a, b, metric=metric, day_cov=day_cov, history=history, margin=margin).words())


def history_cmd(roots: list[Path] = typer.Argument(None, help=ROOTS_HELP),
                match: list[str] = typer.Option([], "--match", "-m", help=MATCH_HELP),
                where: Optional[str] = typer.Option(None, help="an SQL condition on the runs"),
                measure: str = typer.Option("summary_tps", help="the run index's column to follow, e.g. "
                                            "summary_lat_pctl_ms"),
                chart: Optional[Path] = typer.Option(None, help="also write the chart here (.html, .png or .svg)")
                ) -> None:
    """One configuration across campaigns (the runs matching -m): its measure campaign by campaign, oldest first,
    with a 95% interval, and the change points where its level moved."""
    from benchlib.analysis.history import history

    idx, found = _matching(roots, match, where)
    if measure not in idx.columns:
        raise SpecError(f"no column {measure} in the run index", hint="e.g. summary_tps, summary_lat_pctl_ms")
    configs = found.groupby(["system", "topology", "workload", "threads"], dropna=False).ngroups if len(found) else 0
    if configs > 1:
        typer.echo(f"note: the matching runs are {configs} configurations (system, topology, workload, threads): "
                   "add -m to follow one")
    h = history(found, measure=measure)
    typer.echo(h.words())
    if chart is not None and not h.points.empty:
        from benchlib.charts.across import history_chart
        from benchlib.charts.export import Exporter

        fmt = chart.suffix.lstrip(".")
        if fmt not in ("html", "png", "svg"):
            raise SpecError(f"--chart {chart}: no chart format {chart.suffix or '(none)'}",
                            hint="name a .html, .png or .svg file")
        fig = history_chart(h, f"{measure}: " + ", ".join(match))
        if fmt == "html":
            Exporter().write(fig, chart.with_suffix(""), ["html"])
        else:
            with Exporter() as ex:
                ex.write(fig, chart.with_suffix(""), [fmt])
        typer.echo(f"chart: {chart}")
