"""Static and interactive export of figures: PNG (2x: 2400x1350 for a 1200x675 slot), SVG (its font embedded)
and self-contained HTML.

Static images come from kaleido 1.x driving a Chromium (Debian's ``chromium`` package, or the one
``BROWSER_PATH`` names). One browser is started per ``Exporter`` and kept for every image (a new
browser per image costs about 3 s; a kept one about 0.2 s), on an event loop of its own with a deadline on
every call: a browser that stops answering is restarted once, then reported, never waited on forever. MathJax
is off and plotly.js comes from the installed plotly package: nothing is fetched from a CDN.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterable

import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import PlotlyRenderer, PngRenderer

from benchlib.charts.errors import ChartError
from benchlib.charts.theme import HEIGHT

FORMATS = ("png", "svg", "html")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser() -> str | None:
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).exists():
        return env
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def static_export_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("kaleido") is not None and find_browser() is not None


class _NoAnswer(ChartError):
    """The browser did not answer within its deadline (an error it answered with is a plain ``ChartError``)."""


class _Browser:
    """One kaleido browser on an event loop of its own (a thread). Every call waits with a deadline, so a Chromium
    that did not start, opened no tab or stopped answering raises instead of hanging: kaleido's own sync server waits
    forever when its browser thread dies, and its per-image timeout does not cover waiting for a free tab."""

    def __init__(self, timeout_s: float):
        import asyncio
        import threading

        self.timeout_s = timeout_s
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="benchlib-chromium", daemon=True)
        self.thread.start()
        self.kaleido = None
        try:
            self._call(self._open(), "start")
        except BaseException:
            self.close(polite=False)
            raise

    async def _open(self) -> None:
        import kaleido

        self.kaleido = kaleido.Kaleido(n=1, timeout=self.timeout_s, mathjax=False)  # close() stops what did start
        await self.kaleido.open()

    @staticmethod
    async def _settled(coro):
        """The coroutine's result or its exception, as a value: one cancelled at its deadline leaves no
        "exception was never retrieved" behind."""
        try:
            return False, await coro
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            return True, exc

    def _call(self, coro, what: str, deadline_s: float | None = None):
        import asyncio
        import concurrent.futures

        deadline_s = deadline_s or self.timeout_s + 5
        future = asyncio.run_coroutine_threadsafe(self._settled(coro), self.loop)
        try:
            failed, value = future.result(deadline_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise _NoAnswer(f"Chromium ({find_browser()}) did not {what} within {deadline_s:.0f} s",
                             hint="a loaded machine slows it; benchlib doctor checks Chromium") from None
        if failed:  # kaleido raises its own and choreographer's errors
            raise ChartError(f"Chromium ({find_browser()}) could not {what}: {type(value).__name__}: {value}",
                             hint="benchlib doctor checks Chromium; a chart with very many points can time out")
        return value

    def render(self, fig_dict: dict, opts: dict) -> bytes:
        try:
            return self._call(self.kaleido.calc_fig(fig_dict, opts=opts), f"render a {opts['format']} image")
        except _NoAnswer:
            raise
        except ChartError as exc:
            process = getattr(self.kaleido, "subprocess", None)
            if process is not None and process.poll() is not None:  # the browser died under it: no answer either
                raise _NoAnswer(exc.message, hint=exc.hint) from None
            raise

    def close(self, *, polite: bool = True) -> None:
        """Close the browser (killed if it does not answer, or at once when not ``polite``) and stop the thread."""
        k, self.kaleido = self.kaleido, None
        if k is not None and polite:
            try:
                self._call(k.close(), "close", deadline_s=10)
            except ChartError:
                pass  # killed below
        process = getattr(k, "subprocess", None)
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the browser and its helpers (its own session)
            except ProcessLookupError:
                process.kill()
            process.wait(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


_kept: list["Exporter"] = []


def keep_browser() -> None:
    """Start one exporter browser for the rest of this process (a notebook kernel) and stop it at exit."""
    if _kept:
        return
    import atexit

    ex = Exporter().__enter__()
    _kept.append(ex)
    atexit.register(ex.__exit__, None, None, None)


class Exporter:
    """``with Exporter() as ex: ex.write(fig, folder / "ratio")`` -> ratio.png, ratio.svg, ratio.html.

    A browser that stops answering is stopped and started once more for the image it missed; a second miss, or an
    error the browser answered with, raises :class:`ChartError` naming what did not happen."""

    def __init__(self, *, timeout_s: float = 60.0, scale: float = 2.0):
        self.timeout_s, self.scale = timeout_s, scale
        self.browser: _Browser | None = None
        self.seconds: list[float] = []  # per static image

    def __enter__(self) -> "Exporter":
        if _kept and _kept[0] is not self:  # a browser kept for the process already serves every image
            return self
        browser = find_browser()
        try:
            import kaleido  # noqa: F401
        except ImportError:
            raise ChartError("static export needs kaleido", hint="./scripts/bootstrap installs it") from None
        if browser is None:
            raise ChartError("static export needs Chromium and none was found",
                             hint="install Chromium or Chrome (Debian: apt-get install -y chromium; ./scripts/bootstrap "
                                  "does it as root), or set BROWSER_PATH to one; benchlib publish --no-static writes "
                                  "the interactive report without PNG and SVG")
        os.environ.setdefault("BROWSER_PATH", browser)
        self.browser = _Browser(self.timeout_s)
        return self

    def __exit__(self, *exc) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None

    def _owner(self) -> "Exporter":
        return self if self.browser is not None or not _kept else _kept[0]

    def to_bytes(self, fig: go.Figure | dict, fmt: str, *, width: int | None = None, height: int | None = None,
                 scale: float | None = None) -> bytes:
        """One static image of ``fig``, sized as plotly's ``to_image`` sizes it (the layout's, the template's, or
        plotly's default width and height)."""
        owner = self._owner()
        if owner.browser is None:
            raise ChartError("static images need the exporter started: use `with Exporter() as ex:`")
        fig_dict = fig.to_dict() if isinstance(fig, go.Figure) else fig
        layout = fig_dict.get("layout", {})
        template = layout.get("template", {}).get("layout", {})
        opts = {"format": fmt, "scale": scale or 1,
                "width": width or layout.get("width") or template.get("width") or pio.defaults.default_width,
                "height": height or layout.get("height") or template.get("height") or pio.defaults.default_height}
        try:
            return owner.browser.render(fig_dict, opts)
        except _NoAnswer:  # once more, on a fresh browser (a figure it refused would be refused again)
            owner.browser.close()
            owner.browser = None
            owner.browser = _Browser(owner.timeout_s)
            return owner.browser.render(fig_dict, opts)

    def image(self, fig: go.Figure, path: Path, fmt: str) -> Path:
        t0 = time.monotonic()
        try:
            data = self.to_bytes(fig, fmt, scale=self.scale if fmt == "png" else 1)
        except ChartError as exc:
            raise ChartError(f"static export of {path.name} failed: {exc}", hint=exc.hint) from None
        if fmt == "svg":  # the font goes with the file: the same look where Liberation Sans is not installed
            from benchlib.charts.fonts import embed

            path.write_text(embed(data.decode()))
        else:
            path.write_bytes(data)
        self.seconds.append(time.monotonic() - t0)
        return path

    @property
    def ready(self) -> bool:
        return self._owner().browser is not None

    def write(self, fig: go.Figure, stem: Path, formats: Iterable[str] = FORMATS) -> list[Path]:
        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        out = []
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            if fmt == "html":
                # plotly.js once per folder of charts (plotly writes plotly.min.js beside the page): each page
                # still opens offline, and a report's dozen charts carry one 4.8 MB copy instead of a dozen
                fig.write_html(str(path), include_plotlyjs="directory", full_html=True)
                out.append(path)
            elif fmt in ("png", "svg"):
                if not self.ready:
                    raise ChartError("static images need the exporter started: use `with Exporter() as ex:`")
                out.append(self.image(fig, path, fmt))
            else:
                raise ChartError(f"unknown export format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}")
        return out


