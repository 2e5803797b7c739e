"""Execute benchlib's parameterized notebooks with papermill, as the CLI does.

The kernel runs in its own session (jupyter_client starts it so), so a Ctrl-C at the
terminal reaches only this process. While a notebook runs, SIGINT and SIGTERM are
forwarded to the kernel once, as an interrupt: the running cell raises
KeyboardInterrupt and cleans up (stops sysbench, abandons a half-written run, takes
down a lab it brought up); the executed copy is still saved, and the caller gets
KeyboardInterrupt. A benchlib error raised inside the notebook comes back as the same
one-message error; any other failure names the executed copy to look at.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from benchlib.axis import AXES
from benchlib.errors import BenchlibError, DiskFullError, disk_full
from benchlib.store import CampaignRecord, read_campaign_record

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"


class NotebookError(BenchlibError):
    """A notebook that failed for a reason other than a benchlib error."""

    exit_code = 1


def _benchlib_errors() -> dict[str, type[BenchlibError]]:
    out: dict[str, type[BenchlibError]] = {}
    todo = [BenchlibError]
    while todo:
        cls = todo.pop()
        out[cls.__name__] = cls
        todo += cls.__subclasses__()
    return out


def _kernel_pids() -> list[int]:
    """Child processes of this one that are Jupyter kernels."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me and b"ipykernel" in Path(f"/proc/{entry}/cmdline").read_bytes():
                out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


def notebook_path(name: str) -> Path:
    path = NOTEBOOK_DIR / f"{name}.ipynb"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")))
        raise NotebookError(f"no notebook named {name!r}", hint=f"notebooks: {known}")
    return path


