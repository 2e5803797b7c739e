"""The analysis alone, as docs/install.md gives it: ``pip install -e`` of the clone into a fresh virtual environment, with
nothing of the lab on its PATH (no server, no sysbench, no apt, no Chromium), opens the recorded campaigns, executes
a notebook on one, and runs ``compare``, ``history`` and ``publish``. The lab's modules are never imported."""

from __future__ import annotations

import platform
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("install")  # one fresh environment for the module, on one worker
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "campaigns"


@pytest.fixture(scope="module")
def analysis_env(tmp_path_factory):
    """A fresh virtual environment with benchlib installed (no extras), and a PATH of that environment alone."""
    where = tmp_path_factory.mktemp("analysis")
    env_dir = where / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    pip = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
                          "--disable-pip-version-check", "-e", str(ROOT)],
                         capture_output=True, text=True, timeout=900, cwd=where)
    assert pip.returncode == 0, pip.stderr[-3000:]
    env = {"PATH": str(env_dir / "bin"), "HOME": str(where), "LANG": "C.UTF-8"}
    return env_dir, env, where


def _run(env: dict, cwd: Path, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.kernel
def test_the_analysis_installs_and_runs_with_nothing_of_the_lab(analysis_env):
    env_dir, env, where = analysis_env
    ran_on = f"{platform.platform()}, Python {platform.python_version()}"
    print(f"analysis install checked on {ran_on}")
    for tool in ("mariadbd", "mysqld", "sysbench", "apt-get", "chromium", "ssh"):  # nothing of the lab to find
        assert shutil.which(tool, path=env["PATH"]) is None, tool
    bench = str(env_dir / "bin" / "benchlib")
    work = where / "campaigns"
    for name in ("topologies", "quick", "quick-busy"):
        shutil.copytree(DATA / name, work / name, ignore=shutil.ignore_patterns("notebooks", "report", ".lock"))

    # a recorded campaign opens, and nothing of the lab comes with it
    probe = _run(env, where, str(env_dir / "bin" / "python"), "-c",
                 "import sys; from benchlib.explore import open_campaign; import benchlib.report; "
                 f"a = open_campaign({str(work / 'topologies')!r}); print(len(a.runs), 'runs'); "
                 "print(sorted(m for m in sys.modules if m.startswith(('benchlib.lab', 'benchlib.provision', "
                 "'benchlib.remote', 'benchlib.systems.base', 'pymysql', 'asyncssh', 'ansible')) "
                 "or m.startswith('benchlib.systems.') and m.endswith('.system')))")
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert " runs" in probe.stdout and probe.stdout.strip().endswith("[]"), probe.stdout

    compared = _run(env, where, bench, "compare", str(work / "quick"), str(work / "quick-busy"))
    assert compared.returncode == 0 and "B/A" in compared.stdout, compared.stderr[-2000:]
    history = _run(env, where, bench, "history", str(work), "-m", "system=galera", "-m", "threads=16")
    assert history.returncode == 0 and "oldest first" in history.stdout, history.stderr[-2000:]

    # a notebook executes on a recorded campaign, as benchlib rerun does it
    rerun = _run(env, where, bench, "rerun", str(work / "topologies"), "-n", "compare")
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert list((work / "topologies" / "notebooks").glob("compare-*.ipynb"))

    # publish: the interactive report everywhere; PNG and SVG need a Chromium (none here), and publish says so
    plain = _run(env, where, bench, "publish", str(work / "topologies"), "--out", str(where / "report"),
                 "--no-notebooks")
    assert plain.returncode == 2 and "Traceback" not in plain.stderr, plain.stderr[-2000:]
    assert "needs Chromium" in plain.stderr and "--no-static" in plain.stderr, plain.stderr
    published = _run(env, where, bench, "publish", str(work / "topologies"), "--out", str(where / "report2"),
                     "--no-notebooks", "--no-static")
    assert published.returncode == 0, published.stderr[-2000:]
    assert (where / "report2" / "report.html").is_file() and not list((where / "report2").rglob("*.png"))
