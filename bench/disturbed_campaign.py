"""The main job's campaign disturbed on purpose against the same campaign undisturbed: the same verdicts?

Runs examples/campaigns/quick.toml (the demo: async, semi-sync and Galera at 2 and 16 client threads, adaptive
rounds within its budget) twice on the demo lab, in ``--order`` (default: disturbed first): once as it is, once
with a CPU hog outside benchlib (tests/hog.py, ``--hog-cpus`` processes at full duty) started before each of the
first half of round ``--round``'s runs and stopped after it. Prints, for both, every headline ratio with its 95%
interval and verdict, the rounds, the stopping rule, and the disturbed runs the report names with their evidence;
then whether the verdicts agree.

    python bench/disturbed_campaign.py [--round 2] [--hog-cpus 2] [--order disturbed,quiet]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.analysis.campaign import analyze, headline_rows  # noqa: E402
from benchlib.campaign.runner import run_campaign  # noqa: E402
from benchlib.report import interference_findings, settlement  # noqa: E402
from tests.hog import CpuHog  # noqa: E402


def campaign(work: Path, name: str, hog_round: int | None, hog_cpus: int) -> tuple[Path, list[str], float]:
    quick = (ROOT / "examples/campaigns/quick.toml").read_text()
    quick = quick.replace('name = "quick"', f'name = "{name}"').replace(
        'lab = "../labs/demo.toml"', 'lab = "lab.toml"')
    (work / f"{name}.toml").write_text(quick)
    (work / "lab.toml").write_text((ROOT / "examples/labs/demo.toml").read_text().replace('name = "demo"',
                                                                                          'name = "disturbed"'))
    hogs: list[CpuHog] = []
    hit: list[str] = []
    seen: dict[int, int] = {}

    def before(lab, run) -> None:
        for h in hogs:
            h.stop()
        hogs.clear()
        if hog_round is None or run.repetition != hog_round:
            return
        seen[run.repetition] = seen.get(run.repetition, 0) + 1
        if seen[run.repetition] <= 3 and run.run_id not in hit:  # the first half of the round's 6 runs
            hit.append(run.run_id)
            hogs.append(CpuHog(hog_cpus, 1.0, seconds=120).start())

    t = time.monotonic()
    try:
        result = run_campaign(work / f"{name}.toml", runs_dir=work / "runs", progress="text", before_run=before)
    finally:
        for h in hogs:
            h.stop()
    return result.path, hit, time.monotonic() - t


def show(label: str, folder: Path, hit: list[str], seconds: float) -> dict[str, str]:
    a = analyze(folder)
    c = headline_rows(a.comparisons)
    print(f"\n== {label}: {folder} ({seconds:.0f} s)")
    verdicts = {}
    for r in c.itertuples():
        key = f"{r.cluster} t{r.threads}"
        verdicts[key] = r.verdict
        adj = f"  adjusted (unadjusted {r.unadjusted:.3f})" if isinstance(r.adjusted_for, str) and r.adjusted_for else ""
        print(f"  {key:14} {r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] ±{r.half_width_rel:.1%} {r.verdict}{adj}")
    print("  " + settlement(a, folder))
    if hit:
        print(f"  hog during: {', '.join(hit)}")
    for line in interference_findings(a, folder):
        print("  " + line)
    return verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--round", type=int, default=2)
    ap.add_argument("--hog-cpus", type=int, default=2)
    ap.add_argument("--order", default="disturbed,quiet")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bldist-"))
    out = {}
    for which in args.order.split(","):
        folder, hit, took = campaign(work, which, args.round if which == "disturbed" else None, args.hog_cpus)
        out[which] = show(which, folder, hit, took)
    if len(out) == 2:
        a, b = out.values()
        same = [k for k in a if a[k] == b.get(k)]
        print(f"\nverdicts the same: {len(same)} of {len(a)}" + ("" if len(same) == len(a) else
              f"; differ: {', '.join(f'{k} ({a[k]} vs {b.get(k)})' for k in a if k not in same)}"))


if __name__ == "__main__":
    main()
