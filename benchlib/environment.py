"""The machine a campaign runs on and the code it runs: recorded once per campaign (campaign.json)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["git_revision", "host_facts"]


def git_revision() -> str | None:
    """The checkout's commit benchlib runs from; None for an installed copy (no git checkout of its own)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():  # site-packages: a repository above it would not be benchlib's
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _version(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.splitlines()[0] if out else None


def host_facts() -> dict[str, Any]:
    """This machine: name, kernel, CPUs, memory, Python, and the sysbench and server versions on its PATH."""
    mem_kib = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("MemTotal:")), None)
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), None)
    return {"hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": model,
            "mem_gib": round(mem_kib / 2**20, 1) if mem_kib else None, "python": platform.python_version(),
            "sysbench": _version(["sysbench", "--version"]), "mariadbd": _version(["mariadbd", "--version"])}
