"""The remote-lab path's own cost and precision: clock offsets, start skew of client hosts, merged throughput.

Sets up what the remote-lab tests use (root, openssh-server): a local async lab (primary + 1
replica) reached only by host:port through a namespace network, and two client hosts that are
network namespaces running their own sshd. All of them share this machine's one clock, so every
estimated offset should be 0 and its size is the estimator's error. Measures:

- clock offsets: each client host's over SSH (``SSHClients.clock_offset``) and each server's
  from ``UNIX_TIMESTAMP(SYSDATE(6))`` (lowest round trip of a window, as the sampler does);
- start skew: how far apart the two hosts' commands start after one release (each reports its
  start on its own clock; corrected with the offsets), and how long after the release they start;
- throughput: the same sysbench load from here straight to the server, from here through the
  forwarder the client hosts use (socat on a namespace address), and from the two client hosts
  (threads split, series merged), in rotated order; median TPS of each and the ratios.

    python bench/remote_clients.py [--pairs 6] [--seconds 10] [--threads 8]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import enter  # noqa: E402

ROOT = enter()

from benchlib.campaign.run import prepare_dataset  # noqa: E402
from benchlib.sysbench.options import SysbenchOptions  # noqa: E402
from benchlib.sysbench.process import run_sysbench  # noqa: E402
from benchlib.lab.lab import LocalLab  # noqa: E402
from benchlib.lab.spec import load_spec  # noqa: E402
from benchlib.sampling.clock import server_offset  # noqa: E402
from benchlib.remote.lab import RemoteLab  # noqa: E402
from benchlib.remote.spec import load_remote_spec  # noqa: E402
from tests.remote.hosts import create_account, namespace_client_hosts, remote_lab_toml  # noqa: E402

PASSWORD_ENV = "BENCHLIB_BENCH_DB_PASSWORD"


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.3f} ms, max {max(values) * 1e3:.3f} ms (n={len(values)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6, help="throughput rounds")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=15, help="clock and start-skew samples")
    args = ap.parse_args()
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists():
        sys.exit("remote_clients.py needs root and openssh-server (scripts/bootstrap installs it)")
    work = Path(tempfile.mkdtemp())
    (work / "lab.toml").write_text('name = "benchrmt"\n[defaults]\nbuffer_pool = "128M"\n'
                                   '[clusters.async]\ntopology = "async"\nreplicas = 1\n')
    lab = LocalLab.up(load_spec(work / "lab.toml"))
    try:
        with namespace_client_hosts(2) as hosts:
            generated = secrets.token_urlsafe(18)  # the bench account's password, only in this process
            create_account(lab, "async-1", "rbench", generated, "SUPER, SLAVE MONITOR, REPLICATION CLIENT, PROCESS")
            for node in lab.layout.nodes.values():
                hosts.forward(node.port)
            os.environ[PASSWORD_ENV] = generated
            (work / "remote.toml").write_text(remote_lab_toml(
                lab, hosts, name="benchremote", systems={"async": "mariadb"},
                roles={"async-1": "primary", "async-2": "replica"}, user="rbench", password_env=PASSWORD_ENV))
            rlab = RemoteLab.open(load_remote_spec(work / "remote.toml"))
            try:
                measure(args, lab, rlab, list(hosts.hosts), work)
            finally:
                rlab.close(down=True)  # SSH connections closed before the client hosts go away
    finally:
        os.environ.pop(PASSWORD_ENV, None)
        lab.close(down=True)


def measure(args, lab: LocalLab, rlab: RemoteLab, names: list[str], work: Path) -> None:
    ssh = rlab.ssh

    print("clock offsets (one real clock: the estimate's size is its error)")
    client = {h: [ssh.clock_offset(h) for _ in range(args.rounds)] for h in names}
    for h, offs in client.items():
        print(f"  client host {h} over SSH: |offset| {ms([abs(o.offset_s) for o in offs])}; "
              f"stated error {ms([o.error_s for o in offs])}")
    for node in ("async-1", "async-2"):
        with rlab.connect(node) as conn:
            offs = [server_offset(conn, samples=32, pause_s=0.01) for _ in range(args.rounds)]
        print(f"  server {node} (SYSDATE(6)): |offset| {ms([abs(o.offset_s) for o in offs])}; "
              f"stated error {ms([o.error_s for o in offs])}")

    print("start of two client hosts released together")
    skews, delays = [], []
    for _ in range(args.rounds):
        offsets = {h: ssh.clock_offset(h) for h in names}
        procs = [ssh.spawn(h, "true", lambda line: None) for h in names]
        t_go = ssh.go(procs, {})
        for p in procs:
            p.done.wait(10)
        starts = [offsets[p.host].to_local(p.start_wall) for p in procs]
        skews.append(abs(starts[0] - starts[1]))
        delays += [s - t_go for s in starts]
    print(f"  skew between the hosts' starts: {ms(skews)}")
    print(f"  start after the release: {ms(delays)}")

    opts = SysbenchOptions(threads=args.threads, time_s=args.seconds)
    prepare_dataset(rlab, "async-1", opts)
    # the same path to the server as the client hosts' (socat forwarder, namespace address), from here
    forwarded = rlab.endpoint("async-1").config()
    variants = {
        "here, direct": lambda: lab.hooks.load_driver().run("async-1", opts),
        "here, forwarded": lambda: run_sysbench(opts.argv("run", *opts.run_args()), forwarded),
        "2 hosts, merged": lambda: rlab.hooks.load_driver().run("async-1", opts),
    }
    print(f"throughput, {opts.workload}, {args.threads} threads, {args.seconds} s runs, rotated order")
    tps: dict[str, list[float]] = {v: [] for v in variants}
    names_in_order = list(variants)
    for i in range(args.pairs):
        order = names_in_order[i % 3:] + names_in_order[:i % 3]
        for label in order:
            res = variants[label]()
            value = res.result.summary.get("tps") if res.result else None
            if res.status != "ok" or value is None:
                sys.exit(f"{label} run {i + 1} did not complete: {res.status} {res.reason}")
            tps[label].append(value)
            print(f"  round {i + 1} {label:16s} {value:8.1f} tps")
    for label, values in tps.items():
        print(f"  {label:16s} median {statistics.median(values):.1f} tps")
    for base in ("here, forwarded", "here, direct"):
        ratios = [r / b for r, b in zip(tps["2 hosts, merged"], tps[base])]
        print(f"  ratio 2 hosts / {base}: median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
