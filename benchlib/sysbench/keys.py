"""Which rows a sysbench load touches: its key distribution, chosen and stated.

sysbench 1.0.20 draws every row id (and the secondary key ``k`` of the rows it prepares) from ``--rand-type``:

- ``uniform``: every row alike;
- ``special`` (sysbench's default: ``--rand-spec-pct=1 --rand-spec-res=75``): ``res``% of the draws are uniform over
  the ``pct``% of the rows in the middle of the id range, the others gaussian over the whole range;
- ``gaussian``: the mean of 12 uniform draws (``--rand-spec-iter``), so about N(middle, range/12);
- ``pareto`` (``--rand-pareto-h=0.2``): ``first + n * u ** (log h / log(1 - h))``, the lowest ids the hottest.

``KeyDistribution.parse`` reads the names a campaign spec gives (``"uniform"``, ``"special"``, ``"special:5:90"``
for 90% of the draws on 5% of the rows, ``"pareto"``, ``"pareto:0.5"``, ``"gaussian"``); ``args`` is sysbench's
command line for it, ``words`` what a report says, and ``hot_share`` the share of draws expected on the hottest
``fraction`` of the rows (``hot_window``: those the distribution favours), which a run's measured share is compared
with. A run that chose none used sysbench's default (``DEFAULT``), as every run benchlib
recorded before the choice existed did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from benchlib.errors import SpecError

__all__ = ["DEFAULT", "KINDS", "KeyDistribution"]

KINDS = ("uniform", "special", "gaussian", "pareto")
GAUSS_ITER = 12  # sysbench's --rand-spec-iter: the gaussian (and special's gaussian part) is a mean of 12 uniforms


@dataclass(frozen=True)
class KeyDistribution:
    kind: str
    pct: float = 1.0  # special: the share of the rows (%) that take res% of the draws
    res: float = 75.0  # special: the share of the draws (%) on those rows
    h: float = 0.2  # pareto

    @classmethod
    def parse(cls, text: str) -> "KeyDistribution":
        """``"special"``, ``"special:1:75"``, ``"pareto:0.2"``, ``"uniform"``, ``"gaussian"``."""
        kind, *values = str(text).strip().lower().split(":")
        how = ("uniform; gaussian; special, or special:PCT:RES (RES% of the draws on PCT% of the rows, sysbench's "
               "default special:1:75); pareto, or pareto:H (0 < H < 1, default 0.2)")
        if kind not in KINDS:
            raise SpecError(f"unknown key distribution {text!r}", hint=f"one of: {how}")
        try:
            numbers = [float(v) for v in values]
        except ValueError:
            raise SpecError(f"key distribution {text!r}: {':'.join(values)} is not a number", hint=how) from None
        if kind == "special":
            if len(numbers) not in (0, 2) or (numbers and not (0 < numbers[0] < 100 and 0 < numbers[1] < 100)):
                raise SpecError(f"key distribution {text!r}: special takes two percentages, PCT:RES, each "
                                "between 0 and 100", hint=how)
            return cls("special", *numbers) if numbers else cls("special")
        if kind == "pareto":
            if len(numbers) > 1 or (numbers and not 0 < numbers[0] < 1):
                raise SpecError(f"key distribution {text!r}: pareto takes one H between 0 and 1", hint=how)
            return cls("pareto", h=numbers[0]) if numbers else cls("pareto")
        if numbers:
            raise SpecError(f"key distribution {text!r}: {kind} takes no parameter", hint=how)
        return cls(kind)

    @property
    def name(self) -> str:
        """The canonical spelling (what a run records): ``special:1:75``, ``pareto:0.2``, ``uniform``."""
        if self.kind == "special":
            return f"special:{self.pct:g}:{self.res:g}"
        if self.kind == "pareto":
            return f"pareto:{self.h:g}"
        return self.kind

    def args(self) -> list[str]:
        """sysbench's options for it."""
        out = [f"--rand-type={self.kind}"]
        if self.kind == "special":
            out += [f"--rand-spec-pct={self.pct:g}", f"--rand-spec-res={self.res:g}"]
        elif self.kind == "pareto":
            out.append(f"--rand-pareto-h={self.h:g}")
        return out

    def words(self) -> str:
        """What a report says of it: ``sysbench special, 75% of accesses on 1% of rows``."""
        if self.kind == "special":
            return f"sysbench special, {self.res:g}% of accesses on {self.pct:g}% of rows"
        if self.kind == "pareto":
            return f"sysbench pareto (h = {self.h:g}), {self.hot_share():.0%} of accesses on the hottest 1% of rows"
        if self.kind == "gaussian":
            return f"sysbench gaussian, {self.hot_share():.1%} of accesses on the middle 1% of rows"
        return "uniform, every row alike"

    def hot_window(self, fraction: float = 0.01) -> tuple[float, float]:
        """The hottest ``fraction`` of the id range, as (low, high) shares of it: the middle for uniform and gaussian,
        the lowest ids for pareto; for special, where its draws land. sysbench maps special's draws onto the top
        ``res``% of its ``pct``% band only (the same uniform number first decides whether a draw is special), so the
        region they fall in is the band's upper part: the window sits in it (or around it) nearest the middle."""
        if self.kind == "pareto":
            return 0.0, fraction
        lo = 0.5 - fraction / 2
        if self.kind == "special":
            band, res = self.pct / 100, self.res / 100
            top = 0.5 + band / 2
            region = top - res * band
            lo = min(max(lo, min(region, top - fraction)), max(region, top - fraction))
        return lo, lo + fraction

    def hot_share(self, fraction: float = 0.01) -> float:
        """The share of draws expected on the hottest ``fraction`` of the rows (``hot_window``; many rows: the id
        range as continuous)."""
        if self.kind == "uniform":
            return fraction
        if self.kind == "pareto":
            power = math.log(self.h) / math.log(1 - self.h)
            return fraction ** (1 / power)
        lo, hi = self.hot_window(fraction)
        sd = math.sqrt(1 / (12 * GAUSS_ITER))  # the mean of GAUSS_ITER uniforms on [0, 1)
        gauss = float(stats.norm.cdf((hi - 0.5) / sd) - stats.norm.cdf((lo - 0.5) / sd))
        if self.kind == "gaussian":
            return gauss
        band, res = self.pct / 100, self.res / 100
        top = 0.5 + band / 2
        overlap = max(0.0, min(hi, top) - max(lo, top - res * band))
        return overlap / band + (1 - res) * gauss  # res of the draws, uniform over res * band of the range

    def hot_rows(self, table_size: int, fraction: float = 0.01) -> tuple[int, int]:
        """The ids (first, last, inclusive) of the hottest ``fraction`` of rows 1..``table_size`` (``hot_window``)."""
        n = max(1, round(table_size * fraction))
        first = 1 + int(round(self.hot_window(fraction)[0] * (table_size - 1)))
        return first, min(table_size, first + n - 1)


DEFAULT = KeyDistribution("special")
