"""Why a ratio is what it is, in words: the mechanism (``benchlib.analysis.mechanism``) of a configuration beside its
baseline's, and the ways the two clusters differ that belong to a system's design (``benchlib.analysis.likeness``).

"Accounts for" is said only where the arithmetic supports it: a mean time each commit waited, set beside the
difference in mean latency (in a closed loop a time a commit waits adds to its latency one for one), or fsyncs
saved a commit times the time the disk took over each. Where the counters show a difference but no time to set
beside the latency, the mechanism "comes with" the ratio.
"""

from __future__ import annotations

import math

from benchlib.analysis.likeness import Unlike

__all__ = ["limit_words", "mechanism_words"]


def _ok(x: float | None) -> bool:
    return x is not None and not math.isnan(x)


def _f(e: dict, key: str) -> float:
    """A measure of ``e`` as a float (nan when it is missing)."""
    v = e.get(key)
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _n(x: float, digits: int = 1) -> str:
    return f"{x:.{digits}f}"


def limit_words(limit: str, m: dict, prefix: str = "") -> str:
    """What bound a configuration's host at its load, with the numbers that say so."""
    busy = _f(m, f"{prefix}busy")
    cpus = f"the host's CPUs {busy:.0%} busy" if _ok(busy) else ""
    if limit == "CPU":
        return f"CPU-bound ({cpus})"
    if limit == "flow control":
        return f"held back by flow control (its writer paused {_f(m, prefix + 'paused'):.0%} of the time)"
    if limit == "replication wait":
        wait, lat = _f(m, f"{prefix}commit_wait_ms"), _f(m, f"{prefix}lat_ms")
        return f"bound by the replication wait ({wait / lat:.0%} of a transaction's time)"
    if limit == "row locks":
        locked, lat, wait = _f(m, f"{prefix}lock_wait_ms"), _f(m, f"{prefix}lat_ms"), _f(m, f"{prefix}commit_wait_ms")
        held = f"; a commit waited {wait:.1f} ms for replication" if _ok(wait) and wait >= 0.1 else ""
        return (f"bound by contention on hot rows ({locked:.1f} ms of a transaction waiting for row locks, "
                f"{locked / lat:.0%} of its time{held})")
    if limit == "IO":
        disk = _f(m, f"{prefix}disk_busy")
        return (f"IO-bound ({_f(m, prefix + 'pages_read'):.1f} pages read from disk a transaction, "
                f"{_f(m, prefix + 'bp_miss'):.1%} of buffer-pool reads missed" +
                (f", the busiest disk {disk:.0%} busy)" if _ok(disk) else ")"))
    if limit == "fsync":
        return f"fsync-bound (each commit waits for its fsyncs while {cpus}" + ")" if cpus else "fsync-bound"
    return f"bound by neither CPU nor fsyncs ({cpus})" if cpus else ""


def _latency_interval(e: dict) -> tuple[float, float]:
    """The difference in mean latency (this minus the baseline, ms) that the throughput ratio's 95% interval allows:
    in a closed loop at equal threads, latency is threads over throughput."""
    lat_b, lo, hi = _f(e, "base_lat_ms"), _f(e, "ci_low"), _f(e, "ci_high")
    if not (_ok(lat_b) and _ok(lo) and _ok(hi)) or lo <= 0 or hi <= 0:
        return math.nan, math.nan
    return lat_b * (1 / hi - 1), lat_b * (1 / lo - 1)


