"""Static export's deadlines: a Chromium that never answers is reported and stopped, not waited on (kaleido's own
sync server waits forever for a browser whose thread died; that hung a notebook cell for 300 s in CI)."""

from __future__ import annotations

import time

import pytest

from benchlib.charts.errors import ChartError
from benchlib.charts.export import Exporter


def _running(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_browser_that_never_answers_is_reported_named_and_stopped(tmp_path, monkeypatch):
    fake = tmp_path / "chromium"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nexec sleep 600\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(fake))
    t0 = time.monotonic()
    with pytest.raises(ChartError, match=rf"Chromium \({fake}\) did not start within 7 s"):
        Exporter(timeout_s=2).__enter__()
    assert time.monotonic() - t0 < 20
    pid = int((tmp_path / "pid").read_text())
    assert not _running(pid), "the browser that never answered is still running"
