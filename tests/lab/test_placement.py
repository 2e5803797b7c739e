"""Placement (``benchlib.lab.placement``): each cluster and its load on a CPU set of its own where the host has the
CPUs, every CPU shared where it has not; on a real lab, the servers run on their set, the runs record it, and the
report says where the clusters ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlib.analysis.likeness import placement_words
from benchlib.errors import SpecError
from benchlib.lab import placement
from benchlib.lab.spec import LabSpec
from benchlib.store import runs_table
from benchlib.sysbench.driver import LocalDriver
from tests.campaigns import campaign_toml


def test_clusters_get_equal_cpu_sets_of_their_own_where_the_host_has_two_a_cluster():
    assert placement.plan(["a", "b", "c"], "auto", list(range(8))) == {"a": "0-1", "b": "2-3", "c": "4-5"}
    assert placement.plan(["a", "b", "c"], "auto", [0, 1]) == {"a": None, "b": None, "c": None}  # 2 cores: shared
    assert placement.plan(["a", "b"], "shared", list(range(8))) == {"a": None, "b": None}
    assert placement.plan(["a", "b"], "pinned", [0, 1]) == {"a": "0", "b": "1"}
    assert placement.plan(["a"], "auto", list(range(8))) == {"a": None}  # nothing to share with
    assert placement.cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    with pytest.raises(SpecError, match='placement = "pinned" needs a CPU for each of the 3 clusters'):
        placement.plan(["a", "b", "c"], "pinned", [0, 1])


def test_the_load_runs_on_its_clusters_cpus():
    driver = LocalDriver(lambda node: None, Path("/nonexistent"), cpus=lambda node: "2-3" if node == "a-1" else None)
    assert driver._pinned("a-1", ["sysbench", "run"]) == ["taskset", "-c", "2-3", "sysbench", "run"]
    assert driver._pinned("b-1", ["sysbench", "run"]) == ["sysbench", "run"]


def _allowed(pid: int) -> str:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("Cpus_allowed_list"))
    return line.split(":", 1)[1].strip()


def test_pinned_clusters_run_on_their_own_cpus_and_the_runs_say_so(labs, tmp_path):
    spec = {"name": "t-place", "placement": "pinned", "defaults": {"buffer_pool": "32M"},
            "clusters": {"one": {"topology": "single"}, "two": {"topology": "single"}}}
    lab = labs.up(LabSpec.model_validate(spec))
    assert _allowed(lab.pid("one-1")) == "0" and _allowed(lab.pid("two-1")) == "1"
    (tmp_path / "lab.toml").write_text('name = "t-place"\nplacement = "pinned"\n[defaults]\nbuffer_pool = "32M"\n'
                                       '[clusters.one]\ntopology = "single"\n[clusters.two]\ntopology = "single"\n')
    (tmp_path / "c.toml").write_text(campaign_toml("place", "lab.toml", clusters=["one", "two"], time_s=2,
                                                   repetitions=1, table_size=200))
    from benchlib.campaign.runner import run_campaign

    result = run_campaign(tmp_path / "c.toml", runs_dir=tmp_path / "runs", progress="none")
    runs = runs_table(result.path)
    assert dict(zip(runs.cluster, runs.cluster_cpus)) == {"one": "0", "two": "1"}
    assert placement_words(runs, 2) == ("Each cluster ran on CPUs of its own, with the load driving it (one on CPUs 0, "
                                        "two on CPUs 1); they shared the host's disk.")
