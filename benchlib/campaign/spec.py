"""Campaign specs (TOML): the schema, read and validated (``load_campaign_spec``).

    name = "quick"
    lab = "../labs/demo.toml"          # relative to this file
    seed = 1
    repetitions = 2
    sustained = true                    # also search each configuration's maximum sustained throughput
    adaptive = true                     # rounds while a headline ratio is not settled (see below)
    settle_within = 0.10                # settled: its 95% interval within +-10% (unset: its verdict decided)
    budget_s = 250                      # a round is added only while it fits in this much campaign time

    [load]
    workloads = ["oltp_read_write"]
    threads = [1, 8]
    time_s = 10
    tables = 4
    table_size = 10000
    rates = []                          # open loop: target TPS values (empty: closed loop)
    warmup_s = 0                        # unmeasured load before each run's measured window
    rows_per_trx = 50                   # insert_batch: single-row INSERTs per transaction
    read_threads = 0                    # read split: sysbench threads reading (oltp_read_only) on every other node
    stability_s = 30                    # (optional) the last round runs the largest thread count this long

    [matrix]                            # runtime settings swept on a running lab
    clusters = ["async", "galera"]      # clusters of the lab to measure (default: all)
    durability = ["durable", "relaxed"]
    fc_limit = [16, 256]                # applies to Galera clusters only
    parallel_threads = [0, 4]           # applies to async / semi-sync clusters only

    [search]                            # (all optional) how the search runs
    threads = 16                        # client threads of the open-loop runs (default: the largest of load.threads)
    time_s = 60                         # length of each open-loop run (default: load.time_s)
    start = 0.5                         # first rate: this share of the configuration's peak (closed-loop) TPS
    step = 1.5                          # sweep factor, up until a rate fails (down if the first one fails)
    precision = 0.02                    # bisect until the bracket [last sustained, first failing] is this narrow
    repetitions = 1                     # runs per rate (a rate holds when a majority of its runs do, and none fails)
    max_runs = 16                       # per search
    only = { workload = ["oltp_read_write"], durability = ["relaxed"] }   # limit the searches

    [interference]                      # (all optional) runs others' use of the host spoiled
    redo_above = 0.10                   # a run that lost more of the host's CPU (steal, other processes): redone
    max_redos = 2                       # per run; disturbed every time: left out

    [fault]                             # (optional) a fault in every run, what follows measured (fault_run)
    kind = ["kill"]                     # an axis: kill | freeze | cut
    target = ["write_node"]             # an axis: write_node | replica | site:NAME (cut only)
    at_s = 5                            # into the load; freeze and cut last duration_s
    failover = "promote"                # async / semi-sync: the lab promotes (GR and Galera fail over themselves)
    rejoin_at_s = 30                    # (optional) the killed node starts again under the load
    proxy = "haproxy"                   # (optional) a second ledger writer through HAProxy

Top-level run policy: ``failed = "redo" | "keep"`` (what a rerun does with failed runs),
``stall_s`` (the watchdog: seconds without progress before a run is HUNG),
``catch_up_timeout_s`` (how long to wait for replicas after the load); ``adaptive = true`` adds
whole rounds (every configuration, baseline included, shuffled) while a headline comparison against the baseline
is not settled (its verdict INCONCLUSIVE; with ``settle_within``, its 95% interval wider than that), up to
``max_repetitions`` rounds and while one more round fits in ``budget_s`` (without a baseline: while a
configuration's 95% interval is wider than ``target_halfwidth`` of its mean). ``[interference]``: a run that lost
more than ``redo_above`` of the host's CPU to others is disturbed and redone (``max_redos`` times at most). ``note`` says what the campaign reproduces
and what it cannot (the CLI prints it).

With ``sustained = true``, after the planned (closed-loop) runs, one search per cluster, settings
and workload finds the highest open-loop rate that every member sustains: its runs carry the
parameter ``search`` (the search's key) and are judged by ``benchlib.analysis.sustained``.

A setting applies to the clusters whose topology has it; every configuration is
(cluster, settings, workload, threads, rate). Runs are configurations x repetitions
in a seeded random order, each repetition round shuffled anew, and never the same
configuration twice in a row. Run ids are stable (index, configuration hash,
repetition), so a rerun of the campaign can skip the runs it already has.

The plan a spec expands to is ``benchlib.campaign.plan``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_serializer, model_validator

from benchlib import axis as axes
from benchlib.errors import SpecError
from benchlib.labs import AnyLabSpec, load_lab_spec
from benchlib.specs import Strict as _Strict
from benchlib.specs import format_validation, read_toml
from benchlib.sysbench.keys import KeyDistribution
from benchlib.sysbench.options import WORKLOADS


class Load(_Strict):
    #: sysbench workloads (oltp_read_write, oltp_write_only, oltp_insert, insert_batch ...)
    workloads: list[str] = Field(default=["oltp_read_write"], min_length=1)
    #: client thread counts: each is a configuration
    threads: list[int] = Field(default=[8], min_length=1)
    #: the measured window of a run, seconds
    time_s: int = Field(default=30, ge=1, le=86_400)
    #: sysbench tables in the dataset
    tables: int = Field(default=4, ge=1, le=1000)
    #: rows per table
    table_size: int = Field(default=10_000, ge=1)
    #: the TPC-C-like workloads (tpcc_like, tpcc_like_23): warehouses, their scale (about 70-100 MB each)
    warehouses: int = Field(default=1, ge=1, le=10_000)
    #: the TPC-C-like workloads: the share of a warehouse's rows loaded (1: the specification's 100,000 items and
    #: stock, 3,000 customers and orders a district; less for a quick test)
    warehouse_scale: float = Field(default=1.0, gt=0, le=1)
    #: open-loop target rates (sysbench --rate), transactions per second: each is a configuration; empty: closed loop
    rates: list[int] = Field(default_factory=list)
    #: key distributions the rows are drawn from (sysbench --rand-type): each is a configuration; "uniform",
    #: "special" or "special:PCT:RES" (RES% of accesses on PCT% of rows), "pareto" or "pareto:H", "gaussian"; empty:
    #: sysbench's default, special:1:75 (75% of accesses on 1% of rows), which every report states
    distributions: list[str] = Field(default_factory=list)
    #: the dataset sized against each cluster's buffer pool (innodb_buffer_pool_size): each value a configuration, its
    #: table_size (oltp_*) or warehouses (TPC-C-like) set so that the data is about that many times the buffer pool
    #: (0.2: in memory; 5: mostly on disk); the size measured after the prepare is recorded with each run
    data_vs_buffer_pool: list[float] = Field(default_factory=list)
    #: the latency percentile sysbench reports each second
    percentile: int = Field(default=95, ge=1, le=100)
    #: unmeasured load before each measured window, seconds
    warmup_s: int = Field(default=0, ge=0, le=3600)
    rows_per_trx: int = Field(default=50, ge=1, le=10_000)  # insert_batch
    #: a read-split load: this many sysbench threads on every node but the write node read the dataset
    #: (oltp_read_only, each session under the run's read consistency) beside the writers; 0: none
    read_threads: int = Field(default=0, ge=0, le=10_000)
    #: the last repetition round runs the largest thread count this long instead of time_s: one run per
    #: configuration long enough to show stability over time, in a campaign of short runs (they count in every
    #: statistic like the others: a run's mean is the same quantity, measured longer)
    stability_s: int | None = Field(default=None, ge=20, le=86_400)

    @field_validator("workloads")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [w for w in v if w not in WORKLOADS]
        if bad:
            raise ValueError(f"unknown workloads {bad}; known: {', '.join(sorted(WORKLOADS))}")
        return v

    @field_validator("distributions")
    @classmethod
    def _distributions(cls, v: list[str]) -> list[str]:
        try:
            names = [KeyDistribution.parse(x).name for x in v]
        except SpecError as e:
            raise ValueError(f"{e.message} ({e.hint})") from None
        if len(set(names)) < len(names):
            raise ValueError(f"a distribution listed twice: {v}")
        return names

    @field_validator("data_vs_buffer_pool")
    @classmethod
    def _ratios(cls, v: list[float]) -> list[float]:
        if any(not 0 < x <= 1000 for x in v) or len(set(v)) < len(v):
            raise ValueError(f"each a share of the buffer pool in (0, 1000], listed once: {v}")
        return v

    @field_validator("threads", "rates")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x < 1 for x in v):
            raise ValueError("values must be at least 1")
        return v


class Search(_Strict):
    """How the sustained-throughput search runs (statistics spec F; benchlib.analysis.sustained)."""

    #: client threads of the search's runs (default: the campaign's largest)
    threads: int | None = Field(default=None, ge=1, le=100_000)
    #: length of a search run, seconds (default: the campaign's time_s)
    time_s: int | None = Field(default=None, ge=10, le=86_400)
    #: the first rate tried, as a share of the closed-loop throughput measured before it
    start: float = Field(default=0.5, gt=0, le=2)
    #: the factor between rates while sweeping up (and down)
    step: float = Field(default=1.5, gt=1, le=10)
    #: the search stops once the bracket [last sustained, first failing] is within this share
    precision: float = Field(default=0.02, gt=0, lt=1)
    #: runs at each rate tried
    repetitions: int = Field(default=1, ge=1, le=20)
    #: the most runs one search makes
    max_runs: int = Field(default=16, ge=2, le=1000)
    #: search only the configurations whose parameters match, name = [values]
    only: dict[str, list[Any]] = Field(default_factory=dict)


class InterferenceSpec(_Strict):
    """[interference]: runs that others' use of the host spoiled (``benchlib.analysis.interference``)."""

    #: a run that lost more than this share of the host's CPU to others (the hypervisor's steal, processes outside
    #: the lab and benchlib) is disturbed: kept, marked, left out, and redone before its round closes; 1 turns it off
    redo_above: float = Field(default=0.10, gt=0, le=1)
    #: redos per run; a run disturbed in every attempt stays out (its round one run short: the two-way model fits
    #: unequal rounds; a rerun of the campaign tries it again)
    max_redos: int = Field(default=2, ge=0, le=10)


