"""benchlib doctor reports what is present and the install command for what is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchlib.doctor import Check, checks, install_command, report_lines


def test_doctor_finds_the_installed_stack():
    found = {c.name: c for c in checks()}
    for name in ("mariadbd", "sysbench", "rsync", "galera", "ip"):
        assert found[name].ok, found[name]
    assert "10.11" in found["mariadbd"].detail
    assert "1.0.20" in found["sysbench"].detail
    assert {"wan:root", "wan:tun", "wan:netns", "wan:netem"} <= set(found)


def test_install_command_names_missing_packages():
    found = [Check("sysbench", False, "not found", "sysbench"), Check("rsync", False, "not found", "rsync"),
             Check("ip", True, "/usr/sbin/ip", "iproute2")]
    assert install_command(found) == "apt-get install -y rsync sysbench"
    assert report_lines(found)[-2].endswith("apt-get install -y rsync sysbench")


@pytest.mark.long
def test_doctor_cli_exits_0_here():
    res = subprocess.run([sys.executable, "-m", "benchlib.cli", "doctor"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "mariadbd" in res.stdout
