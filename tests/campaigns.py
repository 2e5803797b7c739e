"""Campaign spec texts for the tests: one small campaign, each test giving what differs."""

from __future__ import annotations

import json
from collections.abc import Sequence


def campaign_toml(name: str, lab: str, *, clusters: Sequence[str], workloads: Sequence[str] = ("oltp_write_only",),
                  threads: Sequence[int] = (2,), time_s: int = 3, repetitions: int = 2, seed: int = 3,
                  table_size: int = 1000, top: str = "", load: str = "", matrix: str = "", tail: str = "") -> str:
    """A campaign of two tables on ``lab``: ``top`` goes before [load] (top-level keys, or whole tables),
    ``load`` and ``matrix`` add lines to those tables, ``tail`` comes last.

    Runs disturbed by the host are kept, not redone (the suite's other worker is a noisy neighbour and these tests
    count runs), unless the text sets [interference] itself.
    """
    text = (f'name = "{name}"\nlab = "{lab}"\nseed = {seed}\nrepetitions = {repetitions}\n{top}'
            f'[load]\nworkloads = {json.dumps(list(workloads))}\nthreads = {list(threads)}\ntime_s = {time_s}\n'
            f'tables = 2\ntable_size = {table_size}\n{load}[matrix]\nclusters = {json.dumps(list(clusters))}\n'
            f'{matrix}{tail}')
    if "[interference]" not in text:
        text += "[interference]\nredo_above = 1\n"
    return text
