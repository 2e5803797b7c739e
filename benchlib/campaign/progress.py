"""Progress of a campaign: a tqdm bar over the runs (run k of n, live TPS and replica lag; a redo of a disturbed run
counts as one more), events above it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchlib.campaign.plan import PlannedRun
    from benchlib.sysbench.output import Interval

__all__ = ["Progress"]


class Progress:
    def __init__(self, mode: str, total: int, done: int, name: str):
        if mode == "auto":
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        self.bar = tqdm(total=total, initial=done, desc=name, unit="run", disable=mode == "none",
                        file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
        self.quiet = mode == "none"
        self.run = ""

    def start(self, k: int, n: int, run: "PlannedRun") -> None:
        rate = f" rate {run.options.rate}" if run.options.rate else ""
        reads = f" reads {run.probe.consistency}" if run.probe is not None and run.probe.consistency else ""
        self.run = (f"{k}/{n} {run.cluster} {run.options.workload} t{run.options.threads}{rate}{reads} "
                    f"r{run.repetition}")
        self.bar.set_postfix_str(self.run + " preparing", refresh=True)

    def second(self, iv: "Interval", lag_ms: float | None) -> None:
        lag = f" lag {lag_ms:.0f} ms" if lag_ms is not None else ""
        self.bar.set_postfix_str(f"{self.run} {iv.t_s:.0f}s {iv.tps:.0f} tps{lag}", refresh=False)

    def total(self, n: int) -> None:
        self.bar.total = n

    def one_more(self) -> None:
        """A run was added on the way (a disturbed run's redo): the bar counts it."""
        self.bar.total = (self.bar.total or 0) + 1
        self.bar.refresh()

    def done(self) -> None:
        self.bar.update(1)

    def say(self, text: str) -> None:
        if not self.quiet:
            self.bar.write(text, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()
