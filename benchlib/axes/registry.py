"""Campaign axes as units: one record per axis, registered once, that everything asks instead of knowing the axis.

An **axis** is something a campaign adds to its runs beyond the settings matrix: the stale-read probe and its read
consistency, the read split, the fault, the sustained-throughput search, or an axis of a user's own. Its ``Axis``
record names, all in one place:

- its **spec table** (``[name]`` in a campaign spec, validated by ``spec``) and whether a campaign has it
  (``active``);
- its **planner** (``plan``: the campaign spec, the lab spec, the clusters, the spec's name -> per cluster the list of
  its variants; a variant gives ``identity()``, part of the configuration's key, ``params()``, what the run store
  records as the run's parameters, and optionally ``load_settings()``, settings the load runs under);
- what **cannot run beside it** (``excludes``: the other axis -> why, said when a campaign asks for both);
- what a **run** does for it: ``run`` gives a hook beside a throughput run's load (``AxisRun``: probes for the
  sampler, start and stop around the load, frames and a manifest entry), or ``drives`` executes the whole run (the
  fault run);
- its **records**: the frame schemas its runs write (``frames``), the columns of the campaign's ``runs`` table it
  reads from a manifest (``facts``);
- its **analysis** (``analysis``: a module with ``measures(a)``, ``findings(a)`` and ``section(a)``, each optional)
  and its chart catalogue entries (``charts``).

Planners, run hooks and analysis modules are named as ``"module:function"`` strings and imported when used, so that
the registry (and analysis, which reads it) never imports lab code. Registering an axis is one ``register(Axis(...))``
in the axis's own module; ``benchlib.axes`` registers the built-in ones.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd
from pydantic import BaseModel

from benchlib.errors import SpecError
from benchlib.schema import FRAMES, Schema

__all__ = ["AXES", "Axis", "AxisRun", "RunContext", "get", "register", "resolve"]


@dataclass(frozen=True)
class Axis:
    name: str  # its key: a planned run's variant (PlannedRun.axes), its entry in a run's manifest
    title: str  # for people
    spec: type[BaseModel] | None = None  # its table's schema ([name] in a campaign spec); None: it has no table
    #: (campaign spec) -> whether the campaign has this axis (default: it has the axis's table)
    active: Callable[[Any], bool] | None = None
    plan: str = ""  # "module:function": (campaign spec, lab spec, clusters, source) -> {cluster: [variant]}
    run: str = ""  # "module:function": (RunContext) -> AxisRun, beside a throughput run's load
    drives: str = ""  # "module:function": executes a whole run of this axis instead of the throughput run
    #: another axis -> how a campaign spec asks for it ("[probe]"): the two cannot run together, because ``apart``
    excludes: dict[str, str] = field(default_factory=dict)
    apart: str = ""
    frames: tuple[Schema, ...] = ()  # the frames its runs write
    #: (manifest as a dict) -> columns of the ``runs`` table (every key of ``facts_columns``, None when absent)
    facts: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    facts_columns: tuple[str, ...] = ()
    analysis: str = ""  # module with measures(a) -> DataFrame, findings(a) -> list[str], ATTRIBUTES (CampaignAnalysis')
    section: str = ""  # the key of its findings in the report's (``benchlib.report.findings``; default: its name)
    report: str = ""  # "module:function": (analysis, findings) -> its HTML section of the report page (default: a list)
    report_first: bool = False  # its section comes before the throughput findings (it says what the runs were)
    charts: str = ""  # module with CHARTS (name -> title, builder) and CAPTIONS, added to benchlib.charts.catalogue
    notebook: str = ""  # its analysis notebook (notebooks/NAME.ipynb), executed for a campaign that has the axis
    docs: str = "docs/campaigns/spec.md"  # the page that documents its table: a bad field in it points there

    def is_in(self, spec: Any) -> bool:
        """Whether the campaign ``spec`` has this axis."""
        if self.active is not None:
            return bool(self.active(spec))
        return spec.axes.get(self.name) is not None

    def table(self, spec: Any) -> Any:
        """Its validated table of ``spec`` (None: the campaign has none)."""
        return spec.axes.get(self.name)

    def analysed(self, what: str) -> Callable[..., Any] | None:
        """Its analysis function ``what`` (measures, findings, section), None when it has none."""
        if not self.analysis:
            return None
        return getattr(importlib.import_module(self.analysis), what, None)


@dataclass
class RunContext:
    """What a run hook is given: the lab, the cluster and its nodes (the write node first), the load, the run, the
    axis's variant for this run and every axis's (``axes``), the load driver and the watchdog's limit, and
    ``outside()``: why the whole run must stop now (a node down or silent), set once sampling runs."""

    lab: Any
    cluster: str
    nodes: list[str]
    system: str
    options: Any  # SysbenchOptions
    run_id: str
    variant: Any = None
    axes: dict[str, Any] = field(default_factory=dict)
    driver: Any = None
    stall_s: float = 10.0
    outside: Callable[[], str | None] = lambda: None


class AxisRun:
    """What an axis does beside a throughput run's load, step by step in the run's order; every step is optional
    (the defaults do nothing)."""

    def probes(self) -> list[Any]:
        """Probes the run's sampler runs beside its own, prepared (started before the load, stopped after the
        catch-up)."""
        return []

    def start(self) -> None:
        """Just before the load starts."""

    def failed(self) -> str | None:
        """Asked during the load by its watchdog: why the run must stop now (None: it goes on)."""
        return None

    def join(self, loaded: Any) -> Any:
        """Right after the load: the load's result (``sysbench.process.LoadResult``), failed when this axis's side
        of it failed."""
        return loaded

    def stop(self) -> str | None:
        """After the catch-up; a reason when what the axis measured failed the run."""
        return None

    def tables(self) -> list[str]:
        """Tables of its own the consistency audit after the run compares across nodes."""
        return []

    def excused(self) -> list[tuple[str, float, float]]:
        """(node, start, end) on time.monotonic: what the axis did to that node on purpose then (a stalled applier)
        is no breach of the run's mode (``benchlib.systems.invariants``)."""
        return []

    def frames(self, origin: float) -> dict[str, pd.DataFrame]:
        """Frames to write in the run folder (kinds registered by the axis); times relative to ``origin`` (the
        sampler's start, on time.monotonic)."""
        return {}

    def raws(self) -> dict[str, str]:
        """Raw text files to keep in the run folder (file name -> text)."""
        return {}

    def manifest(self) -> dict[str, Any]:
        """What the run's manifest records under the axis's name (asked before the load and after it)."""
        return {}

    def close(self) -> None:
        """Always called at the end of the run (connections, threads)."""


