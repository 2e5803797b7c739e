"""Parse sysbench 1.0.20 output: per-second intervals, the latency histogram, the final summary.

One parser serves both uses:
- live: ``LineParser.feed(line)`` as lines arrive from a running sysbench, returning
  each completed interval (open-loop queue lines are merged into their interval);
- afterwards: ``parse_text`` / ``parse_file`` on the whole output, returning a
  ``SysbenchResult`` with tidy frames (``benchlib.schema``) and the summary.

Output cut short by a killed process parses up to the cut and says so
(``truncated``); ``FATAL:`` lines are collected, and so are the lines a benchlib workload prints of its own
(``benchlib-...``, ``records``). A line that breaks the grammar of
the section it is in raises ``SysbenchParseError`` with the file, line number and
line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from benchlib.errors import BenchlibError
from benchlib.schema import HISTOGRAM, INTERVALS


class SysbenchParseError(BenchlibError):
    """sysbench output that does not follow the expected format."""

    def __init__(self, source: str, lineno: int, line: str, why: str):
        super().__init__(f"{source}:{lineno}: {why}: {line.rstrip()[:200]!r}",
                         hint="is this the output of sysbench 1.0.20 run with --report-interval?")
        self.source, self.lineno, self.line = source, lineno, line


_NUM = r"(\d+(?:\.\d+)?)"
INTERVAL = re.compile(
    rf"^\[ *{_NUM}s \] thds: (\d+) tps: {_NUM} qps: {_NUM} \(r/w/o: {_NUM}/{_NUM}/{_NUM}\) "
    rf"lat \(ms,{_NUM}%\): {_NUM} err/s:? {_NUM} reconn/s: {_NUM}$"
)
QUEUE = re.compile(rf"^\[ *{_NUM}s \] queue length: (\d+), concurrency: (\d+)$")
HIST_ROW = re.compile(r"^\s*(\d+(?:\.\d+)?) \|\**\s+(\d+)$")
COUNT_RATE = re.compile(rf"^\s+([a-z ]+):\s+(\d+)\s+\({_NUM} per sec\.\)$")
KEY_VALUE = re.compile(r"^\s+([A-Za-z0-9 ()/]+):\s+(\S+)$")

#: lines sysbench 1.0.20 prints among the others when a run fails (a server gone: its log folds repeats into
#: "(last message repeated N times)"; the MySQL client library's own complaint when threads die)
DIAGNOSTICS = ("(last message repeated", "ALERT:", "WARNING:", "Error in my_thread_global_end()")

#: the start of a line a benchlib workload prints of its own (``benchlib.workloads``)
RECORD = "benchlib-"

SUMMARY_KEYS = {
    # section "SQL statistics" / "queries performed"
    "read": "queries_read", "write": "queries_write", "other": "queries_other", "total": "queries_total",
    # section "General statistics"
    "total time": "total_time_s", "total number of events": "events",
    # section "Latency (ms)"
    "min": "lat_min_ms", "avg": "lat_avg_ms", "max": "lat_max_ms", "sum": "lat_sum_ms",
    # section "Threads fairness"
    "events (avg/stddev)": "fairness_events", "execution time (avg/stddev)": "fairness_time_s",
}
COUNT_KEYS = {"transactions": "transactions", "queries": "queries", "ignored errors": "ignored_errors",
              "reconnects": "reconnects"}
RATE_KEYS = {"transactions": "tps", "queries": "qps", "ignored errors": "err_per_s", "reconnects": "reconn_per_s"}


@dataclass(frozen=True)
class Interval:
    t_s: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    pctl: float
    lat_pctl_ms: float
    err_per_s: float
    reconn_per_s: float
    queue_length: int | None = None
    concurrency: int | None = None


@dataclass
class SysbenchResult:
    source: str
    version: str | None = None
    threads: int | None = None
    target_rate: float | None = None
    report_interval_s: float | None = None
    intervals: pd.DataFrame = field(default_factory=INTERVALS.empty)
    histogram: pd.DataFrame = field(default_factory=HISTOGRAM.empty)
    summary: dict[str, float] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    truncated: bool = False
    truncation: str | None = None
    #: lines a benchlib workload prints of its own (``benchlib-...``: the TPC-C-like mix's counts by type), in order
    records: list[str] = field(default_factory=list)

    @property
    def open_loop(self) -> bool:
        return self.target_rate is not None

    @property
    def complete(self) -> bool:
        return not self.truncated and not self.fatal and "tps" in self.summary


class LineParser:
    """Incremental parser: feed lines in order, read ``intervals``/``histogram``/``summary`` at any time."""

    def __init__(self, source: str = "<sysbench>"):
        self.source = source
        self.lineno = 0
        self.section = "header"
        self.result = SysbenchResult(source)
        self.intervals: list[Interval] = []
        self.hist: list[tuple[float, int]] = []
        self._sub = ""

    def _fail(self, line: str, why: str) -> None:
        raise SysbenchParseError(self.source, self.lineno, line, why)

    def feed(self, line: str) -> Interval | None:
        """Parse one line (with or without its newline); return an interval when one completes."""
        self.lineno += 1
        line = line.rstrip("\n")
        r = self.result
        if line.startswith(RECORD):  # a benchlib workload's own line, anywhere in the output
            r.records.append(line)
            return None
        if line.startswith("FATAL:"):
            r.fatal.append(line[6:].strip())
            return None
        if line.startswith(DIAGNOSTICS):  # sysbench's other messages in a failure, anywhere in the output
            if line.startswith("ALERT:"):
                r.alerts.append(line[6:].strip())
            return None
        if line.startswith("["):
            return self._interval(line)
        stripped = line.strip()
        if self.section in {"header", "intervals"}:
            if stripped.startswith("Latency histogram"):
                self.section = "histogram"
            elif stripped == "SQL statistics:":
                self.section = "summary"
            elif self.section == "header":
                self._header(stripped)
            elif stripped and not stripped.startswith(("WARNING", "Threads started", "Initializing")):
                self._fail(line, "unexpected line among the per-second intervals")
            return None
        if self.section == "histogram":
            if not stripped:
                self.section = "after-histogram"
            elif stripped.startswith("value"):
                pass
            else:
                m = HIST_ROW.match(line)
                if not m:
                    self._fail(line, "not a histogram row")
                self.hist.append((float(m.group(1)), int(m.group(2))))
            return None
        if self.section == "after-histogram":
            if stripped == "SQL statistics:":
                self.section = "summary"
            elif stripped:
                self._fail(line, "unexpected line after the histogram")
            return None
        self._summary(line, stripped)
        return None

    def _header(self, s: str) -> None:
        r = self.result
        if s.startswith("sysbench "):
            r.version = s.split()[1]
        elif s.startswith("Number of threads:"):
            r.threads = int(s.split(":")[1])
        elif s.startswith("Target transaction rate:"):
            r.target_rate = float(s.split(":")[1].strip().split("/")[0])
        elif s.startswith("Report intermediate results every"):
            r.report_interval_s = float(s.split()[4])
        elif s == "Threads started!":
            self.section = "intervals"

    def _interval(self, line: str) -> Interval | None:
        m = INTERVAL.match(line)
        if m:
            g = m.groups()
            iv = Interval(float(g[0]), int(g[1]), float(g[2]), float(g[3]), float(g[4]), float(g[5]), float(g[6]),
                          float(g[7]), float(g[8]), float(g[9]), float(g[10]))
            self.intervals.append(iv)
            self.section = "intervals"
            return None if self.result.open_loop else iv
        m = QUEUE.match(line)
        if m:
            t = float(m.group(1))
            if not self.intervals or self.intervals[-1].t_s != t:
                self._fail(line, "queue line without the interval it belongs to")
            last = self.intervals[-1]
            iv = Interval(**{**last.__dict__, "queue_length": int(m.group(2)), "concurrency": int(m.group(3))})
            self.intervals[-1] = iv
            return iv
        self._fail(line, "not a per-second interval line")
        return None

    def _summary(self, line: str, s: str) -> None:
        if not s or s.endswith(":") and not KEY_VALUE.match(line):
            self._sub = s
            return
        r = self.result
        m = COUNT_RATE.match(line)
        if m and m.group(1) in COUNT_KEYS:
            r.summary[COUNT_KEYS[m.group(1)]] = int(m.group(2))
            r.summary[RATE_KEYS[m.group(1)]] = float(m.group(3))
            return
        m = KEY_VALUE.match(line)
        if not m or m.group(1).strip() in COUNT_KEYS:  # a count line must also carry its rate
            self._fail(line, "not a summary line")
        key, value = m.group(1).strip(), m.group(2)
        try:
            if key.endswith("th percentile"):
                r.summary["lat_pctl_ms"] = float(value)
                r.summary["pctl"] = float(key.split("th")[0])
            elif key in SUMMARY_KEYS:
                name = SUMMARY_KEYS[key]
                if "/" in value:  # avg/stddev
                    avg, std = value.split("/")
                    r.summary[f"{name}_avg"], r.summary[f"{name}_stddev"] = float(avg), float(std)
                else:
                    r.summary[name] = float(value.rstrip("s"))
        except ValueError:
            self._fail(line, f"not a number in the summary line {key!r}")
        # other keys (future sysbench versions) are kept out of the summary, not an error

    def finish(self, *, ended_with_newline: bool = True) -> SysbenchResult:
        """Close the parse: build the frames and decide whether the output was cut short."""
        r = self.result
        rows = {c: [getattr(iv, c) for iv in self.intervals] for c in INTERVALS.columns}
        r.intervals = INTERVALS.frame(rows)
        r.histogram = HISTOGRAM.frame({"lat_ms": [v for v, _ in self.hist], "count": [c for _, c in self.hist]})
        if "tps" not in r.summary and not r.fatal:
            r.truncated = True
            r.truncation = (f"output ends after line {self.lineno} in the {self.section} section "
                            f"without sysbench's final summary (process killed?)")
        elif not ended_with_newline and "fairness_time_s_stddev" not in r.summary:
            r.truncated = True
            r.truncation = f"output ends mid-line at line {self.lineno}"
        return r


def parse_text(text: str, source: str = "<sysbench>") -> SysbenchResult:
    parser = LineParser(source)
    lines = text.split("\n")
    ended = text.endswith("\n")
    if ended:
        lines.pop()
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        try:
            parser.feed(line)
        except SysbenchParseError:
            if last and not ended:  # a line cut by a killed process: parse up to it
                r = parser.finish()
                r.truncated = True
                r.truncation = f"output cut mid-line at line {parser.lineno}: {line[:80]!r}"
                return r
            raise
    return parser.finish(ended_with_newline=ended)


def parse_file(path: str | Path) -> SysbenchResult:
    p = Path(path)
    return parse_text(p.read_text(errors="replace"), str(p))
