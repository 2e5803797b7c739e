"""Static and interactive export of figures: PNG (2x: 2400x1350 for a 1200x675 slot), SVG (its font embedded)
and self-contained HTML.

Static images come from kaleido 1.x driving a Chromium (Debian's ``chromium`` package, or the one
``BROWSER_PATH`` names). One browser is started per ``Exporter`` and kept for every image (a new
browser per image costs about 3 s; a kept one about 0.2 s), with a timeout on each image. MathJax
is off and plotly.js comes from the installed plotly package: nothing is fetched from a CDN.
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Iterable

import plotly.graph_objects as go
import plotly.io as pio

from benchlib.charts.errors import ChartError

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
    """``with Exporter() as ex: ex.write(fig, folder / "ratio")`` -> ratio.png, ratio.svg, ratio.html."""

    def __init__(self, *, timeout_s: float = 60.0, scale: float = 2.0):
        self.timeout_s, self.scale = timeout_s, scale
        self.started = False
        self.seconds: list[float] = []  # per static image

    def __enter__(self) -> "Exporter":
        if _kept and _kept[0] is not self:  # a browser kept for the process already serves every image
            return self
        browser = find_browser()
        try:
            import kaleido
        except ImportError:
            raise ChartError("static export needs kaleido", hint="./scripts/bootstrap installs it") from None
        if browser is None:
            raise ChartError("static export needs Chromium and none was found",
                             hint="apt-get install -y chromium (./scripts/bootstrap does it as root), "
                                  "or set BROWSER_PATH to a Chrome/Chromium binary")
        os.environ.setdefault("BROWSER_PATH", browser)
        kaleido.start_sync_server(n=1, timeout=self.timeout_s, mathjax=False, silence_warnings=True)
        self.started = True
        return self

    def __exit__(self, *exc) -> None:
        if self.started:
            import kaleido

            kaleido.stop_sync_server(silence_warnings=True)
            self.started = False

    def image(self, fig: go.Figure, path: Path, fmt: str) -> Path:
        t0 = time.monotonic()
        try:
            with warnings.catch_warnings():  # plotly passes kaleido options that the kept browser does not need
                warnings.filterwarnings("ignore", message="The kopts argument is ignored")
                fig.write_image(str(path), format=fmt, scale=self.scale if fmt == "png" else 1)
        except Exception as exc:  # kaleido raises its own and choreographer's errors
            raise ChartError(f"static export of {path.name} failed: {type(exc).__name__}: {exc}",
                             hint="benchlib doctor checks Chromium; a chart with very many points can time out") from None
        if fmt == "svg":  # the font goes with the file: the same look where Liberation Sans is not installed
            from benchlib.charts.fonts import embed

            path.write_text(embed(path.read_text()))
        self.seconds.append(time.monotonic() - t0)
        return path

    @property
    def ready(self) -> bool:
        return self.started or bool(_kept)

    def write(self, fig: go.Figure, stem: Path, formats: Iterable[str] = FORMATS) -> list[Path]:
        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        out = []
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            if fmt == "html":
                fig.write_html(str(path), include_plotlyjs=True, full_html=True)  # self-contained: opens offline
                out.append(path)
            elif fmt in ("png", "svg"):
                if not self.ready:
                    raise ChartError("static images need the exporter started: use `with Exporter() as ex:`")
                out.append(self.image(fig, path, fmt))
            else:
                raise ChartError(f"unknown export format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}")
        return out


def use_renderer() -> str:
    """Notebook renderer: plotly's own mime type (interactive in JupyterLab), plus a PNG copy where
    static export works (kaleido with a Chromium), so charts stay visible where plotly cannot run."""
    renderer = "plotly_mimetype"
    if static_export_available():
        keep_browser()  # one browser for every image of this process, stopped when it exits
        # plotly passes kaleido options the kept browser does not need: its warning would print under every chart
        warnings.filterwarnings("ignore", message="The kopts argument is ignored", category=UserWarning)
        renderer = "plotly_mimetype+png"
    pio.renderers.default = renderer
    return renderer