class _PngCopy(PngRenderer):
    """plotly's PNG renderer drawn by the kept browser (with its deadline): a chart it cannot draw keeps its
    interactive output and gets a one-line note instead of a hung cell."""

    def to_mimebundle(self, fig_dict):
        import base64

        try:
            data = _kept[0].to_bytes(fig_dict, "png", width=self.width, height=self.height, scale=self.scale)
        except ChartError as exc:
            print(f"(no static copy of this chart: {exc})", file=sys.stderr)
            return {}
        return {self.mime_type: base64.b64encode(data).decode("utf8")}


class _CellSized(PlotlyRenderer):
    """plotly's own mime type without the chart's fixed width: JupyterLab sizes it to the output area and resizes it
    with the window (a 1,200 px chart in a 1,400 px window sat behind a scroll, its legend and last bar hidden).
    The figure itself is left as it is: exported PNG and SVG keep their fixed size for blogs."""

    #: a line of a caption under the plot is wrapped at this many characters: a cell in a 1,400 px JupyterLab window
    #: is about 880 px wide, 12 px text about 6.5 px a character, with room for a narrower window
    CAPTION_CHARS = 115

    def __init__(self):
        super().__init__(config={"responsive": True})

    def to_mimebundle(self, fig_dict):
        layout = {k: v for k, v in (fig_dict.get("layout") or {}).items() if k != "width"}
        template = dict(layout.get("template") or {})
        fixed = dict(template.get("layout") or {})
        # the height stays the chart's own (JupyterLab would give an autosized chart without one 360 px), the
        # template's width goes too
        height = layout.get("height") or fixed.pop("height", None) or HEIGHT
        fixed.pop("width", None)
        layout.update(autosize=True, template={**template, "layout": fixed}, height=height)
        grown = 0
        notes = []
        for note in layout.get("annotations") or []:
            text = note.get("text") or ""
            below = note.get("yref") == "paper" and note.get("y") == 0 and note.get("yanchor") == "top"
            if below and "<" not in text.replace("<br>", ""):
                lines = [w for line in text.split("<br>")
                         for w in (textwrap.wrap(line, self.CAPTION_CHARS) or [""])]
                grown = max(grown, 16 * (len(lines) - 1 - text.count("<br>")))
                note = {**note, "text": "<br>".join(lines)}
            notes.append(note)
        if grown:  # the caption's new lines take room under the plot, not from it
            margin = dict(layout.get("margin") or {})
            margin["b"] = (margin.get("b") or 80) + grown
            layout.update(annotations=notes, margin=margin, height=height + grown)
        return super().to_mimebundle({**fig_dict, "layout": layout})


def use_renderer() -> str:
    """Notebook renderer: plotly's own mime type sized to the cell (interactive in JupyterLab), plus a PNG copy at
    the export size where static export works (kaleido with a Chromium), so charts stay visible where plotly cannot
    run."""
    pio.renderers["benchlib_cell"] = _CellSized()
    renderer = "benchlib_cell"
    if static_export_available():
        keep_browser()  # one browser for every image of this process, stopped when it exits
        pio.renderers["benchlib_png"] = _PngCopy()
        renderer = "benchlib_cell+benchlib_png"
    pio.renderers.default = renderer
    return renderer
