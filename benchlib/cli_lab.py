"""The ``benchlib lab`` commands: bring up, inspect, tune, heal and tear down labs (``benchlib.cli`` adds them)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import typer

__all__ = ["lab_app"]

lab_app = typer.Typer(no_args_is_help=True, help="Bring up, inspect, tune, heal and tear down local labs.")


def _err(text: str) -> None:
    typer.echo(text, err=True)


def _progress(text: str) -> None:
    typer.echo(f"  {text}", err=True)


def _print_status(lab) -> None:
    from benchlib.lab.router import status_lines
    from benchlib.lab.status import format_status

    for line in format_status(lab.name, lab.health.status()) + status_lines(lab):
        typer.echo(line)


@lab_app.command("up")
def lab_up(spec: Path = typer.Argument(..., help="lab spec (TOML), e.g. examples/labs/async-1p2r.toml"),
           timeout: float = typer.Option(120.0, help="seconds to wait for the lab to be ready")) -> None:
    """Bring a lab up (or heal it, if the same spec is already up) and print its status."""
    from benchlib.lab.lab import LocalLab

    lab = LocalLab.up(spec, timeout=timeout, progress=_progress)
    _print_status(lab)


@lab_app.command("status")
def lab_status(name: Optional[str] = typer.Argument(None, help="lab name or lab spec file, local or remote (default: "
                                                               "the only local lab that is up)"),
               as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Each node's role, port, pid and replication state (threads, GTIDs, semi-sync, wsrep, group members)."""
    from benchlib.labs import open_target

    lab = open_target(name)
    try:
        if as_json:
            typer.echo(json.dumps([asdict(s) for s in lab.health.status()], indent=2, default=str))
        else:
            _print_status(lab)
    finally:
        lab.close()


@lab_app.command("list")
def lab_list() -> None:
    """The labs that are up."""
    from benchlib.lab.state import list_labs

    for name in list_labs():
        typer.echo(name)


@lab_app.command("down")
def lab_down(name: Optional[str] = typer.Argument(None, help="lab name (default: the only lab that is up)")) -> None:
    """Stop every node and relay of a lab, delete its namespaces and its directory."""
    from benchlib.lab.lab import LocalLab

    lab = LocalLab.open(name)
    lab.close(down=True)
    typer.echo(f"lab {lab.name} is down")


@lab_app.command("heal")
def lab_heal(name: Optional[str] = typer.Argument(None, help="lab name"),
             timeout: float = typer.Option(120.0, help="seconds to wait for rejoined nodes")) -> None:
    """Restart nodes that are down and wait until they have rejoined (async: GTID position; Galera: IST)."""
    from benchlib.lab.lab import LocalLab

    lab = LocalLab.open(name)
    restarted = lab.health.heal(timeout=timeout, progress=_progress)
    typer.echo(f"restarted: {', '.join(restarted)}" if restarted else "every node was up")
    _print_status(lab)


@lab_app.command("set")
def lab_set(assignments: list[str] = typer.Argument(..., help="setting=value, e.g. fc_limit=256 parallel_threads=4"),
            name: Optional[str] = typer.Option(None, "--lab", help="lab name or lab spec file (local or remote)"),
            cluster: Optional[str] = typer.Option(None, "--cluster", help="only this cluster")) -> None:
    """Change runtime settings of a running lab without rebuilding it (read back on every node)."""
    from benchlib.errors import SettingError
    from benchlib.labs import open_target

    settings: dict[str, Any] = {}
    for a in assignments:
        key, eq, value = a.partition("=")
        if not eq or not key:
            raise SettingError(f"{a!r} is not setting=value", hint="e.g. benchlib lab set fc_limit=256")
        settings[key.strip()] = value.strip()
    lab = open_target(name)
    try:
        for c, applied in lab.tuning.set(settings, cluster=cluster).items():
            typer.echo(f"{c}: " + ", ".join(f"{k}={v}" for k, v in applied.items()))
    finally:
        lab.close()


@lab_app.command("rtt")
def lab_rtt(name: Optional[str] = typer.Argument(None, help="lab name")) -> None:
    """Measure the round-trip time to every node of every WAN site."""
    from benchlib.lab.lab import LocalLab
    from benchlib.lab.wan import measure_rtt

    lab = LocalLab.open(name)
    if not lab.layout.sites:
        typer.echo("this lab has no WAN sites")
        return
    for node in lab.layout.nodes.values():
        if node.site:
            site = lab.layout.sites[node.site]
            m = measure_rtt(node)
            typer.echo(f"{node.name:14} site {site.name:8} requested {site.rtt_ms:g} ms   measured "
                       f"min {m['min_ms']:.2f} / median {m['median_ms']:.2f} / p90 {m['p90_ms']:.2f} / max {m['max_ms']:.2f} ms")


@lab_app.command("check")
def lab_check(name: Optional[str] = typer.Argument(None, help="lab name, or a lab spec file (local or remote)")) -> None:
    """Is the lab ready for a campaign? One line per problem, exit 1 when not ready.

    A local lab: every node up and in sync, and the time a write on each cluster's node 1 takes until
    every node sees it. A remote lab: connectivity, privileges, replication health, clock offsets and the
    client hosts."""
    from benchlib.labs import open_target

    lab = open_target(name)
    try:
        result = lab.health.check()
    finally:
        lab.close()
    for line in result.lines():
        typer.echo(line)
    if not result.ok:
        raise typer.Exit(1)


@lab_app.command("sql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def lab_sql(ctx: typer.Context,
            node: str = typer.Argument(..., help="node name, e.g. async-1"),
            name: Optional[str] = typer.Option(None, "--lab", help="lab name"),
            user: str = typer.Option("bench", help="bench (over TCP, as a client would) or root (unix socket)")) -> None:
    """Open the node's own client (mariadb, mysql) on a node (extra arguments go to the client, e.g.
    -e "SHOW REPLICA STATUS\\G").

    The password is read from a mode-600 client option file, never passed on the command line."""
    import os

    from benchlib.lab.lab import LocalLab

    lab = LocalLab.open(name)
    n = lab.node(node)
    server = lab.server(n.cluster)
    argv = server.argv(f"--defaults-extra-file={lab.client_option_file(user)}", *lab.client_args(n, user), *ctx.args,
                       program=Path(server.program(lab.flavor(n.cluster).client)))
    os.execvp(argv[0], argv)


@lab_app.command("cleanup")
def lab_cleanup(all_labs: bool = typer.Option(False, "--all", help="also take down every lab that is up")) -> None:
    """Find and stop what crashed runs left behind: processes, namespaces, directories."""
    from benchlib.lab.cleanup import cleanup

    r = cleanup(all_labs=all_labs)
    typer.echo(f"labs taken down: {', '.join(r.labs) or 'none'}; orphan processes stopped: {r.processes}; "
               f"namespaces removed: {', '.join(r.namespaces) or 'none'}; directories removed: {len(r.directories)}")
