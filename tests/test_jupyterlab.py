"""An executed notebook as a reader opens it: JupyterLab from the project's environment on a free loopback port,
the notebook in headless Chromium, its charts drawn by plotly, no output holding an error or a warning.

JupyterLab's token is generated here and passed through the environment (``JUPYTER_TOKEN``) and the browser's
DevTools pipe, never on a command line. Everything the test starts is stopped, also when it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchlib.charts.export import find_browser, static_export_available

DATA = Path(__file__).resolve().parents[1] / "data" / "campaigns"
pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.xdist_group("jupyterlab"),  # one server
              pytest.mark.skipif(not static_export_available(), reason="needs kaleido and Chromium")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """``jupyter lab`` in its own session with private config, runtime, settings and workspace folders."""

    def __init__(self, root: Path, home: Path):
        self.root, self.port, self.token = root, _free_port(), secrets.token_hex(16)
        settings = home / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        # every cell in the DOM (no windowing), so every chart is drawn without scrolling the page
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        news = home / "settings" / "@jupyterlab" / "apputils-extension"  # no "get notified about news?" toast
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        env = {**os.environ, "JUPYTER_TOKEN": self.token, "JUPYTER_CONFIG_DIR": str(home / "config"),
               "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
        self.log = open(home / "jupyterlab.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             "--port-retries=0", f"--ServerApp.root_dir={root}", "--allow-root"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def wait_ready(self, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, Path(self.log.name).read_text()[-2000:]
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/status",
                                             headers={"Authorization": f"token {self.token}"})
                with urllib.request.urlopen(req, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise AssertionError(f"JupyterLab did not answer in {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


#: what the page says once the notebook is open: its charts (plotly's SVG), images, errors and warnings. A plotly
#: output with a PNG copy opens as that image and turns interactive when the pointer enters it (jupyterlab-plotly's
#: renderer): the pointer is moved onto each one, as a reader's would be.
PAGE_STATE = """(() => {
  document.querySelectorAll('.jp-RenderedPlotly img.plot-img').forEach(
    i => { if (!i.parentElement.querySelector('.plot-container')) i.dispatchEvent(new MouseEvent('mouseenter')); });
  const outs = [...document.querySelectorAll('.jp-OutputArea-output')];
  return JSON.stringify({
    cells: document.querySelectorAll('.jp-Notebook .jp-Cell').length,
    plotly: [...document.querySelectorAll('.jp-RenderedPlotly')].filter(e => e.querySelector('.plot-container .main-svg')).length,
    charts: document.querySelectorAll('.jp-RenderedPlotly').length,
    images: document.querySelectorAll('.jp-OutputArea-output img').length,
    errors: outs.filter(o => o.matches('[data-mime-type="application/vnd.jupyter.error"]') ||
                             o.querySelector('.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]'))
                .map(o => o.innerText.slice(0, 300)),
    stderr: [...document.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]')]
                .map(o => o.innerText.slice(0, 300)),
    // a chart wider than its output area (or an output area that scrolls sideways): not whole
    cut: [...document.querySelectorAll('.jp-RenderedPlotly')].map(e => {
      const svg = e.querySelector('.plot-container .main-svg');
      const area = e.closest('.jp-OutputArea-output') || e;
      return {width: svg ? Math.round(svg.getBoundingClientRect().width) : -1, room: area.clientWidth,
              scrolls: area.scrollWidth > area.clientWidth + 1};
    }).filter(c => c.width > c.room + 1 || c.scrolls),
    widths: [...document.querySelectorAll('.jp-RenderedPlotly .plot-container .main-svg')]
                .map(s => Math.round(s.getBoundingClientRect().width)),
  });
})()"""


#: the window a reader opens JupyterLab in: charts must fit the output area there, not sit behind a scroll
WINDOW = (1400, 1000)


async def _open(url: str, charts: int, shot: Path, timeout_s: float = 90) -> dict:
    import choreographer

    async with choreographer.Browser(path=find_browser(), headless=True) as browser:
        tab = await browser.create_tab()
        await tab.send_command("Emulation.setDeviceMetricsOverride",
                               params={"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1,
                                       "mobile": False})
        await tab.send_command("Page.navigate", params={"url": url})
        deadline = time.monotonic() + timeout_s
        state: dict = {}
        while time.monotonic() < deadline:
            r = await tab.send_command("Runtime.evaluate", params={"expression": PAGE_STATE, "returnByValue": True})
            value = r.get("result", {}).get("result", {}).get("value")
            state = json.loads(value) if value else {}
            if state.get("charts", 0) >= charts and state.get("plotly", 0) >= charts:
                await asyncio.sleep(1.0)  # let the last chart finish drawing
                break
            await asyncio.sleep(0.5)
        import base64

        # the first chart and the last one brought into view, as a reader scrolls to them
        for i, which in enumerate(("0", "charts.length - 1")):
            await tab.send_command("Runtime.evaluate", params={"expression": (
                "(() => { const charts = document.querySelectorAll('.jp-RenderedPlotly');"
                f" if (charts.length) charts[{which}].scrollIntoView({{block: 'center'}}); }})()")})
            await asyncio.sleep(1.0)
            r = await tab.send_command("Page.captureScreenshot", params={"format": "png"})
            (shot if i == 0 else shot.with_name(f"{shot.stem}-last.png")).write_bytes(
                base64.b64decode(r["result"]["data"]))
        return state


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The compare notebook executed against a copy of a recorded campaign, as ``benchlib publish`` executes it."""
    from benchlib.notebooks import rerun

    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(DATA / "topologies", root / "topologies", ignore=shutil.ignore_patterns("notebooks", ".lock",
                                                                                            "report"))
    (out,) = rerun(root / "topologies", ["compare"])
    return root, out


def test_an_executed_notebook_opens_in_jupyterlab_with_its_charts_drawn_and_no_error_or_warning(executed, tmp_path):
    root, notebook = executed
    nb = json.loads(notebook.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    expected = sum("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs)
    assert expected >= 2
    # where JavaScript cannot run (a static viewer, GitHub), each chart also has its PNG
    assert all("image/png" in o["data"] for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {}))

    lab = JupyterLab(root, tmp_path / "jupyter")
    try:
        lab.wait_ready()
        shot = tmp_path / "jupyterlab.png"
        state = asyncio.run(_open(lab.url(f"lab/tree/{notebook.relative_to(root)}"), expected, shot))
    finally:
        lab.stop()
    assert state.get("cells", 0) == len(nb["cells"]), state
    assert state["charts"] == expected and state["plotly"] >= expected, state  # interactive: plotly drew its SVG
    assert not state["errors"] and not state["stderr"], state
    # at 1,400 px every chart is whole: sized to the cell (its export size is 1,200 px, beside a sidebar and margins)
    assert not state["cut"] and all(0 < w < 1200 for w in state["widths"]), state
    assert shot.stat().st_size > 20_000  # a page, not a blank
    if os.environ.get("BENCHLIB_SCREENSHOTS"):  # kept for a person to look at
        shutil.copy(shot, Path(os.environ["BENCHLIB_SCREENSHOTS"]) / "jupyterlab-1400.png")
        shutil.copy(shot.with_name(f"{shot.stem}-last.png"), Path(os.environ["BENCHLIB_SCREENSHOTS"]) /
                    "jupyterlab-1400-last.png")
    assert lab.proc.poll() is not None  # stopped, with its kernel-less server
