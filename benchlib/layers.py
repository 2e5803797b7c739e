"""The architecture as data: benchlib's layers, lowest first, and which code is analysis-side (runs anywhere, on any
campaign folder, without a database) and which is lab-side. ``tests/test_layering.py`` holds every import to it
(module level, inside functions, under ``TYPE_CHECKING``; and between folders), and docs/architecture.md's layer
table is made from it (``benchlib.reference_pages``)."""

from __future__ import annotations

__all__ = ["ANALYSIS_SIDE", "LAB_ONLY", "LAB_SIDE", "LAYERS", "Layer"]


class Layer(tuple):
    """One layer: its names (a package or module under benchlib, ``*`` for one dotted part) and what it is for."""

    what: str

    def __new__(cls, names: list[str], what: str) -> "Layer":
        self = super().__new__(cls, names)
        self.what = what
        return self


#: lowest first; a module is in the layer of the most specific name that matches it
LAYERS: list[Layer] = [
    Layer(["errors", "error_numbers", "schema", "specs", "catalogue", "plugin", "axis", "layers"],
          "foundations: the root exception, the server's error numbers in words, tidy columns, spec basics; the "
          "system catalogue (pure data); the plug-in "
          "registry and what an axis is (the axes themselves are plug-ins, at the top)"),
    Layer(["sysbench", "workloads", "store", "packed", "packing", "run_source", "manifest", "traits", "systems",
           "environment", "servers"],
          "sysbench's vocabulary and drivers; the workloads benchlib bundles and their records; the run store, where its runs are read from (folders, packs), its "
          "manifests; what each system is; the "
          "machine and revision a campaign runs on; server binaries"),
    Layer(["analysis", "run_index", "sampling", "lab.base"],
          "statistics over stored runs and the run index; probes and the sampler; the `Lab` protocol"),
    Layer(["charts", "lab", "remote"], "charts of analyses; the embedded lab and remote labs (both implement "
                                       "`lab.base`)"),
    Layer(["report", "page", "studies", "notebooks", "explore", "labs", "provision"],
          "publishing; notebooks; opening any lab from its spec; building a lab on real hosts"),
    Layer(["campaign", "doctor"], "running campaigns on any lab; the installation check"),
    Layer(["axes"], "benchlib's own axes: plug-ins loaded by entry point (`benchlib.axis.AXES`), each a package that "
                    "may use any layer below (its analysis, charts, report section, planner and run hook); nothing "
                    "below imports one"),
    Layer(["cli", "cli_lab", "cli_across", "__init__"], "the command line"),
    Layer(["reference_pages", "doc_blocks"], "docs/reference/ and the generated parts of docs/architecture.md, made from the code"),
]
#: analysis runs anywhere, on any campaign folder, without a database ...
ANALYSIS_SIDE = ("analysis", "run_index", "charts", "report", "page", "studies", "notebooks", "explore", "store",
                 "packed", "packing", "run_source", "manifest", "traits", "schema", "sysbench.output", "sysbench.keys", "workloads",
                 "catalogue", "error_numbers", "plugin", "axis",
                 "axes", "systems.*.facts")
#: ... except the axes' planners and run hooks (lab side)
LAB_ONLY = ("axes.*.plan*", "axes.*.run*")
#: what analysis-side code never imports (but the analysis-side modules among them: a system's facts)
LAB_SIDE = ("benchlib.lab", "benchlib.remote", "benchlib.labs", "benchlib.sampling", "benchlib.campaign",
            "benchlib.systems", "pymysql")