def output_path(folder: Path, name: str) -> Path:
    """A new file in ``folder`` for an executed copy: earlier copies are kept, never overwritten."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path, n = folder / f"{name}-{stamp}.ipynb", 1
    while path.exists():
        n += 1
        path = folder / f"{name}-{stamp}-{n}.ipynb"
    return path


def _kernel_manager():
    """The kernel manager papermill starts kernels with: a kernel reached over unix sockets in a directory of its
    own. jupyter_client otherwise picks TCP ports it believes free and lets the kernel bind them later, a race that
    two processes starting kernels at once can lose (nteract/papermill#511): the kernels then talk to each other's
    sockets, one dies and the other waits forever. A private directory has nothing to race for."""
    import shutil
    import tempfile

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.utils import run_sync
    from traitlets import default

    class PrivateSocketKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_default(self) -> str:
            if not getattr(self, "_socket_dir", None):
                self._socket_dir = tempfile.mkdtemp(prefix="benchlib-kernel-")
            return os.path.join(self._socket_dir, "k")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart)
            if not restart and getattr(self, "_socket_dir", None):
                shutil.rmtree(self._socket_dir, ignore_errors=True)

        cleanup_resources = run_sync(_async_cleanup_resources)

    return PrivateSocketKernelManager


def execute(name: str, output: Path, parameters: dict[str, Any], *, stream: bool = True) -> Path:
    """Execute notebook ``name`` with ``parameters`` into ``output`` (cell outputs also streamed to
    this process's stdout/stderr when ``stream``); returns ``output``."""
    import papermill as pm

    source = notebook_path(name)
    interrupted = {"sent": False}

    def forward(signum, frame):
        if interrupted["sent"]:
            return  # one interrupt only: a second one would cut the cell's own clean-up short
        interrupted["sent"] = True
        kernels = _kernel_pids()
        if not kernels:
            raise KeyboardInterrupt  # no kernel yet: papermill cleans up what it started
        for pid in kernels:
            os.kill(pid, signal.SIGINT)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        executed = pm.execute_notebook(str(source), str(output), parameters=parameters, cwd=str(source.parent),
                                       progress_bar=False, stdout_file=sys.stdout if stream else None,
                                       stderr_file=sys.stderr if stream else None,
                                       # no start-up chatter, and none at the end: jupyter_client interrupts an
                                       # idle kernel before shutting it down, and ipykernel logs that as "ERROR |
                                       # KeyboardInterrupt caught in kernel" on the console of a campaign that ended
                                       # normally (a cell's own errors come back through papermill)
                                       extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
                                       kernel_manager_class=_kernel_manager())
    except OSError as exc:  # the executed copy could not be written
        _drop_unreadable(output)
        if disk_full(exc):
            raise DiskFullError.of(output.parent, f"notebook {name} stopped; its executed copy was removed") from None
        raise
    except pm.PapermillExecutionError as exc:
        _drop_unreadable(output)
        if exc.ename == "KeyboardInterrupt" or interrupted["sent"]:
            raise KeyboardInterrupt from None
        cls = _benchlib_errors().get(exc.ename)
        if cls is not None:
            err = BenchlibError(exc.evalue)
            err.exit_code = cls.exit_code
            raise err from None
        raise NotebookError(f"notebook {name} failed: {exc.ename}: {exc.evalue}",
                            hint=f"the executed copy shows where: {output}") from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if interrupted["sent"]:
        raise KeyboardInterrupt
    trust(output, executed)
    return output


def trust(path: Path, nb=None) -> None:
    """Sign an executed copy (``nb``: the notebook as written there, else read back) as its user's own (``jupyter
    trust``): JupyterLab then draws its plotly charts interactive; an untrusted notebook shows only their PNG
    copies, as it does for a notebook from elsewhere."""
    import nbformat
    from nbformat.sign import NotebookNotary

    try:
        NotebookNotary().sign(nb if nb is not None else nbformat.read(path, as_version=4))
    except (OSError, ValueError) as exc:  # no writable Jupyter data folder: the PNG copies still show
        print(f"note: {path.name} is not signed as trusted ({exc}); JupyterLab shows its charts' PNG copies "
              f"until `jupyter trust {path}`", file=sys.stderr)


def _drop_unreadable(output: Path) -> None:
    """Remove an executed copy that was cut short (a full disk mid-write): a truncated notebook opens as an error."""
    import json

    try:
        json.loads(output.read_text())
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        output.unlink(missing_ok=True)


def _study_named(name: str):
    from benchlib.studies.base import study_named

    return study_named(name)


def _plan_has(record: CampaignRecord, key: str, values: int = 1) -> bool:
    return len({str(v) for v in record.plan_values(key) if v is not None}) >= values


def _driven(record) -> bool:
    """A campaign whose runs an axis breaks on purpose (a [fault]): judged by what the axis measures (its notebook),
    not by the throughput notebooks."""
    return any(a.breaks and record.campaign.get(a.name) for a in AXES.values())


#: analysis notebooks -> whether a campaign (its campaign.json) has what the notebook shows; each axis adds its own
#: (``Axis.notebook``: the probe's consistency, the fault's failover) when the campaign has the axis, before "study"
ANALYSIS_NOTEBOOKS: dict[str, Any] = {
    "compare": lambda r: len(r.plan_values("topology")) > 1 and not _driven(r),
    "stability": lambda r: not _driven(r),
    "lag": lambda r: not _driven(r),
    "flow_control": lambda r: _plan_has(r, "fc_limit", 2) and not _driven(r),
    "parallel_apply": lambda r: _plan_has(r, "parallel_threads", 2) and not _driven(r),
    "wan": lambda r: bool(r.lab.get("sites")) and not _driven(r),  # a lab of sites to cut nodes off: no WAN study
    "resources": lambda r: "host" in r.metrics and not _driven(r),
}
STUDY_NOTEBOOK = "study"


def applicable(campaign: Path) -> list[str]:
    """The analysis notebooks that have something to show for ``campaign``."""
    record = read_campaign_record(campaign)
    if record is None:
        raise NotebookError(f"{campaign} is not a campaign folder (no campaign.json)",
                            hint="a campaign folder is runs/<name>/, as benchlib run leaves it")
    core = [name for name, wants in ANALYSIS_NOTEBOOKS.items() if wants(record)]
    axes = [a.notebook for a in AXES.values() if a.notebook and record.campaign.get(a.name)]
    return [*core, *axes, *([STUDY_NOTEBOOK] if _study_named(record.name) is not None else [])]


def rerun(campaign: Path, names: list[str] | None = None, parameters: dict[str, Any] | None = None,
          *, stream: bool = False) -> list[Path]:
    """Execute the analysis notebooks (``names``, default: every applicable one) against ``campaign``;
    executed copies go to ``campaign/notebooks/`` next to the earlier ones, which are kept."""
    campaign = Path(campaign).resolve()
    todo = names or applicable(campaign)
    out = []
    for name in todo:
        out.append(execute(name, output_path(campaign / "notebooks", name),
                           {"campaign": str(campaign), **(parameters or {})}, stream=stream))
    return out