def _wait_words(e: dict, this: str, base: str) -> str:
    wait, kind, lat = _f(e, "commit_wait_ms"), str(e.get("wait_kind") or "replication"), _f(e, "lat_ms")
    if not _ok(wait) or wait <= 0:
        return ""
    base_wait = _f(e, "base_commit_wait_ms")
    extra = wait - base_wait if _ok(base_wait) and base_wait > 0 else wait
    said = f"each commit waited a mean {wait:.2f} ms for {kind}"
    if _ok(base_wait) and base_wait > 0:
        said += f" (against {base_wait:.2f} ms)"
    if _ok(lat) and lat > 0:
        said += f", {wait / lat:.0%} of a transaction's {lat:.2f} ms"
    low, high = _latency_interval(e)
    diff = _f(e, "lat_diff_ms")
    if not (_ok(low) and _ok(high) and _ok(diff)):
        return said
    span = f"{low:+.2f} to {high:+.2f} ms"
    if low > 0 and low <= extra <= high:
        share = extra / diff if diff > 0 else math.inf
        how = "all" if share >= 0.95 else "most" if share >= 0.5 else f"{share:.0%}"
        return (f"{said}: that accounts for {how} of its higher mean latency ({diff:+.2f} ms; {span} as the "
                "ratio's interval puts it)")
    if low > 0 and extra < low:
        return (f"{said}: that accounts for {extra / diff:.0%} of its higher mean latency ({diff:+.2f} ms); the rest "
                "comes with what follows")
    if high < 0:
        return (f"{said}, yet its mean latency was lower ({span} as the ratio's interval puts it): what follows "
                "saves more than the wait costs")
    if extra > high:
        return (f"{said}, more than its mean latency rose ({span} as the ratio's interval puts it): the wait does "
                "not all add to a transaction's time here")
    return (f"{said}; its mean latency moved {span} (the ratio's interval), which holds both no cost and the whole "
            "wait: more rounds would tell")


def _fsync_words(e: dict, this: str, base: str, design: list[Unlike]) -> str:
    f, fb = _f(e, "fsyncs"), _f(e, "base_fsyncs")
    binlog = next((d for d in design if d.trait == "binlog"), None)
    keeps = f"{this if binlog.this == 'off' else base} keeps no binary log, by design: {binlog.why}" if binlog else ""
    if not (_ok(f) and _ok(fb)) or max(f, fb) < 0.05:  # relaxed durability: neither fsyncs at its commits
        return f"{keeps}; at this durability neither write node fsyncs at commit" if keeps else ""
    said = f"{_n(f)} fsync{'s' if round(f, 1) != 1 else ''} a commit on its write node against {_n(fb)}"
    if keeps:
        said += f" ({keeps})"
    saved, diff = fb - f, _f(e, "lat_diff_ms")
    probe, flush = _f(e, "fsync_probe_ms"), _f(e, "flush_ms")
    if abs(saved) < 0.3:
        return said
    each, source = (probe, "an fsync took on the idle disk when the campaign started") if _ok(probe) and probe > 0 \
        else (flush, "the disk took over a flush request")
    if _ok(diff) and diff * saved < 0 and _ok(each) and each > 0:
        time = abs(saved) * each
        share = time / abs(diff)
        said += (f"; at the {each:.2f} ms {source}, that is at least {time:.2f} ms a commit, "
                 f"{min(share, 1):.0%} or more of the {abs(diff):.2f} ms difference in mean latency")
    else:
        said += ", which comes with the difference (no fsync time was measured to say how much of it)"
    return said


