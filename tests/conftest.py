"""Shared fixtures: real labs under a short per-session root, torn down and checked for leftovers; the markers.

Markers (``pyproject.toml``): ``lab`` needs real servers (a test using ``labs``, ``fresh_labs``, ``study_run``,
``remote`` or ``client_hosts`` gets it by itself; a test that brings a lab up otherwise says so); ``measures``
asserts a timing a busy machine would spoil; ``kernel`` executes notebooks; ``browser`` drives headless Chromium;
``heavy`` is a long test on real servers, marked where it is defined (the heavy ones run one after another in phase
2's first process, which then helps with the light ones: ``LANES``); ``alone`` looks at every lab or kernel on
the machine (it runs when no other test does).
A test without ``lab`` cannot bring a lab up: ``./scripts/test fast`` (``-m "not lab"``) runs with no server.
"""

from __future__ import annotations

import contextlib
import os
import re
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
# A short root: node socket paths must stay under 107 characters. One root for a whole session, its xdist workers
# included (a worker's parent is the session's controller): labs of two workers share the root's lock, so they
# never pick the same ports or WAN network.
# ./scripts/test runs the heavy lab tests and the light ones in two processes at once: they share one root (named
# by BENCHLIB_TEST_LAB_ROOT), and the script takes down what they left once both are over.
_SESSION = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
SHARED_ROOT = os.environ.get("BENCHLIB_TEST_LAB_ROOT")
LAB_ROOT = Path(SHARED_ROOT or f"/tmp/blt{_SESSION}")
os.environ["BENCHLIB_LAB_ROOT"] = str(LAB_ROOT)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, TUN devices)")
#: fixtures that give a test real servers: the test is marked ``lab``
LAB_FIXTURES = {"labs", "fresh_labs", "study_run", "remote", "client_hosts"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if LAB_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)
    if LANES:  # the heavy tests first: the process that has them runs them before it helps with the light ones; then
        # the light modules, the longest first (``LONG_S``: about how long a module's light tests take), so that the
        # processes finish together instead of one waiting on a long module another started last. The process started
        # with BENCHLIB_TEST_HEAVY_LAST takes the light modules first and then the heavy tests the first has not reached
        last = os.environ.get("BENCHLIB_TEST_HEAVY_LAST") == "1"
        items.sort(key=lambda item: ((item.get_closest_marker("heavy") is None) != last,
                                     -getattr(item.module, "LONG_S", 0)))


