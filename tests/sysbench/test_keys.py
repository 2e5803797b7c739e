"""The key distribution: parsed as a campaign spec writes it, passed to sysbench, and its expected share on the hottest
1% of rows checked against sysbench 1.0.20's own draws (its sb_rand.c formulas, simulated here with a fixed seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlib.errors import SpecError
from benchlib.sysbench.keys import DEFAULT, KeyDistribution
from benchlib.sysbench.options import RunError, SysbenchOptions


@pytest.mark.parametrize("text, name, args", [
    ("special", "special:1:75", ["--rand-type=special", "--rand-spec-pct=1", "--rand-spec-res=75"]),
    ("Special:5:90", "special:5:90", ["--rand-type=special", "--rand-spec-pct=5", "--rand-spec-res=90"]),
    ("uniform", "uniform", ["--rand-type=uniform"]),
    ("gaussian", "gaussian", ["--rand-type=gaussian"]),
    ("pareto", "pareto:0.2", ["--rand-type=pareto", "--rand-pareto-h=0.2"]),
    ("pareto:0.5", "pareto:0.5", ["--rand-type=pareto", "--rand-pareto-h=0.5"]),
])
def test_a_distribution_is_read_named_and_passed_to_sysbench(text, name, args):
    d = KeyDistribution.parse(text)
    assert d.name == name and d.args() == args and KeyDistribution.parse(d.name) == d


@pytest.mark.parametrize("text, says", [("zipf", "unknown key distribution"), ("special:1", "two percentages"),
                                        ("special:0:75", "two percentages"), ("pareto:1.5", "between 0 and 1"),
                                        ("uniform:3", "takes no parameter"), ("pareto:x", "not a number")])
def test_a_wrong_distribution_is_refused_saying_what_is_known(text, says):
    with pytest.raises(SpecError, match=says) as e:
        KeyDistribution.parse(text)
    assert "special:PCT:RES" in e.value.hint


def test_a_run_passes_only_the_distribution_its_campaign_chose():
    assert not any(a.startswith("--rand-") for a in SysbenchOptions().run_args())  # none chosen: as every run before
    assert SysbenchOptions().keys == DEFAULT and DEFAULT.name == "special:1:75"
    assert "--rand-type=uniform" in SysbenchOptions(distribution="uniform").run_args()
    assert not any(a.startswith("--rand-") for a in SysbenchOptions(distribution="uniform").prepare_args())
    with pytest.raises(RunError, match="unknown key distribution"):
        SysbenchOptions(distribution="zipf")


def _sysbench_draws(d: KeyDistribution, n_rows: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Row ids 1..n_rows as sysbench 1.0.20's sb_rand_* draws them (sb_rand.c), vectorised."""
    a, b = 1, n_rows
    u = rng.random(draws)
    if d.kind == "uniform":
        return (a + u * (b - a + 1)).astype(np.int64)
    gauss = rng.random((draws, 12)).mean(axis=1)  # rand_iter = 12
    if d.kind == "gaussian":
        return (a + gauss * (b - a + 1)).astype(np.int64)
    if d.kind == "pareto":
        return (a + (b - a + 1) * u ** (math.log(d.h) / math.log(1 - d.h))).astype(np.int64)
    t = b - a
    res = u * t * 100 / (100 - d.res)  # range_size = t * rand_res_mult
    special = a + (u * (t * d.pct / 100 + 1) + t / 2 - t * d.pct / 200)
    return np.where(res < t, a + gauss * t, special).astype(np.int64)


@pytest.mark.parametrize("text", ["uniform", "special", "special:5:90", "special:10:30", "special:1:20", "gaussian",
                                  "pareto", "pareto:0.5"])
def test_the_expected_share_on_the_hottest_rows_is_what_sysbench_draws(text):
    d = KeyDistribution.parse(text)
    ids = _sysbench_draws(d, 10_000, 400_000, np.random.default_rng(5))
    first, last = d.hot_rows(10_000)
    assert last - first + 1 == 100
    measured = float(((ids >= first) & (ids <= last)).mean())
    # sysbench's special band is a row wider than its pct% (its "+ 1"), the id range here continuous: within 3%
    assert measured == pytest.approx(d.hot_share(), rel=0.03, abs=0.0005), (text, measured, d.hot_share())


def test_the_words_say_the_share_as_a_reader_needs_it():
    assert DEFAULT.words() == "sysbench special, 75% of accesses on 1% of rows"
    assert KeyDistribution.parse("uniform").words() == "uniform, every row alike"
    assert "hottest 1% of rows" in KeyDistribution.parse("pareto").words()