def mechanism_words(e: dict, this: str, base: str, differences: list[Unlike] | tuple[Unlike, ...] = ()) -> list[str]:
    """``this`` beside ``base`` in numbers, one clause each (no full stop): ``e`` is a row of
    ``mechanism.explain`` (as a dict); ``differences`` the two clusters' (``likeness.unlike``). Bytes and CPU a
    transaction are said where they differ by 10% or more."""
    design = [d for d in differences if d.kind == "design"]
    parts = [p for p in (_wait_words(e, this, base), _fsync_words(e, this, base, design)) if p]
    written = [_f(e, k) for k in ("redo_kb", "binlog_kb")]
    base_written = [_f(e, k) for k in ("base_redo_kb", "base_binlog_kb")]
    if all(_ok(x) for x in (*written, *base_written)) and _differ(sum(written), sum(base_written)):
        parts.append(f"{_n(sum(written))} KB of redo and binary log a commit against {_n(sum(base_written))}")
    cpu, cb = _f(e, "cpu_ms"), _f(e, "base_cpu_ms")
    if _ok(cpu) and _ok(cb) and _differ(cpu, cb):
        parts.append(f"{cpu:.2f} ms of CPU a transaction across its servers against {cb:.2f}")
    reads, base_reads = _f(e, "pages_read"), _f(e, "base_pages_read")
    if _ok(reads) and _ok(base_reads) and max(reads, base_reads) >= 0.1 and _differ(reads, base_reads):
        parts.append(f"{_n(reads)} pages read from disk a transaction on its write node against {_n(base_reads)}")
    locked, base_locked = _f(e, "lock_wait_ms"), _f(e, "base_lock_wait_ms")
    share = max(locked / _f(e, "lat_ms"), base_locked / _f(e, "base_lat_ms")) \
        if all(_ok(x) and x > 0 for x in (_f(e, "lat_ms"), _f(e, "base_lat_ms"))) else math.nan
    threads = _f(e, "threads")
    if _ok(locked) and _ok(base_locked) and _ok(share) and share >= 0.10 and _differ(locked, base_locked) \
            and not (_ok(threads) and threads < 2):  # one client thread contends with no other of the load's
        # (a tenth of a transaction's time or more on either side: less is no part of why)
        parts.append(f"{_n(locked)} ms of a transaction waiting for row locks against {_n(base_locked)} (contention "
                     f"on hot rows)")
    paused = _f(e, "paused")
    if _ok(paused) and paused >= 0.01:
        parts.append(f"flow control paused its write node {paused:.0%} of the time")
    parts.append(_limits(e, this, base))
    parts += [f"{d.what} {d.this} against {d.baseline}: {d.why}" for d in design if d.trait != "binlog"]
    return [p for p in parts if p]


def _differ(a: float, b: float, by: float = 0.10) -> bool:
    return abs(a - b) > by * max(abs(a), abs(b), 1e-9)


def _limits(e: dict, this: str, base: str) -> str:
    lim, blim = e.get("limit", ""), e.get("base_limit", "")
    host, bhost, lo, hi = _f(e, "host_cpu_ms"), _f(e, "base_host_cpu_ms"), _f(e, "ci_low"), _f(e, "ci_high")
    if lim == blim == "CPU" and _ok(host) and _ok(bhost) and host > 0:
        predicted = bhost / host  # a saturated host completes its CPUs' time over a transaction's CPU time
        how = ("which accounts for the ratio" if _ok(lo) and _ok(hi) and lo <= predicted <= hi
               else "which comes with the ratio without accounting for it")
        return (f"both CPU-bound at this load (CPUs {_pct(_f(e, 'busy'))} and {_pct(_f(e, 'base_busy'))} busy): a "
                f"transaction took {host:.2f} ms of the host's CPU against {bhost:.2f}, so the host could complete "
                f"{predicted:.2f}× as many, {how}")
    if lim == blim and lim in ("CPU", "fsync"):
        return f"both {lim}-bound at this load (CPUs {_pct(_f(e, 'busy'))} and {_pct(_f(e, 'base_busy'))} busy)"
    said_this, said_base = limit_words(lim, e), limit_words(blim, e, "base_")
    if not (said_this or said_base):
        return ""
    return f"at this load {this} was {said_this or 'not measured'}, {base} {said_base or 'not measured'}"


def _pct(x: float) -> str:
    return f"{x:.0%}" if _ok(x) else "?"


def noted_words(differences: list[Unlike]) -> str:
    """The differences that do not confound the ratio and are not the system's design, in a few words."""
    noted = [d for d in differences if d.kind == "noted"]
    return "; ".join(f"{d.what} {d.this} against {d.baseline}" + (f" ({d.why})" if d.why else "") for d in noted)
