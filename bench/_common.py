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
