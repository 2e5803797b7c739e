"""What the fault run does with an old primary's errant transactions, by ``[fault] errant`` (no server: the lab's
count is tests/axes/test_fault_run.py's)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchlib.axes.fault.run import FaultHook
from benchlib.campaign.folder import CampaignError


class Events(list):
    def add(self, event, node="", detail="", t=None):
        self.append((event, node, detail))


def _hook(policy: str, count: int):
    control = SimpleNamespace(errant=lambda cluster, old, new, timeout: {
        "node": old, "against": new, "count": count, "gtids": "0-1-5..7" if count else "", "restarted": True,
        "s": 0.5})
    return SimpleNamespace(setup=SimpleNamespace(write_node="semi-1"), promotion={"primary": "semi-2"},
                           control=control, cluster="semi", plan=SimpleNamespace(errant=policy, heal_timeout_s=60),
                           events=Events(), errors=[], run_id="0001", errant=None)


def test_errant_transactions_are_recorded_and_rebuild_goes_on():
    hook = _hook("rebuild", 3)
    FaultHook.count_errant(hook)
    assert hook.errant["count"] == 3 and hook.events == [("errant", "semi-1", "semi-1 holds 3 transactions semi-2 "
                                                                              "lacks (0-1-5..7)")]


def test_refuse_stops_the_campaign_naming_the_old_primary_and_the_count():
    with pytest.raises(CampaignError) as err:
        FaultHook.count_errant(_hook("refuse", 3))
    assert "semi-1 came back with 3 errant transactions (0-1-5..7)" in err.value.message
    assert "benchlib lab heal" in err.value.hint
    hook = _hook("refuse", 0)  # nothing errant: nothing to refuse
    FaultHook.count_errant(hook)
    assert hook.errant["count"] == 0


def test_no_promotion_no_count():
    hook = _hook("rebuild", 3)
    hook.promotion = None
    FaultHook.count_errant(hook)
    assert hook.errant is None and not hook.events
