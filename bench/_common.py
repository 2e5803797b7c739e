"""What every bench script does first: run inside the project's .venv, import benchlib from this tree,
and keep its labs apart from the user's (BENCHLIB_LAB_ROOT=/tmp/blbench)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def enter() -> Path:
    venv_python = ROOT / ".venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.prefix).resolve() != venv_python.parent.parent.resolve():
        os.execv(venv_python, [str(venv_python), *sys.argv])  # `python bench/x.py` runs in the project's venv
    os.environ.setdefault("BENCHLIB_LAB_ROOT", "/tmp/blbench")
    sys.path.insert(0, str(ROOT))
    return ROOT


def demo_spec(name: str, **changes):
    """The 6-node lab the speed goals name: examples/labs/demo.toml's async cluster (1+2) and Galera (3), without its
    semi-sync pair (8 nodes), under another name."""
    import tomllib

    from benchlib.lab.spec import LabSpec

    data = tomllib.loads((ROOT / "examples/labs/demo.toml").read_text())
    data["clusters"] = {k: v for k, v in data["clusters"].items() if k in ("async", "galera")}
    return LabSpec.model_validate({**data, "name": name, **changes})


def processes_cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far."""
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) / tck
    return total
