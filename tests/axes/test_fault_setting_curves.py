"""Failover time against the settings that decide it: the prediction per value, and the words that say where the
measurement differs from it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchlib.axes.fault.setting_curves import by_setting, curve, in_words


def _runs(seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for e, true in ((0, 6.2), (5, 21.4), (10, 21.3), (16, 28.0)):  # E = 16 measured well below its prediction
        rows += [{"cluster": "gr", "gr_member_expel_timeout": e, "unavailability_s": true + rng.normal(0, 0.3)}
                 for _ in range(9)]
    rows += [{"cluster": "galera", "suspect_timeout": s, "unavailability_s": s + 0.2 + rng.normal(0, 0.1)}
             for s in (2.0, 5.0, 10.0) for _ in range(9)]
    return pd.DataFrame(rows)


def test_each_swept_setting_gets_its_prediction_per_value():
    runs, expected = by_setting(_runs())
    assert set(runs.setting) == {"gr_member_expel_timeout", "suspect_timeout"} and len(runs) == 63
    gr = expected[expected.setting == "gr_member_expel_timeout"].set_index("value").expected_s
    assert gr.to_dict() == {0.0: 6.0, 5.0: 21.0, 10.0: 21.0, 16.0: 36.0}
    assert expected[expected.setting == "suspect_timeout"].expected_s.tolist() == [2.0, 5.0, 10.0]


def test_the_words_name_the_values_where_measurement_and_prediction_differ():
    gr, galera = in_words(_runs())
    assert gr.startswith("Unavailability against gr_member_expel_timeout: 0: a median 6.")
    assert "16: a median 28.0 s over 9 faults (predicted 36 s)" in gr.replace("28.1", "28.0").replace("27.9", "28.0")
    assert "it differs at 16 (-8." in gr and "differs at 0" not in gr
    assert galera.endswith("every median is within 2 s or 20% of it.")


def test_a_setting_held_at_one_value_is_no_sweep():
    one = _runs()
    one = one[(one.gr_member_expel_timeout == 5) | one.suspect_timeout.notna()]
    runs, expected = by_setting(one)
    assert set(runs.setting) == {"suspect_timeout"} and len(in_words(one)) == 1


def test_the_prediction_is_drawn_between_the_values_as_the_mechanism_has_it():
    """Group Replication's steps jump just above E = 0 and 15 (not halfway to the next swept value); Galera's is the
    straight line of its timeout."""
    drawn = curve(by_setting(_runs())[1])
    gr = drawn[drawn.setting == "gr_member_expel_timeout"].set_index("value").expected_s
    assert gr[0.0] == 6.0 and gr[(gr.index > 0) & (gr.index <= 15)].eq(21.0).all()
    assert gr[gr.index > 15].eq(36.0).all() and gr.index.max() == 16.0 and len(gr) > 100
    galera = drawn[drawn.setting == "suspect_timeout"]
    assert (galera.value == galera.expected_s).all() and {2.0, 5.0, 10.0} <= set(galera.value)
