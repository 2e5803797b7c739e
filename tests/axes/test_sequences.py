"""Fault sequences, without a lab: the built-in ones, one's own in ``[fault.sequences]``, what ``check`` refuses, and
how the planner resolves and refuses them against a lab spec."""

from __future__ import annotations

import pytest

from benchlib.axes.fault import FaultSpec
from benchlib.axes.fault.run_records import schedule_of
from benchlib.axes.fault.sequences import Step, check, steps_of
from benchlib.campaign.plan import plan
from benchlib.campaign.spec import CampaignSpec
from benchlib.errors import SpecError
from tests.conftest import example_spec


def test_built_in_sequences_are_steps_in_order():
    assert steps_of("kill", "replica", 5) == (Step(0, "kill", "replica"),)
    assert steps_of("cut", "site:far", 5) == (Step(0, "cut", "site:far"), Step(5, "release", "site:far"))
    assert [(s.at_s, s.do, s.target) for s in steps_of("host_loss", "replica", 4)] == [
        (0, "isolate", "write_node"), (4, "kill", "write_node"), (4.5, "release", "write_node")]
    assert [s.do for s in steps_of("isolation", "write_node", 4)] == ["isolate", "release"]
    assert [(s.do, s.target) for s in steps_of("replica_then_loss", "write_node", 4)] == [
        ("isolate", "replica"), ("kill", "write_node"), ("release", "replica")]
    for kind in ("kill", "freeze", "cut", "host_loss", "isolation", "replica_then_loss"):
        assert check(steps_of(kind, "write_node", 3)) is None


@pytest.mark.parametrize("steps, words", [
    ([Step(0, "release", "replica")], "nothing holds it then"),
    ([Step(0, "kill", "write_node"), Step(1, "freeze", "write_node")], "it was killed before"),
    ([Step(0, "isolate", "replica"), Step(1, "isolate", "replica")], "already under isolate"),
    ([Step(0, "freeze", "replica"), Step(1, "kill", "replica"), Step(2, "release", "replica")], "killed before"),
    ([Step(0, "explode", "replica")], "a step is one of"),
])
def test_what_the_lab_could_not_undo_is_refused(steps, words):
    assert words in check(steps)


def test_a_cut_outlives_the_node_it_holds():
    assert check([Step(0, "isolate", "write_node"), Step(2, "kill", "write_node"),
                  Step(3, "release", "write_node")]) is None


def test_ones_own_sequence_is_a_kind_and_bad_ones_are_refused_with_the_step():
    f = FaultSpec(kind=["mine", "kill"], sequences={"mine": [{"at_s": 2, "do": "kill", "target": "write_node"},
                                                             {"at_s": 0, "do": "isolate", "target": "replica"},
                                                             {"at_s": 3, "do": "release", "target": "replica"}]})
    assert [s.do for s in steps_of("mine", "write_node", 1, f.own())] == ["isolate", "kill", "release"]
    with pytest.raises(ValueError, match="unknown fault kinds"):
        FaultSpec(kind=["nope"])
    with pytest.raises(ValueError, match="built-in fault kind"):
        FaultSpec(kind=["host_loss"], sequences={"host_loss": [{"at_s": 0, "do": "kill"}]})
    with pytest.raises(ValueError, match=r"fault.sequences.bad: release of replica at 1 s: nothing holds it"):
        FaultSpec(kind=["bad"], sequences={"bad": [{"at_s": 1, "do": "release", "target": "replica"}]})
    with pytest.raises(ValueError, match="unknown fault target"):
        FaultSpec(kind=["bad"], sequences={"bad": [{"at_s": 1, "do": "kill", "target": "primary"}]})


def _campaign(lab: str, fault: dict, time_s: int = 20) -> CampaignSpec:
    return CampaignSpec.model_validate({"name": "t", "lab": lab, "seed": 1, "repetitions": 2,
                                        "load": {"workloads": ["oltp_write_only"], "threads": [2], "time_s": time_s},
                                        "fault": fault})


def test_the_planner_resolves_sequences_per_cluster_and_keys_them_by_their_steps():
    lab = example_spec("host-loss.toml", "t-hl")
    runs = plan(_campaign("x", {"kind": ["host_loss", "isolation", "kill"], "target": ["write_node", "replica"],
                                "at_s": 5, "duration_s": 4, "failover": "promote"}), lab)
    async_runs = [r for r in runs if r.cluster == "async" and r.repetition == 1]
    assert sorted(r.params["fault"] for r in async_runs) == ["host_loss", "isolation", "kill replica",
                                                              "kill write_node"]
    hl = next(r.axes["fault"] for r in async_runs if r.axes["fault"].kind == "host_loss")
    assert hl.promote and hl.as_dict()["steps"][1] == {"at_s": 4.0, "do": "kill", "target": "write_node"}
    assert "steps" not in next(r.axes["fault"] for r in async_runs if r.axes["fault"].kind == "kill").as_dict()
    gr = next(r.axes["fault"] for r in runs if r.cluster == "gr" and r.axes["fault"].kind == "host_loss")
    assert not gr.promote  # Group Replication elects its own primary
    sched = schedule_of(hl, ["async-1", "async-2", "async-3"])
    assert [(p.step.do, p.fault.kind, p.fault.nodes) for p in sched] == [
        ("isolate", "isolate", ("async-1",)), ("kill", "kill", ("async-1",)), ("release", "isolate", ("async-1",))]


def test_a_sequence_the_lab_cannot_stage_is_refused_when_planned():
    with pytest.raises(SpecError, match="async-1 runs on loopback, beside its clients") as err:
        plan(_campaign("x", {"kind": ["host_loss"], "at_s": 5}), example_spec("async-1p2r.toml", "t-x"))
    assert "place the node alone in a [sites] entry" in err.value.hint
    with pytest.raises(SpecError, match="its last step comes 25.5 s into the load, which lasts 20 s"):
        plan(_campaign("x", {"kind": ["host_loss"], "at_s": 15, "duration_s": 10}), example_spec("host-loss.toml", "t"))
    wan = example_spec("failover-wan.toml", "t-w")  # the replicas share one far site, the primaries are on loopback
    with pytest.raises(SpecError, match="runs on loopback"):
        plan(_campaign("x", {"kind": ["isolation"], "at_s": 5}), wan)
    with pytest.raises(SpecError, match="replica_then_loss's isolate of replica at 0 s on cluster async: cutting "
                                         "async-3 off needs it alone in its site; site far also holds async-2"):
        plan(_campaign("x", {"kind": ["replica_then_loss"], "at_s": 5}), wan)
