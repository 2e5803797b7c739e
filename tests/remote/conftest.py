"""Fixtures of the remote-lab tests: client hosts in network namespaces (see hosts.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.remote.hosts import namespace_client_hosts


@pytest.fixture(scope="module")
def client_hosts():
    """Two SSH client hosts in their own namespaces; the private key is in BENCHLIB_TEST_SSH_KEY."""
    if os.geteuid() != 0 or not Path("/usr/sbin/sshd").exists():
        pytest.skip("needs root and openssh-server (scripts/bootstrap installs it)")
    with namespace_client_hosts(2) as hosts:
        yield hosts
