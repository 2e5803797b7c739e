"""How a ``sysbench prepare`` is judged: its exit status, and the FATAL line of a parallel prepare's failed thread."""

import shutil
import subprocess

import pytest

from benchlib.sysbench.driver import prepare_failure

FAILS_IN_ONE_THREAD = """
function cmd_prepare()
  if sysbench.tid == 1 then error("no room left for warehouse 2") end
end
sysbench.cmdline.commands = {prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND}}
"""


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed")
def test_a_thread_of_a_parallel_prepare_that_fails_is_a_failed_prepare_though_sysbench_exits_0(tmp_path):
    script = tmp_path / "fails.lua"
    script.write_text(FAILS_IN_ONE_THREAD)
    res = subprocess.run(["sysbench", str(script), "--threads=3", "prepare"], capture_output=True, text=True)
    assert res.returncode == 0  # sysbench 1.0.20: the thread's units are missing, the exit says nothing
    why = prepare_failure(res.returncode, res.stdout + res.stderr)
    assert why is not None and why.startswith("FATAL:") and "no room left for warehouse 2" in why


def test_a_prepare_is_judged_by_its_exit_and_its_fatal_lines():
    assert prepare_failure(0, "Creating table 'sbtest1'...\nInserting 1000 records into 'sbtest1'\n") is None
    assert prepare_failure(1, "") == "exit 1"
