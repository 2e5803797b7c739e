"""Probes and the sampler that runs them.

A probe is one small object with a period: ``setup()`` once, ``sample(t)`` every
``interval_s`` seconds on its own thread with its own connection, ``close()`` at
the end. The sampler gives every probe the same clock (``time.monotonic``
relative to the sampler's start), keeps each probe on a drift-free schedule
(ticks that fall behind are skipped, not bunched), and stops them together.
Probes for other systems (MySQL 8, Group Replication, Aurora) are more subclasses.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

Clock = Callable[[], float]


class Probe:
    name: str = "probe"
    interval_s: float = 1.0
    offset_s: float = 0.0  # phase: first tick this long after the sampler starts

    def setup(self) -> None:
        """Open connections, create what the probe needs. Runs on the probe's thread."""

    def sample(self, t: float) -> None:
        """Take one sample at sampler time ``t`` (seconds)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections. Runs on the probe's thread."""


class Sampler:
    def __init__(self, probes: list[Probe]):
        self.probes = probes
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ready = threading.Barrier(len(probes) + 1)
        self.errors: list[tuple[str, BaseException]] = []
        self.skipped: dict[str, int] = {p.name: 0 for p in probes}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> "Sampler":
        for probe in self.probes:
            th = threading.Thread(target=self._run, args=(probe,), name=f"probe-{probe.name}", daemon=True)
            th.start()
            self._threads.append(th)
        self._ready.wait()  # every probe is set up before the caller starts the load
        if self.errors:
            self.stop()
            name, exc = self.errors[0]
            raise RuntimeError(f"probe {name} failed to set up: {exc}") from exc
        return self

    def _run(self, probe: Probe) -> None:
        try:
            probe.setup()
        except BaseException as exc:  # reported by start()
            self.errors.append((probe.name, exc))
            self._ready.wait()
            return
        self._ready.wait()
        try:
            start = self.now() + probe.offset_s
            self._stop.wait(max(0.0, start - self.now()))
            k = 0
            while not self._stop.is_set():
                probe.sample(self.now())
                k += 1
                due = start + k * probe.interval_s
                late = self.now() - due
                if late > 0:  # fell behind: skip the ticks we missed
                    missed = int(late // probe.interval_s) + 1
                    self.skipped[probe.name] += missed
                    k += missed
                    due = start + k * probe.interval_s
                self._stop.wait(max(0.0, due - self.now()))
        except BaseException as exc:
            self.errors.append((probe.name, exc))
        finally:
            try:
                probe.close()
            except Exception:
                pass

    def stop(self) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout=10)

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
