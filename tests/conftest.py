"""Shared fixtures: real labs under a short per-session root, torn down and checked for leftovers; the markers.

Markers (``pyproject.toml``): ``lab`` needs real servers (a test using ``labs``, ``fresh_labs``, ``study_run``,
``remote`` or ``client_hosts`` gets it by itself; a test that brings a lab up otherwise says so); ``measures``
asserts a timing a busy machine would spoil; ``kernel`` executes notebooks; ``browser`` drives headless Chromium.
A test without ``lab`` cannot bring a lab up: ``./scripts/test fast`` (``-m "not lab"``) runs with no server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Callable

import pytest

from benchlib.lab import procs, wan
from benchlib.lab.layout import port_free
from benchlib.lab.spec import LabSpec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "labs"
# A short root: node socket paths must stay under 107 characters.
LAB_ROOT = Path(f"/tmp/blt{os.getpid()}")
os.environ["BENCHLIB_LAB_ROOT"] = str(LAB_ROOT)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, TUN devices)")
#: fixtures that give a test real servers: the test is marked ``lab``
LAB_FIXTURES = {"labs", "fresh_labs", "study_run", "remote", "client_hosts"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if LAB_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(autouse=True)
def _no_lab_unless_marked(request, monkeypatch):
    """A test not marked ``lab`` that brings a lab up fails at once, saying so (here and in a subprocess)."""
    if request.node.get_closest_marker("lab"):
        yield
        return
    from benchlib.lab import build

    def refuse(*args, **kwargs):
        raise AssertionError(f"{request.node.nodeid} brings a lab up: mark it @pytest.mark.lab")

    monkeypatch.setattr(build, "allocate", refuse)
    monkeypatch.setenv("BENCHLIB_LAB_ROOT", "/proc/no-lab-in-tests-not-marked-lab")
    yield


def example_spec(file: str, name: str, **changes) -> LabSpec:
    """An example spec from examples/labs/ under another lab name (tests never clash with a user's labs)."""
    data = tomllib.loads((EXAMPLES / file).read_text())
    data["name"] = name
    data.update(changes)
    return LabSpec.model_validate(data)


def kill9(lab, *names: str) -> None:
    """SIGKILL nodes and wait until they are gone (a killed process lingers for a moment)."""
    import signal

    pids = [lab.pid(n) for n in names]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert not procs.wait_gone(pids, 10)


@contextlib.contextmanager
def paused_at(at_s: float, for_s: float, pause: Callable[[], None], resume: Callable[[], None]):
    """An ``on_interval`` hook for ``execute_run``: ``pause()`` at the load's second ``at_s``, ``resume()`` ``for_s``
    seconds later; resumed again on the way out, whatever happened (resume must bear being called twice)."""
    import threading

    timer = threading.Timer(for_s, resume)

    def hook(iv) -> None:
        if iv.t_s == at_s:
            pause()
            timer.start()

    try:
        yield hook
    finally:
        timer.cancel()
        resume()


def frozen_at(pid: int, at_s: float, for_s: float):
    """``paused_at`` for a process: SIGSTOP at ``at_s``, SIGCONT ``for_s`` seconds later (a frozen node, a cut link)."""
    import signal

    return paused_at(at_s, for_s, lambda: os.kill(pid, signal.SIGSTOP), lambda: os.kill(pid, signal.SIGCONT))


def leftovers(lab) -> list[str]:
    """Everything of ``lab`` still on the machine: processes, listening ports, namespaces, TUN devices."""
    found = [f"process {p.pid}: {' '.join(p.cmdline)[:120]}" for p in procs.find(f"{lab.dir}/")]
    for node in lab.layout.nodes.values():
        if node.site:
            continue
        deadline = time.monotonic() + 3  # the kernel may take a moment to release a port after the exit
        while not port_free(node.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not port_free(node.port):
            holders = subprocess.run(["ss", "-Htlnp", f"sport = :{node.port}"], capture_output=True, text=True).stdout
            found.append(f"port {node.port} of {node.name} still in use: {holders.strip()[:200]}")
    namespaces = set(wan.list_namespaces())
    found += [f"namespace {s.netns}" for s in lab.layout.sites.values() if s.netns in namespaces]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found += [f"device {d}" for d in wan.root_devices(lab.layout) if f" {d}:" in links or f" {d}@" in links]
    if lab.dir.exists():
        found.append(f"directory {lab.dir}")
    return found


@pytest.fixture(scope="session", autouse=True)
def lab_root():
    LAB_ROOT.mkdir(exist_ok=True)
    yield LAB_ROOT
    from benchlib.lab.cleanup import cleanup

    cleanup(LAB_ROOT, all_labs=True)
    stray = procs.find(f"{LAB_ROOT}/")
    shutil.rmtree(LAB_ROOT, ignore_errors=True)
    assert not stray, f"processes left behind: {stray}"


class LabFactory:
    """Brings labs up and guarantees they are taken down (and leave nothing) even when a test fails."""

    def __init__(self):
        self.labs = []

    def up(self, spec: LabSpec, **kwargs):
        from benchlib.lab.lab import LocalLab

        lab = LocalLab.up(spec, **kwargs)
        self.labs.append(lab)
        return lab

    def teardown(self) -> list[str]:
        problems = []
        for lab in self.labs:
            lab.refresh()
            lab.down()
            problems += leftovers(lab)
        self.labs.clear()
        return problems


@pytest.fixture(scope="module")
def labs():
    factory = LabFactory()
    yield factory
    problems = factory.teardown()
    assert not problems, f"left behind after down: {problems}"


@pytest.fixture
def fresh_labs():
    factory = LabFactory()
    yield factory
    problems = factory.teardown()
    assert not problems, f"left behind after down: {problems}"
