"""The settings that decide failover time, measured against what each system's mechanism predicts.

- Group Replication, ``gr_member_expel_timeout`` (E): a member counts as unreachable after a fixed 5 s without
  messages (``DETECTOR_LIVE_TIMEOUT`` in xcom_detector.h, checked about once a second), and expired suspicions are
  processed every 15 s (``SUSPICION_PROCESSING_THREAD_PERIOD`` in gcs_xcom_control_interface.cc), so the expulsion,
  and with it the new primary's election, comes about 5 + 1 + 15 x ceil(E/15) s after the primary went silent:
  6 s for E = 0, 21 s for E from 1 to 15, 36 s for E from 16 to 30. MySQL's design note for the default of 5
  (WL#13773) says "10 seconds".
- Galera, ``suspect_timeout`` (evs.suspect_timeout, S): a silent node is suspected after S, and writes block until
  the new primary component forms, a little over S.

``by_setting`` gives each fault run of a swept setting with its value, and the prediction per value; ``in_words``
says, per setting, the measured median against the prediction and where they differ (by more than 2 s and 20%).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["EXPECTED", "by_setting", "curve", "in_words"]

#: a setting (its column in the failover frame) -> (seconds it predicts for a value, the prediction in words)
EXPECTED: dict[str, tuple[Callable[[float], float], str]] = {
    "gr_member_expel_timeout": (lambda e: 6.0 + 15.0 * math.ceil(e / 15.0),
                                "Group Replication: 5 s to suspect + 1 s + 15 x ceil(E/15) s"),
    "suspect_timeout": (lambda s: float(s), "Galera: evs.suspect_timeout"),
}
#: how far a measured median may sit from the prediction before the words say they differ
DIFFERS_S, DIFFERS_SHARE = 2.0, 0.2


def by_setting(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(each fault run of a setting that was swept over two values or more: setting, value, unavailability_s and
    the run's other columns; the prediction per setting and value: setting, value, expected_s, words)."""
    parts, expected = [], []
    for name, (predict, words) in EXPECTED.items():
        if name not in runs or runs[name].dropna().nunique() < 2:
            continue
        g = runs.dropna(subset=[name]).assign(setting=name, value=lambda d: d[name].astype(float))
        parts.append(g)
        values = sorted(g.value.unique())
        expected += [{"setting": name, "value": v, "expected_s": predict(v), "words": words} for v in values]
    cols = ["setting", "value", "expected_s", "words"]
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["setting", "value"]),
            pd.DataFrame(expected, columns=cols))


def curve(expected: pd.DataFrame, points: int = 400) -> pd.DataFrame:
    """The prediction between the swept values, not only at them (setting, value, expected_s, words): drawn through
    its values alone, Group Replication's steps would seem to rise between E = 0 and 5 and Galera's line to climb in
    steps, where one jumps just above 0 and 15 and the other is a straight line."""
    parts = []
    for name, e in expected.groupby("setting", sort=False):
        predict = EXPECTED[name][0]
        grid = np.unique(np.concatenate([np.linspace(e.value.min(), e.value.max(), points), e.value.to_numpy()]))
        parts.append(pd.DataFrame({"setting": name, "value": grid, "expected_s": [predict(v) for v in grid],
                                   "words": e.words.iloc[0]}))
    return pd.concat(parts, ignore_index=True) if parts else expected


def in_words(runs: pd.DataFrame) -> list[str]:
    """Per swept setting: the median unavailability at each value beside the prediction, and where they differ."""
    measured, expected = by_setting(runs)
    out = []
    for name, e in expected.groupby("setting", sort=False):
        g = measured[measured.setting == name]
        parts, differ = [], []
        for row in e.itertuples():
            u = g[g.value == row.value].unavailability_s.dropna()
            if u.empty:
                parts.append(f"{row.value:g}: never acknowledged again within the run (predicted {row.expected_s:.0f} s)")
                continue
            med = float(u.median())
            parts.append(f"{row.value:g}: a median {med:.1f} s over {len(u)} faults (predicted {row.expected_s:.0f} s)")
            if abs(med - row.expected_s) > max(DIFFERS_S, DIFFERS_SHARE * row.expected_s):
                differ.append(f"{row.value:g} ({med - row.expected_s:+.1f} s)")
        verdict = (f"it differs at {', '.join(differ)}" if differ else "every median is within 2 s or 20% of it")
        out.append(f"Unavailability against {name}: {'; '.join(parts)}. The prediction ({e.words.iloc[0]}): "
                   f"{verdict}.")
    return out