class CampaignSpec(_Strict):
    #: the campaign's name: its folder under the runs folder
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    #: the lab spec it runs on, relative to this file
    lab: str
    #: the seed of the shuffled run order (the same seed, the same order)
    seed: int = 1
    #: planned rounds: each round runs every configuration once, in a shuffled order
    repetitions: int = Field(default=3, ge=1, le=100)
    #: the sysbench load every run drives
    load: Load = Field(default_factory=Load)
    #: settings swept as axes, name = [values]: each combination is a configuration (lab settings such as durability,
    #: or an axis's)
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    failed: Literal["redo", "keep"] = "redo"  # on resume: rerun failed runs, or keep them as they are
    stall_s: float = Field(default=10.0, gt=0)  # the watchdog's limit (HUNG)
    #: how long the replicas may take to catch up after the load before the run fails
    catch_up_timeout_s: float = Field(default=120.0, gt=0)
    # adaptive repetitions: after the planned rounds, whole rounds while a comparison is INCONCLUSIVE (without
    # a baseline: while a configuration's interval is wider than target_halfwidth), up to max_repetitions rounds
    adaptive: bool = False
    #: the adaptive mode's most rounds
    max_repetitions: int = Field(default=10, ge=2, le=100)
    target_halfwidth: float = Field(default=0.02, gt=0, lt=1)  # relative half-width of the 95% interval
    #: a headline ratio (throughput against the baseline) is settled once its 95% interval lies within +- this of
    #: it, whatever its verdict; unset: once its verdict is no longer INCONCLUSIVE
    settle_within: float | None = Field(default=None, gt=0, lt=1)
    #: campaign time, seconds: the adaptive mode adds a round only while one more fits (estimated from the rounds
    #: run so far); unset: no limit but max_repetitions
    budget_s: float | None = Field(default=None, gt=0)
    #: what counts as a run others' use of the host spoiled
    interference: InterferenceSpec = Field(default_factory=InterferenceSpec)
    # delta: ratios against the baseline within 1 +- margin count as no difference (EQUIVALENT); FASTER and
    # SLOWER need the whole 95% interval beyond it. The report states it.
    margin: float = Field(default=0.02, gt=0, lt=1)
    # maximum sustained throughput: open-loop searches after the planned runs (one per cluster, settings and
    # workload; see Search)
    sustained: bool = False
    #: how the sustained-throughput search runs
    search: Search = Field(default_factory=Search)
    #: the tables of the registered axes (``benchlib.axes``): [probe], [fault] or an axis of one's own, validated by
    #: the axis's schema; a campaign spec writes each at the top level, as ``[fault]``
    axes: dict[str, Any] = Field(default_factory=dict)
    note: str = ""  # what the campaign reproduces, what it cannot (printed by the CLI, kept in campaign.json)


    @model_validator(mode="before")
    @classmethod
    def _axis_tables(cls, data: Any) -> Any:
        """Each registered axis's table, validated by the axis's schema, into ``axes``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        given = dict(data.pop("axes", None) or {})
        known = axes.tables()
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"unknown axis tables {unknown} (axes with a table: {', '.join(known)})")
        validated: dict[str, Any] = {}
        for name, model in known.items():
            raw = data.pop(name, given.get(name))
            if raw is None:
                continue
            try:
                validated[name] = raw if isinstance(raw, model) else model.model_validate(raw)
            except ValidationError as exc:
                page = axes.AXES[name].docs
                raise ValueError(f"[{name}] " + "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or '(table)'}: "
                    + (f"unknown field (check the spelling; the fields are in {page})" if e["type"] == "extra_forbidden"
                       else e["msg"].removeprefix("Value error, "))
                    for e in exc.errors())) from None
        data["axes"] = validated
        return data

    @model_serializer(mode="wrap")
    def _flat(self, handler: Any) -> Any:
        """Dumped as it is written: each axis's table at the top level (None when the campaign has none)."""
        out = handler(self)
        if isinstance(out, dict):
            tables = out.pop("axes", None) or {}
            for name in axes.tables():
                out[name] = tables.get(name)
        return out


def load_campaign_spec(path: str | Path) -> tuple[CampaignSpec, AnyLabSpec]:
    p = Path(path)
    data = read_toml(p, "campaign spec", "examples/campaigns/quick.toml")
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{p}: invalid campaign spec ({exc.error_count()} problems)",
                        detail=format_validation(exc, str(p), "docs/reference/campaign-spec.md")) from None
    lab_path = (p.parent / spec.lab) if not Path(spec.lab).is_absolute() else Path(spec.lab)
    return spec, load_lab_spec(lab_path)