#: ./scripts/test's phase 2 runs three processes side by side: one has the heavy tests (one after another) and then
#: helps with the light ones, one the light ones and then the heavy ones, the third the light ones. A light module runs
#: in whichever process reaches it first: it claims the module in this folder (a file created exclusively; modules
#: with the same ``LANE`` are claimed together); the others skip the module's tests before any of its fixtures come
#: up. A module's heavy tests are claimed alike, apart from its light ones.
LANES = os.environ.get("BENCHLIB_TEST_LANES")
_claimed: dict[str, bool] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not LANES:
        return
    # modules that must run in one process say so (LANE = "..."): the remote-lab tests, whose client hosts share a network
    module = getattr(item.module, "LANE", None) or item.nodeid.split("::")[0]
    if item.get_closest_marker("heavy"):  # a module's heavy tests in one process: they share its fixtures (a study's
        # campaign, run once for the tests that read it; two processes running it at once collide on its lab)
        module = "heavy::" + module
    if module not in _claimed:
        try:
            os.close(os.open(Path(LANES) / re.sub(r"[^\w.-]", "_", module), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            _claimed[module] = True
        except FileExistsError:
            _claimed[module] = False
    if not _claimed[module]:
        pytest.skip("run by phase 2's other process")


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


def lab_of(file: str, name: str, **changes):
    """A module-scoped fixture: the example lab ``file`` (examples/labs/) up under the lab name ``name`` for the
    module's tests, taken down (and checked for leftovers) after them. ``async_lab = lab_of("async-1p2r.toml",
    "t-async")`` at a test module's top level makes ``async_lab`` a fixture."""

    @pytest.fixture(scope="module")
    def fixture(labs):
        return labs.up(example_spec(file, name, **changes))

    return fixture


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
    return LAB_ROOT


def clean_root(root: Path) -> list:
    """Take down whatever lab is left under ``root`` and remove it; the lab processes that had to be stopped."""
    from benchlib.lab.cleanup import cleanup
    from benchlib.provision.nshosts import clean_all

    cleanup(root, all_labs=True)
    clean_all(root)  # namespace hosts a provisioning test left (their processes, mounts, namespaces)
    stray = procs.find(f"{root}/")
    shutil.rmtree(root, ignore_errors=True)
    return stray


def pytest_sessionfinish(session, exitstatus):
    """Once the whole session is over (in the controller, after every worker): take down whatever lab a test left,
    and fail the session if a lab process had to be stopped (a shared root: the script does it after both)."""
    if hasattr(session.config, "workerinput") or SHARED_ROOT or not LAB_ROOT.exists():
        return
    stray = clean_root(LAB_ROOT)
    if stray:
        session.config.get_terminal_writer().line(f"processes left behind: {stray}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class LabFactory:
    """Brings labs up and guarantees they are taken down (and leave nothing) even when a test fails."""

    LIVE: list = []  # every lab up in this process: a failed test shows their error logs (pytest_runtest_makereport)

    def __init__(self):
        self.labs = []

    def up(self, spec: LabSpec, **kwargs):
        from benchlib.lab.lab import LocalLab

        lab = LocalLab.up(spec, **kwargs)
        self.labs.append(lab)
        LabFactory.LIVE.append(lab)
        return lab

    def teardown(self) -> list[str]:
        problems = []
        for lab in self.labs:
            if lab in LabFactory.LIVE:
                LabFactory.LIVE.remove(lab)
            lab.tuning.refresh()
            lab.close(down=True)
            problems += leftovers(lab)
        self.labs.clear()
        return problems


LOG_LINES = 25  # of each server's error log, in a failed lab test's report


#: a line of a server's error log that says why it stopped (a crash's header comes before its stack trace)
CRASH = re.compile(r"got signal|Assertion|assertion|Fatal|\[ERROR\].*(InnoDB|Aborting|Shutdown)|mysqld died")


def server_logs(labs: list, lines: int = LOG_LINES) -> str:
    """The last ``lines`` of every node's error log in ``labs``, for a failed test's report (a CI run keeps nothing
    else of them); a server that crashed, from the crash's first line on (its signal or assertion, then the stack)."""
    out = []
    for lab in labs:
        for node in lab.layout.nodes.values():
            try:
                log = node.error_log.read_text(errors="replace").splitlines()
            except OSError as exc:
                log = [f"(no log: {exc})"]
            crash = max((i for i, line in enumerate(log) if CRASH.search(line)), default=None)  # the last crash
            while crash and any(CRASH.search(line) for line in log[max(0, crash - 60):crash]):
                crash -= 1  # from its first line: MySQL's stack ends in "where mysqld died", its signal above
            tail = log[-lines:]
            if crash is not None and crash < len(log) - lines:  # the crash's header and stack, then the end
                tail = log[crash:crash + 40] + (["..."] if crash + 40 < len(log) - lines else []) + \
                    log[max(crash + 40, len(log) - lines):]
            out.append(f"--- {lab.name} {node.name}: {node.error_log}\n" + "\n".join(line[:600] for line in tail))
    return "\n".join(out)


#: per test module, its first failed lab test: a later test of the module that finds its lab broken beyond a heal
#: is skipped naming it (``healthy``), instead of failing for what that test left
FIRST_FAILURE: dict[str, str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("lab"):
        FIRST_FAILURE.setdefault(item.module.__name__, f"{item.name} ({report.when})")
        if LabFactory.LIVE:
            report.sections.append(("servers' error logs", server_logs(LabFactory.LIVE)))


def healthy(lab, module: str, kill: Callable[[str], list[str]] | None = None, timeout: float = 180) -> None:
    """Before a test: ``lab`` whole (``lab check`` passes), whatever the test before it left. A lab that is not is
    healed; one still broken has the nodes ``kill(cluster)`` names killed and healed again (a cluster restarted whole);
    one broken beyond that skips the test, naming the module's first failure (the likely cause)."""
    if lab.health.check().ok:
        return
    problems: list[str] = []
    for attempt in range(2):
        try:
            if attempt and kill is not None:
                named = {p.split(":")[0].rsplit("-", 1)[0] for p in lab.health.check().problems}
                for cluster in named & set(lab.spec.clusters):
                    up = [n for n in kill(cluster) if lab.health.is_up(lab.node(n))]
                    if up:
                        kill9(lab, *up)
            lab.health.heal(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - a heal that fails: try the harder way, then skip saying why
            problems = [str(getattr(exc, "message", exc))]
            continue
        problems = lab.health.check().problems
        if not problems:
            return
    pytest.skip(f"the lab could not be healed after {FIRST_FAILURE.get(module, 'an earlier test')}: "
                f"{'; '.join(problems)[:600]}")


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
