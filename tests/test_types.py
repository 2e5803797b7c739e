"""The type checker's gate where records flow (``[tool.mypy] files`` in pyproject.toml: the plug-in registry and the
axes, the store, the manifest, the campaign runner, the sampler, the catalogue, the analysis): mypy finds no error
there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_the_record_and_analysis_packages():
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
                         text=True, timeout=280)
    assert out.returncode == 0, out.stdout + out.stderr
