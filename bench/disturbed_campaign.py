"""The main job's campaign disturbed on purpose against the same campaign undisturbed: the same verdicts?

Runs examples/campaigns/quick.toml (the demo: async, semi-sync and Galera at 2 and 16 client threads, adaptive
rounds within its budget) on one demo lab, brought up once (a new lab's build moves a ratio more than a campaign's
own interval says: the campaigns compared share one), in ``--order`` (default: quiet, disturbed, disturbed, quiet):
as it is, or with a CPU hog outside benchlib (tests/hog.py, ``--hog-cpus`` processes at full duty) started before
each of the first half of round ``--round``'s runs and stopped after it. Prints, per campaign, every headline ratio
with its 95% interval and verdict, the rounds, the stopping rule, and the disturbed runs the report names with
their evidence; then the verdicts side by side, and whether the disturbed campaigns' agree with the quiet ones'.

    python bench/disturbed_campaign.py [--round 2] [--hog-cpus 2] [--order quiet,disturbed,disturbed,quiet]
                                       [--busy 0.25] [--keep FOLDER]
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


def campaign(work: Path, name: str, hog_round: int | None, hog_cpus: int, busy: float = 0.0
             ) -> tuple[Path, list[str], float]:
    quick = (ROOT / "examples/campaigns/quick.toml").read_text()
    quick = quick.replace('name = "quick"', f'name = "{name}"').replace(
        'lab = "../labs/demo.toml"', 'lab = "lab.toml"')
    (work / f"{name}.toml").write_text(quick)
    hogs: list[CpuHog] = []
    hit: list[str] = []
    seen: dict[int, int] = {}

    import random

    rng = random.Random(11)

    def before(lab, run) -> None:
        for h in hogs:
            h.stop()
        hogs.clear()
        if busy and rng.random() < 0.5:  # a light job on a random half of the runs: under the redo threshold
            hit.append(run.run_id)
            hogs.append(CpuHog(1, busy, seconds=120).start())
            return
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
    if (folder / "attempts").is_dir():  # what the campaign would have said had it kept the disturbed attempts
        for adjust, rows in without_redo(folder).items():
            print(f"  without the redo{', adjusted' if adjust else ''}: " + "; ".join(
                f"{r.cluster} t{r.threads} {r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] {r.verdict}"
                for r in rows.itertuples()))
    return verdicts


def without_redo(folder: Path) -> dict[bool, "object"]:
    """The campaign's headline ratios with each redone run's first (disturbed) attempt in place of the redo, with
    and without the adjustment for the CPU lost to others."""
    import json
    import shutil

    copy = Path(tempfile.mkdtemp(prefix="blnoredo-")) / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("report", "notebooks"))
    for attempt in sorted((copy / "attempts").glob("*.1")):
        run_id = attempt.name.rsplit(".", 1)[0]
        shutil.rmtree(copy / run_id)
        attempt.rename(copy / run_id)
        m = json.loads((copy / run_id / "manifest.json").read_text())
        m.update(status="ok", reason=None)
        (copy / run_id / "manifest.json").write_text(json.dumps(m))
    out = {adjust: headline_rows(analyze(copy, adjust=adjust).comparisons) for adjust in (False, True)}
    shutil.rmtree(copy.parent, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--round", type=int, default=2)
    ap.add_argument("--hog-cpus", type=int, default=2)
    ap.add_argument("--order", default="quiet,disturbed,disturbed,quiet",
                    help="campaigns in turn: quiet, disturbed (the hog in half of --round), busy (a light hog of duty "
                         "--busy on a random half of all runs)")
    ap.add_argument("--busy", type=float, default=0.25)
    ap.add_argument("--keep", type=Path, default=None, help="copy each campaign (without its reports) here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bldist-"))
    (work / "lab.toml").write_text((ROOT / "examples/labs/demo.toml").read_text().replace('name = "demo"',
                                                                                          'name = "disturbed"'))
    from benchlib.lab.lab import LocalLab

    lab = LocalLab.up(work / "lab.toml")
    out: dict[str, dict[str, str]] = {}
    try:
        for i, which in enumerate(args.order.split(","), start=1):
            name = f"{which}{i}"
            folder, hit, took = campaign(work, name, args.round if which == "disturbed" else None, args.hog_cpus,
                                         busy=args.busy if which == "busy" else 0.0)
            out[name] = show(name, folder, hit, took)
            if args.keep:
                import shutil

                shutil.copytree(folder, args.keep / name, ignore=shutil.ignore_patterns("report", "notebooks", ".lock"))
    finally:
        lab.close(down=True)
    keys = list(next(iter(out.values())))
    print(f"\n{'':14}" + "".join(f"{n:>24}" for n in out))
    for k in keys:
        print(f"{k:14}" + "".join(f"{v.get(k, '-'):>24}" for v in out.values()))
    quiet = {k: {v[k] for n, v in out.items() if n.startswith("quiet")} for k in keys}
    for n, v in out.items():
        if n.startswith("disturbed"):
            same = [k for k in keys if v[k] in quiet[k]]
            print(f"{n}: {len(same)} of {len(keys)} verdicts as a quiet campaign's")


if __name__ == "__main__":
    main()
