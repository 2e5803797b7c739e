"""Campaign axes: what an axis is, and the registry everything asks instead of knowing an axis.

An **axis** is something a campaign adds to its runs beyond the settings matrix: the stale-read probe and its read
consistency, the read split, the fault, the sustained-throughput search, the stalled replica, or an axis of a user's
own. Each is a subclass of ``Axis`` in a package of its own (``benchlib/axes/<name>/``), whose instance is declared
as an entry point of the group ``benchlib.axes`` (benchlib's own in its ``pyproject.toml``; a third party's in its
package's) and registered in ``AXES`` when first asked for. An ``Axis`` says, as typed attributes and methods:

- its **spec table** (``[name]`` in a campaign spec, validated by ``spec``) and whether a campaign has it
  (``active``);
- its **planner** (``plan``: per cluster the list of its variants; a variant gives ``identity()``, part of the
  configuration's key, ``params()``, what the run store records as the run's parameters, and optionally
  ``load_settings()``, settings the load runs under);
- what **cannot run beside it** (``excludes``: the other axis -> how a spec asks for it, ``apart``: why);
- what a **run** does for it: ``run`` gives its hook into the one run engine's steps (``AxisRun``,
  ``benchlib.campaign.run``): probes beside the load, a writer and a schedule in the load window (the fault), a
  heal after it, an audit of its own; an axis whose runs take nodes down on purpose ``breaks``;
- its **records**: the frame schemas its runs write (``frames``), the columns of the campaign's ``runs`` table it
  reads from a manifest (``facts``);
- its **analysis** (``analysis(a)``: an ``AxisAnalysis`` of the campaign, ``a.axis(name)``, with at least
  ``measures`` and ``findings``), its **charts** and its **report section**.

The methods import the axis's lab-side and analysis-side modules when called: this module, the registry and the
analysis that asks them never import lab code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol, Self

import pandas as pd
from pydantic import BaseModel, ConfigDict, JsonValue

from benchlib.errors import SpecError
from benchlib.plugin import Registry
from benchlib.schema import Cell, FRAMES, Schema

#: an axis's charts: name -> (title, builder of the figure from a campaign's analysis)
ChartTable = dict[str, tuple[str, Callable[[Any], Any]]]
#: an axis's chart captions: name -> the caption of the figure, in words, from the analysis
CaptionTable = dict[str, Callable[[Any], str]]

__all__ = ["AXES", "Axis", "CaptionTable", "ChartTable", "Variant", "AxisAnalysis", "AxisRecord", "AxisRun", "RunContext", "fact_columns", "frame_schemas",
           "judged_on_throughput", "run_facts", "tables"]


class AxisRecord(BaseModel):
    """What a run's manifest records under an axis's name (its entry of ``axes``), typed (``Axis.record``):
    validated when the run is written and when it is read; read by attribute or, like a plain table, by key
    (``r.lost``, ``r["lost"]``, ``r.get("lost")``); fields benchlib does not know are kept. The core's own
    sub-records (the consistency audit) are records of this shape too."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def __getitem__(self, key: str) -> Any:
        if key in type(self).model_fields or key in (self.model_extra or {}):
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in type(self).model_fields or key in (self.model_extra or {}))

    def as_dict(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json")


class Variant(Protocol):
    """One of an axis's variants a planned run takes (a read consistency, a fault, a stall): its part of the
    configuration's key and the run's recorded parameters."""

    def identity(self) -> list[Any]: ...

    def params(self) -> dict[str, Cell]: ...


class AxisAnalysis:
    """What an axis adds to a campaign's analysis (``a.axis(name)``): its ``measures`` (a frame) and ``findings`` (in
    words); an axis's own subclass adds what else it computes, each computed once."""

    axis: ClassVar[str] = ""  # the axis it is the analysis of

    def __init__(self, a: Any):
        self.a = a

    @classmethod
    def of(cls, a: Any) -> Self:
        """``a.axis(...)`` of its axis, typed as this class: ``FaultAnalysis.of(a).summary``."""
        view = a.axis(cls.axis)
        if not isinstance(view, cls):
            raise TypeError(f"the {cls.axis} axis's analysis is a {type(view).__name__}, not a {cls.__name__}")
        return view

    @cached_property
    def measures(self) -> pd.DataFrame:
        return pd.DataFrame()

    @cached_property
    def findings(self) -> list[str]:
        return []

    @cached_property
    def decided(self) -> list[str]:
        """Run parameters another of its parameters decides (GR's ``gr_consistency``, set by the read consistency):
        a configuration is named once, by the deciding one."""
        return []


class Axis:
    """An axis: override what it has (the defaults: no spec table, no variants, no hook, no records, no analysis)."""

    name: ClassVar[str]  # its key: a planned run's variant (PlannedRun.axes), its entry in a run's manifest
    title: ClassVar[str]  # for people
    order: ClassVar[int] = 100  # where its part joins a configuration's key (built-ins 10-50; yours after them)
    spec: ClassVar[type[BaseModel] | None] = None  # its table's schema ([name] in a campaign spec)
    #: another axis -> how a campaign spec asks for it ("[probe]"): the two cannot run together, because ``apart``
    excludes: ClassVar[dict[str, str]] = {}
    apart: ClassVar[str] = ""
    #: its runs take nodes down on purpose (a fault): the load follows the writes, the lab is healed after the load,
    #: the run is judged by the axis (``AxisRun.breaks``)
    breaks: ClassVar[bool] = False
    #: whether its runs are judged on throughput like the matrix's (a fault run is judged by what the fault did, a
    #: search's open-loop runs by rate); those that are not are marked by their ``marker`` column of the runs table
    counts_for_throughput: ClassVar[bool] = True
    marker: ClassVar[str] = ""
    frames: ClassVar[tuple[Schema, ...]] = ()  # the frames its runs write
    facts_columns: ClassVar[tuple[str, ...]] = ()  # its columns of the ``runs`` table
    section: ClassVar[str] = ""  # the key of its findings in the report's (default: its name)
    report_first: ClassVar[bool] = False  # its section comes before the throughput findings (it says what runs were)
    notebook: ClassVar[str] = ""  # its analysis notebook (notebooks/NAME.ipynb), run for a campaign that has it
    docs: ClassVar[str] = "docs/campaigns/spec.md"  # the page that documents its table: a bad field points there
    asked: ClassVar[str] = ""  # how a campaign spec asks for it, when not by its table (``sustained = true``)
    #: what a run's manifest records under its name, typed (None: it records nothing, or nothing typed yet)
    record: ClassVar[type[BaseModel] | None] = None

    # -- the campaign spec ---------------------------------------------------------------------------------------
    def active(self, spec: Any) -> bool:
        """Whether the campaign ``spec`` has this axis (default: it has the axis's table)."""
        return spec.axes.get(self.name) is not None

    def plan(self, spec: Any, lab: Any, clusters: list[str], source: str) -> dict[str, list[Any]] | None:
        """Per cluster, its variants (None: it adds none to the planned runs)."""
        return None

    # -- a run ---------------------------------------------------------------------------------------------------
    def run(self, ctx: RunContext) -> AxisRun | None:
        """Its hook beside a throughput run's load (None: nothing to do in a run)."""
        return None

    # -- its records ---------------------------------------------------------------------------------------------
    def recorded(self, manifest: Any) -> Any:
        """Its entry of a run's manifest (a dict or a ``Manifest``: ``axes[name]``) as its typed ``record``; None
        where the run has none. Raises ``ValueError`` (pydantic's) when the entry does not validate."""
        entries = manifest.get("axes") if isinstance(manifest, dict) else getattr(manifest, "axes", None)
        entry = (entries or {}).get(self.name)
        if not entry:
            return None
        if self.record is None or isinstance(entry, self.record):
            return entry
        return self.record.model_validate(entry.model_dump() if isinstance(entry, BaseModel) else entry)

    def facts(self, record: Any) -> dict[str, Cell]:
        """Its columns of the ``runs`` table from its entry of one run's manifest (its ``recorded``: None where the
        run had none)."""
        return {}

    # -- analysis and publishing ---------------------------------------------------------------------------------
    def analysis(self, a: Any) -> AxisAnalysis:
        """What it adds to the analysis ``a`` (``a.axis(name)``)."""
        return AxisAnalysis(a)

    def charts(self) -> tuple[ChartTable, CaptionTable]:
        """Its chart catalogue entries (name -> (title, builder)) and captions (name -> caption(a))."""
        return {}, {}

    def setting_words(self, params: Any) -> dict[str, str]:
        """Its parameters of a configuration (``params``: a row of the runs or comparisons, by column) in words, for
        the sentences that name the configuration: column -> words ("" says nothing); default: none (the report
        says "column value")."""
        return {}

    def report(self, a: Any, said: list[str]) -> str | None:
        """Its HTML section of the report page (None: its findings as a list)."""
        return None

    def page_notes(self, a: Any) -> dict[str, str]:
        """What its runs in the analysis ``a`` change on the core's pages, by place: ``findings``, a sentence the
        throughput findings' lead adds; ``stability``, why the stability chart is left out when no run counts for
        throughput. Default: nothing."""
        return {}


@dataclass
class RunContext:
    """What a run hook is given: the lab, the cluster and its nodes (the write node first), the load, the run, the
    axis's variant for this run and every axis's (``axes``), the load driver and the watchdog's limit, and
    ``outside()``: why the whole run must stop now (a node down or silent), set once sampling runs, and
    ``writes_now()``: the node taking the writes now."""

    lab: Any
    cluster: str
    nodes: list[str]
    system: str
    options: Any  # SysbenchOptions
    run_id: str
    variant: Any = None
    axes: dict[str, Variant] = field(default_factory=dict)
    driver: Any = None
    stall_s: float = 10.0
    outside: Callable[[], str | None] = lambda: None
    #: where the run's writes go now: the write node, or where a fault's failover moved them (set by the engine)
    writes_now: Callable[[], str | None] = lambda: None
    setup: Any = None  # the run's RunSetup (benchlib.campaign.setup): its nodes' facts, the write node, its manifest
    origin: float = 0.0  # the sampler's start on time.monotonic, set once sampling runs


class AxisRun:
    """What an axis does in a run, step by step in the run engine's order (``benchlib.campaign.run``: setup, arm,
    load, catch up, audit, record); every step is optional (the defaults do nothing)."""

    #: it takes nodes down on purpose (a fault): the watchdog lets it, the load follows the writes (``writes_to``,
    #: ``writable``), ``after_load`` makes the lab whole again instead of a catch-up, and the run is judged by what it
    #: says (``stop``), not by the cluster's invariants, its catch-up or the host's interference
    breaks: bool = False

    def begin(self) -> str | None:
        """Before anything is armed: why the run cannot be (the lab cannot do what the axis asks: the run fails with
        it), None when it can."""
        return None

    def probes(self) -> list[Any]:
        """Probes the run's sampler runs beside its own, prepared (started before the load, stopped after the
        catch-up)."""
        return []

    def start(self) -> None:
        """Just before the load starts."""

    def failed(self) -> str | None:
        """Asked during the load by its watchdog: why the run must stop now (None: it goes on)."""
        return None

    def writes_to(self) -> str | None:
        """Where the run's writes go now, when the axis moves them (a failover: the load ends where it was and starts
        again there); None when it does not."""
        return None

    def writable(self, since: float) -> bool:
        """Whether writes were acknowledged where they go now since ``since`` (time.monotonic): the load may start
        again there."""
        return True

    def load_event(self, event: str, node: str, words: str) -> None:
        """What the engine did to the load (``load_ended``, ``load_restarted``), for an axis that keeps events."""

    def segment(self, loaded: Any, node: str) -> None:
        """Each part of the load as it ends (``sysbench.process.LoadResult``) and the node it ran on: one for a load
        the writes never left, one more for each node a fault's failover moved them to."""

    def join(self, loaded: Any) -> Any:
        """Right after the load: the load's result (``sysbench.process.LoadResult``), failed when this axis's side
        of it failed."""
        return loaded

    def after_load(self) -> None:
        """After the load of a run that ``breaks``: make the lab whole again (a heal that fails raises
        ``CampaignError``: the campaign stops)."""

    def audit(self) -> list[str] | None:
        """After the shared audit (every node holds what the write node holds): the axis's own; what it found wrong,
        each naming the node (the run is invalid, as for a checksum that differs)."""
        return None

    def stop(self) -> str | None:
        """After the catch-up (or the heal); a reason when what the axis measured failed the run."""
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

    def manifest(self) -> dict[str, object]:
        """What the run's manifest records under the axis's name (asked before the load and after it)."""
        return {}

    def close(self) -> None:
        """Always called at the end of the run (connections, threads)."""


class AxisRegistry(Registry[Axis]):
    """The axes, in their ``order``; registering one registers its frames."""

    def register(self, item: Axis, name: str | None = None) -> Axis:
        super().register(item, name)
        for schema in item.frames:
            FRAMES[schema.name] = schema
        return item

    def unregister(self, name: str) -> Axis | None:
        axis = super().unregister(name)
        for schema in axis.frames if axis else ():
            FRAMES.pop(schema.name, None)
        return axis


#: every axis, in their order (the order their parts join a configuration's key); loaded from the entry points
AXES = AxisRegistry("axis", group="benchlib.axes", order=lambda axis: axis.order, error=SpecError,
                    hint=lambda names: f"axes: {', '.join(names)}")


def frame_schemas() -> dict[str, Schema]:
    """Every frame kind a run may write, the axes' own among them."""
    AXES.load()
    return FRAMES


def tables() -> dict[str, type[BaseModel]]:
    """The spec tables of the registered axes: table name -> schema."""
    return {a.name: a.spec for a in AXES.values() if a.spec is not None}


def run_facts(manifest: Any) -> dict[str, Cell]:
    """Every axis's columns of the ``runs`` table from one manifest (a dict or a ``Manifest``)."""
    out: dict[str, Cell] = {}
    for axis in AXES.values():
        out.update(axis.facts(axis.recorded(manifest)))
    return out


def judged_on_throughput(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ``runs`` table whose runs are judged on throughput: none of an axis whose runs are not
    (``Axis.counts_for_throughput``: a fault run, a search's open-loop run)."""
    for axis in AXES.values():
        if not axis.counts_for_throughput and axis.marker in table:
            table = table[table[axis.marker].isna()]
    return table


def fact_columns() -> tuple[str, ...]:
    return tuple(c for a in AXES.values() for c in a.facts_columns)
