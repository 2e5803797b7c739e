"""Parse speed of the sysbench output parser, in lines per second, on the real captured outputs.

Parses every complete fixture in tests/fixtures/sysbench/ repeatedly, as a whole
(``parse_text``, frames built) and line by line (``LineParser.feed``, as the live
runner does). Prints the median of 5 repeats. Figures, not assertions.

    python bench/parse_speed.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.sysbench.output import LineParser, parse_text  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "sysbench"


def rate(fn, texts: list[str], seconds: float) -> float:
    lines = n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for text in texts:
            fn(text)
            lines += text.count("\n")
        n += 1
    return lines / (time.perf_counter() - t0)


def live(text: str) -> None:
    p = LineParser("live")
    for line in text.splitlines():
        p.feed(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    texts = [p.read_text() for p in sorted(FIX.glob("*.txt")) if "FATAL" not in p.read_text()]
    per_interval = [line for t in texts for line in t.splitlines() if line.startswith("[ ")]
    interval_block = "\n".join(per_interval * 50) + "\n"
    print(f"{len(texts)} real outputs, {sum(t.count(chr(10)) for t in texts)} lines")
    for name, fn, data in [("whole outputs (parse_text, frames built)", lambda t: parse_text(t), texts),
                           ("whole outputs, line by line (LineParser.feed)", live, texts),
                           ("interval lines only, line by line", live, [interval_block])]:
        runs = [rate(fn, data, args.seconds) for _ in range(5)]
        print(f"{name:48} median {statistics.median(runs):>10,.0f} lines/s (min {min(runs):,.0f}, max {max(runs):,.0f})")


if __name__ == "__main__":
    main()
