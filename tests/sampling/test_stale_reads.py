"""The stale-read probe's shape: which readers share a thread (never one that may wait), and when they read."""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchlib.sampling.stale_reads import ProbeOptions, StaleReadProbe
from benchlib.systems.consistency import for_system


def _probe(system: str, setting: str, rate: float = 10) -> StaleReadProbe:
    return StaleReadProbe(lambda node: None, "n-1", ["n-2", "n-3", "n-4"], for_system(system, setting),
                          ProbeOptions(read_rate=rate), time.monotonic)  # nothing connects until the sampler starts


@pytest.mark.parametrize("system, setting", [("mariadb", "eventual"), ("mysql", "eventual"),
                                             ("galera", "wsrep_sync_wait=0"), ("galera", "wsrep_sync_wait=2"),
                                             ("group_replication", "EVENTUAL")])
def test_readers_that_never_wait_share_one_thread_and_read_together(system, setting):
    p = _probe(system, setting)
    (group,) = p.probes[1:]  # one probe, so one wake-up a tick, reads every node in turn
    assert group.readers == p.readers and [r.node for r in group.readers] == ["n-2", "n-3", "n-4"]
    assert group.lane is None and p.writer.lane is None  # a commit may wait (semi-sync, GR AFTER): its own thread


@pytest.mark.parametrize("system, setting", [("mariadb", "causal"), ("mysql", "causal"),
                                             ("galera", "wsrep_sync_wait=1"), ("galera", "wsrep_sync_wait=3"),
                                             ("group_replication", "BEFORE"), ("group_replication", "AFTER"),
                                             ("group_replication", "BEFORE_AND_AFTER")])
def test_readers_that_may_wait_have_a_thread_each(system, setting):
    p = _probe(system, setting)
    assert p.probes[1:] == p.readers and all(r.lane is None for r in p.readers)  # a wait never holds back another


def test_a_read_falls_once_in_every_period_at_a_random_moment_of_it():
    """Stratified: exactly one read a period (the count is the rate's), its phase uniform over the period (so reads
    see every phase of the writer's fixed-rate commits alike), the same sequence for the same probe."""
    reader = _probe("mariadb", "causal", rate=20).readers[0]
    period = 1 / 20
    due = [reader.offset_s]
    for _ in range(4000):
        due.append(reader.next_due(due[-1], due[-1]))
    due = np.array(due)
    k = np.floor(due / period)
    assert (np.diff(k) == 1).all()  # one a period, none skipped or doubled
    phase = (due - k * period) / period
    assert np.histogram(phase, bins=10, range=(0, 1))[0].min() > 300  # uniform: 400 expected in each tenth
    again = _probe("mariadb", "causal", rate=20).readers[0]
    assert again.offset_s == reader.offset_s
    # a lane that fell behind moves the due time by whole periods: the phase sequence goes on from there
    nxt = reader.next_due(due[-1] + 3 * period, due[-1] + 3 * period)
    assert np.floor(nxt / period) == k[-1] + 4