#: every registered axis, in registration order (the order their parts join a configuration's key)
AXES: dict[str, Axis] = {}


def register(axis: Axis) -> Axis:
    AXES[axis.name] = axis
    for schema in axis.frames:
        FRAMES[schema.name] = schema
    return axis


def unregister(name: str) -> None:
    """Remove an axis (tests register throwaway ones)."""
    axis = AXES.pop(name, None)
    for schema in axis.frames if axis else ():
        FRAMES.pop(schema.name, None)


def get(name: str) -> Axis:
    try:
        return AXES[name]
    except KeyError:
        raise SpecError(f"unknown axis {name!r}", hint=f"axes: {', '.join(AXES)}") from None


def resolve(target: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def tables() -> dict[str, type[BaseModel]]:
    """The spec tables of the registered axes: table name -> schema."""
    return {a.name: a.spec for a in AXES.values() if a.spec is not None}


def run_facts(manifest: dict[str, Any]) -> dict[str, Any]:
    """Every axis's columns of the ``runs`` table from one manifest."""
    out: dict[str, Any] = {}
    for axis in AXES.values():
        if axis.facts is not None:
            out.update(axis.facts(manifest))
    return out


def fact_columns() -> tuple[str, ...]:
    return tuple(c for a in AXES.values() for c in a.facts_columns)


def analysis_attribute(name: str) -> Callable[[Any], Any] | None:
    """The function that computes the analysis attribute ``name`` an axis adds (its analysis module's
    ``ATTRIBUTES``), None when no registered axis adds it."""
    for axis in AXES.values():
        if axis.analysis:
            found = getattr(importlib.import_module(axis.analysis), "ATTRIBUTES", {}).get(name)
            if found is not None:
                return found
    return None
